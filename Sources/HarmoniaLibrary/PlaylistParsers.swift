// PlaylistParsers — specs/inputs.md §M3U (PLS)
//
// M3U/M3U8 and PLS playlists: the entries they list, as written or resolved
// against the playlist's folder. (CUE sheets are HarmoniaCore's
// CueSheetFileAdapter.) One parser for every caller: `harmonia-play`'s inputs
// and the MPD server's playlists (specs/mpd-protocol.md §Stored playlists).
// Hostile text is bounded: long lines, NUL bytes and entries past a count
// are skipped, numbers are parsed checked.
import Foundation
import HarmoniaCore

/// One entry of a playlist: a path or URL, and the title (and artist) the
/// playlist gives it.
public struct PlaylistEntry: Equatable, Sendable {
    public var location: String
    public var title: String?
    public var artist: String?

    public init(location: String, title: String? = nil, artist: String? = nil) {
        self.location = location
        self.title = title
        self.artist = artist
    }
}

/// Pure parsing of playlist text (no I/O). Thread-safe (stateless).
public enum PlaylistParsers {
    /// A line longer than this many bytes is skipped (no path is this long: PATH_MAX is 4096).
    public static let maxLineBytes = 8192
    /// Entries past this count are dropped.
    public static let maxEntries = 65_536

    /// M3U or M3U8 text. Blank lines and `#` lines are skipped; `#EXTINF:secs,Artist - Title`
    /// (or `#EXTINF:secs,Title`) names the entry that follows it. Entries are
    /// resolved against the folder of `playlist` (`resolve`).
    public static func m3u(_ text: String, playlist: String) -> [PlaylistEntry] {
        m3uEntries(text).map { entry in
            var entry = entry
            entry.location = resolve(entry.location, against: playlist)
            return entry
        }
    }

    /// M3U or M3U8 entries as written (not resolved). Lines over
    /// `maxLineBytes` or holding NUL are skipped; at most `maxEntries`.
    public static func m3uEntries(_ text: String) -> [PlaylistEntry] {
        var entries: [PlaylistEntry] = []
        var pending: (title: String?, artist: String?)?
        for raw in text.split(whereSeparator: \.isNewline) where entries.count < maxEntries {
            guard raw.utf8.count <= maxLineBytes, !raw.utf8.contains(0) else { continue }
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            if line.hasPrefix("#") {
                if line.uppercased().hasPrefix("#EXTINF:") { pending = extinf(line) }
                continue
            }
            entries.append(PlaylistEntry(location: line, title: pending?.title, artist: pending?.artist))
            pending = nil
        }
        return entries
    }

    /// The display part of `#EXTINF:secs[ attributes],Artist - Title`: split at
    /// the first " - " into artist and title, or all title.
    public static func extinf(_ line: String) -> (title: String?, artist: String?) {
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

    /// PLS text: `FileN=` entries in the order of N, named by `TitleN=`,
    /// resolved against the folder of `playlist`.
    /// - Throws: `decodeError` when the text has neither `[playlist]` nor a `FileN=` entry.
    public static func pls(_ text: String, playlist: String) throws(CoreError) -> [PlaylistEntry] {
        try plsEntries(text, playlist: playlist).map { entry in
            var entry = entry
            entry.location = resolve(entry.location, against: playlist)
            return entry
        }
    }

    /// PLS entries as written. Keys are case-insensitive; `[playlist]`,
    /// `NumberOfEntries`, `LengthN`, `Version`, comments and unknown lines
    /// are ignored; N must be a number that fits an `Int` (else the line is
    /// ignored); lines over `maxLineBytes` or holding NUL are skipped; at most
    /// `maxEntries`. `playlist` names the file in the error.
    /// - Throws: `decodeError` when the text has neither `[playlist]` nor a `FileN=` entry.
    public static func plsEntries(_ text: String, playlist: String) throws(CoreError) -> [PlaylistEntry] {
        var files: [Int: String] = [:], titles: [Int: String] = [:]
        var sawHeader = false
        for raw in text.split(whereSeparator: \.isNewline) {
            guard raw.utf8.count <= maxLineBytes, !raw.utf8.contains(0) else { continue }
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.lowercased() == "[playlist]" { sawHeader = true; continue }
            guard let equals = line.firstIndex(of: "=") else { continue }
            let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            for (prefix, isFile) in [("file", true), ("title", false)] where key.hasPrefix(prefix) {
                guard let n = Int(key.dropFirst(prefix.count)), !value.isEmpty else { continue }
                if isFile {
                    if files.count < maxEntries || files[n] != nil { files[n] = value }
                } else if titles.count < maxEntries || titles[n] != nil {
                    titles[n] = value
                }
            }
        }
        guard sawHeader || !files.isEmpty else {
            throw .decodeError("\(playlist): no [playlist] section and no FileN= entries; not a PLS playlist")
        }
        return files.keys.sorted().map { n in PlaylistEntry(location: files[n]!, title: titles[n]) }
    }

    /// URLs and absolute paths as they are; a relative path against the playlist's folder.
    public static func resolve(_ entry: String, against playlist: String) -> String {
        if entry.hasPrefix("/") || scheme(of: entry) != nil { return entry }
        let folder = (playlist as NSString).deletingLastPathComponent
        return folder.isEmpty ? entry : (folder as NSString).appendingPathComponent(entry)
    }

    /// The URL scheme of `text` ("http" for "HTTP://h/x"): a letter, then
    /// letters, digits, `+`, `-`, `.`, then `://`; nil when it is not a URL.
    public static func scheme(of text: String) -> String? {
        guard let colon = text.range(of: "://"), colon.lowerBound > text.startIndex else { return nil }
        let name = text[..<colon.lowerBound]
        guard name.first!.isLetter, name.allSatisfy({ $0.isLetter || $0.isNumber || "+-.".contains($0) }),
              name.allSatisfy(\.isASCII) else { return nil }
        return name.lowercased()
    }
}
