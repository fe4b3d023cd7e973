// PlaylistParsers — specs/inputs.md §M3U (PLS)
//
// M3U/M3U8 and PLS playlists: the entries they list, resolved against the
// playlist's folder. (CUE sheets are HarmoniaCore's CueSheetFileAdapter.)
import Foundation
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// One entry of a playlist: a path or URL, and the title (and artist) the
/// playlist gives it.
struct PlaylistEntry: Equatable {
    var location: String
    var title: String?
    var artist: String?
}

enum PlaylistParsers {
    /// M3U or M3U8 text. Blank lines and `#` lines are skipped; `#EXTINF:secs,Artist - Title`
    /// (or `#EXTINF:secs,Title`) names the entry that follows it.
    static func m3u(_ text: String, playlist: String) -> [PlaylistEntry] {
        var entries: [PlaylistEntry] = []
        var pending: (title: String?, artist: String?)?
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                if line.uppercased().hasPrefix("#EXTINF:") { pending = extinf(line) }
                continue
            }
            entries.append(PlaylistEntry(location: resolve(line, against: playlist),
                                         title: pending?.title, artist: pending?.artist))
            pending = nil
        }
        return entries
    }

    /// The display part of `#EXTINF:secs[ attributes],Artist - Title`: split at
    /// the first " - " into artist and title, or all title.
    static func extinf(_ line: String) -> (title: String?, artist: String?) {
        var quoted = false
        var comma: String.Index?
        for i in line.indices {
            if line[i] == "\"" { quoted.toggle() } else if line[i] == ",", !quoted { comma = i; break }
        }
        guard let comma else { return (nil, nil) }
        let display = line[line.index(after: comma)...].trimmingCharacters(in: .whitespaces)
        func nonEmpty(_ s: some StringProtocol) -> String? {
            let t = s.trimmingCharacters(in: .whitespaces)
            return t.isEmpty ? nil : t
        }
        if let dash = display.range(of: " - ") {
            return (nonEmpty(display[dash.upperBound...]), nonEmpty(display[..<dash.lowerBound]))
        }
        return (nonEmpty(display), nil)
    }

    /// PLS text: `FileN=` entries in the order of N, named by `TitleN=`. Keys
    /// are case-insensitive; `[playlist]`, `NumberOfEntries`, `LengthN`,
    /// `Version`, comments and unknown lines are ignored.
    static func pls(_ text: String, playlist: String) throws(CoreError) -> [PlaylistEntry] {
        var files: [Int: String] = [:], titles: [Int: String] = [:]
        var sawHeader = false
        for raw in text.split(whereSeparator: \.isNewline) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.lowercased() == "[playlist]" { sawHeader = true; continue }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            for (prefix, isFile) in [("file", true), ("title", false)] where key.hasPrefix(prefix) {
                guard let n = Int(key.dropFirst(prefix.count)), !value.isEmpty else { continue }
                if isFile { files[n] = value } else { titles[n] = value }
            }
        }
        guard sawHeader || !files.isEmpty else {
            throw .decodeError("\(playlist): no [playlist] section and no FileN= entries; not a PLS playlist")
        }
        return files.keys.sorted().map { n in
            PlaylistEntry(location: resolve(files[n]!, against: playlist), title: titles[n])
        }
    }

    /// URLs and absolute paths as they are; a relative path against the playlist's folder.
    static func resolve(_ entry: String, against playlist: String) -> String {
        if entry.hasPrefix("/") || InputExpander.scheme(of: entry) != nil { return entry }
        let folder = (playlist as NSString).deletingLastPathComponent
        return folder.isEmpty ? entry : (folder as NSString).appendingPathComponent(entry)
    }
}
