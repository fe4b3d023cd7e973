// InputExpander — specs/inputs.md §Inputs (Folders, Errors)
//
// The inputs of `play` as one queue: files and URLs as they are, folders
// (recursive, natural order, audio files only) and playlists (M3U, M3U8,
// PLS, CUE) expanded in place.
import Foundation
import HarmoniaCore
import HarmoniaLibrary
#if canImport(Glibc)
import Glibc
#endif

struct InputExpander {
    /// What an input is, decided without reading it.
    enum Kind: Equatable {
        /// A file or URL for the decoder (a missing file too: the decoder reports it).
        case plain
        /// A local folder.
        case folder
        /// `.m3u`, `.m3u8`, `.pls` or `.cue` (by extension, case-insensitive).
        case playlist
    }

    /// File extensions a folder scan plays (case-insensitive).
    static let audioExtensions: Set<String> = [
        "flac", "mp3", "m4a", "aac", "mp4", "opus", "ogg", "oga", "wav", "aif", "aiff",
        "wv", "ape", "alac", "mka", "webm",
    ]
    static let playlistExtensions: Set<String> = ["m3u", "m3u8", "pls", "cue"]
    /// Playlists listing playlists are followed this deep (a playlist that
    /// lists itself ends here).
    static let maxDepth = 8

    let cueSheets: any CueSheetPort
    /// Called for each input (or folder, or nested playlist) that yields nothing.
    let report: (String, CoreError) -> Void

    struct Expansion {
        var tracks: [Track] = []
        /// Inputs reported through `report`.
        var failures = 0
    }

    func expand(_ inputs: [String]) -> Expansion {
        var result = Expansion()
        for input in inputs { expand(input, title: nil, artist: nil, depth: 0, into: &result) }
        return result
    }

    /// Folders expanded as `expand` does; everything else (playlists too)
    /// kept as one track (`info`).
    func expandFolders(_ inputs: [String]) -> Expansion {
        var result = Expansion()
        for input in inputs {
            if Self.kind(of: input) == .folder {
                expandFolder(input, path: Self.localPath(input)!, into: &result)
            } else {
                result.tracks.append(Track(url: input))
            }
        }
        return result
    }

    /// `http` for `http://host/x`; nil for a path.
    static func scheme(of text: String) -> String? { PlaylistParsers.scheme(of: text) }

    /// The local path of a path or `file://` URL; nil for other URLs.
    static func localPath(_ input: String) -> String? {
        switch scheme(of: input) {
        case nil: return input
        case "file":
            let rest = String(input.dropFirst("file://".count))
            return rest.removingPercentEncoding ?? rest
        default: return nil
        }
    }

    static func kind(of input: String) -> Kind {
        guard let path = localPath(input) else { return .plain }
        if isFolder(path) { return .folder }
        return playlistExtensions.contains((path as NSString).pathExtension.lowercased()) ? .playlist : .plain
    }

    private static func isFolder(_ path: String) -> Bool {
        var info = stat()
        return PathBytes.withCString(path) { stat($0, &info) } == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    private func expand(_ input: String, title: String?, artist: String?, depth: Int, into result: inout Expansion) {
        let kind = Self.kind(of: input)
        if kind == .plain {
            result.tracks.append(Track(url: input, title: title, artist: artist))
            return
        }
        guard depth < Self.maxDepth else {
            fail(input, .invalidArgument("\(input): playlists nested more than \(Self.maxDepth) deep (does a playlist list itself?)"), &result)
            return
        }
        let path = Self.localPath(input)!
        if kind == .folder {
            expandFolder(input, path: path, into: &result)
            return
        }
        do throws(CoreError) {
            let entries = try playlistEntries(path)
            guard !entries.isEmpty else {
                fail(input, .notFound("\(path): the playlist lists no tracks"), &result)
                return
            }
            for entry in entries {
                if let ranged = entry.ranged {
                    result.tracks.append(ranged)
                } else {
                    expand(entry.entry.location, title: entry.entry.title, artist: entry.entry.artist,
                           depth: depth + 1, into: &result)
                }
            }
        } catch {
            fail(input, error, &result)
        }
    }

    /// The audio files under the folder `path`, or a `notFound` report when there are none.
    private func expandFolder(_ input: String, path: String, into result: inout Expansion) {
        var files: [String] = []
        var visited = Set<[UInt8]>()
        guard scan(path, into: &files, visited: &visited, result: &result) else { return }
        if files.isEmpty {
            let kinds = Self.audioExtensions.sorted().joined(separator: " ")
            fail(input, .notFound("\(path): no audio files in this folder or below (\(kinds))"), &result)
        }
        result.tracks += files.map { Track(url: $0) }
    }

    /// A playlist's entries; a CUE sheet's are ranged tracks of its file.
    private func playlistEntries(_ path: String) throws(CoreError) -> [(entry: PlaylistEntry, ranged: Track?)] {
        switch (path as NSString).pathExtension.lowercased() {
        case "cue":
            let sheet = try cueSheets.parse(url: path)
            return sheet.queueTracks().map { (PlaylistEntry(location: $0.url), $0) }
        case "pls":
            return try PlaylistParsers.pls(TextFile.read(path, what: "a playlist"), playlist: path).map { ($0, nil) }
        case let ext:
            let text = try TextFile.read(path, what: ext == "m3u8" ? "an .m3u8 playlist" : "a playlist", utf8Only: ext == "m3u8")
            return PlaylistParsers.m3u(text, playlist: path).map { ($0, nil) }
        }
    }

    /// Adds the audio files under `folder` to `files` in natural order, depth
    /// first; hidden entries (a leading dot) are skipped, and a folder reached
    /// twice through links is read once. Returns false when `folder` itself
    /// cannot be read (reported); an unreadable subfolder is reported and skipped.
    @discardableResult
    private func scan(_ folder: String, into files: inout [String], visited: inout Set<[UInt8]>,
                      result: inout Expansion) -> Bool {
        let real = PathBytes.withCString(folder) { path -> [UInt8] in
            guard let resolved = realpath(path, nil) else { return PathBytes.bytes(folder) }
            defer { free(resolved) }
            return PathBytes.bytes(PathBytes.string(cString: resolved))
        }
        guard visited.insert(real).inserted else { return true }
        guard PathBytes.withCString(folder, { access($0, R_OK | X_OK) }) == 0 else {
            let reason = String(cString: strerror(errno))
            fail(folder, .ioError("\(folder): the folder cannot be read (\(reason)); check its permissions"), &result)
            return false
        }
        guard let names = Self.entries(of: folder) else {
            fail(folder, .ioError("\(folder): the folder cannot be read"), &result)
            return false
        }
        for name in NaturalOrder.sorted(names.filter { !$0.hasPrefix(".") }) {
            let path = (folder as NSString).appendingPathComponent(name)
            if Self.isFolder(path) {
                scan(path, into: &files, visited: &visited, result: &result)
            } else if Self.audioExtensions.contains((name as NSString).pathExtension.lowercased()) {
                files.append(path)
            }
        }
        return true
    }

    /// The names in `folder` (without `.` and `..`) in PathBytes' lossless
    /// form, so a name that is not UTF-8 is kept; nil when it cannot be opened.
    private static func entries(of folder: String) -> [String]? {
        guard let directory = PathBytes.withCString(folder, { opendir($0) }) else { return nil }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 256) { PathBytes.string(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    private func fail(_ input: String, _ error: CoreError, _ result: inout Expansion) {
        result.failures += 1
        report(input, error)
    }
}
