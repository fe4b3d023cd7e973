// CueSheetFileAdapter — specs/ports.md §CueSheetFileAdapter
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `CueSheetPort` for local files, with its own parser (no FFmpeg).
///
/// Reads `FILE`, `TITLE`, `PERFORMER`, `TRACK nn AUDIO` and `INDEX 01 MM:SS:FF`;
/// `REM` and every other command are ignored, as are tracks that are not
/// `AUDIO`. The text is UTF-8 (a byte-order mark is skipped), or Latin-1 when
/// it is not valid UTF-8.
public struct CueSheetFileAdapter: CueSheetPort {
    /// Creates the adapter; it holds no state.
    public init() {}

    public func parse(url: String) throws(CoreError) -> CueSheet {
        let path = try Self.localPath(url)
        let text = try TextFile.read(path, what: "a CUE sheet")
        return try Self.parse(text: text, path: Self.absolute(path))
    }

    /// Parses `text` as the sheet at `path` (which names it in errors and is
    /// the folder a relative `FILE` is resolved against).
    public static func parse(text: String, path: String) throws(CoreError) -> CueSheet {
        var file: String?
        var sheetTitle: String?, sheetPerformer: String?
        var pending: [PendingTrack] = []
        var current: PendingTrack?

        func malformed(_ line: Int, _ what: String) -> CoreError {
            .decodeError("\(path) line \(line): \(what)")
        }

        let lines = text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        for (offset, raw) in lines.enumerated() {
            let number = offset + 1
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            let command = line.prefix { !$0.isWhitespace }.uppercased()
            let rest = line.drop { !$0.isWhitespace }.trimmingCharacters(in: .whitespaces)
            switch command {
            case "FILE":
                if file != nil {
                    throw .unsupported("\(path) line \(number): a second FILE; CUE sheets over several files are not supported")
                }
                guard let name = fileArgument(rest), !name.isEmpty else { throw malformed(number, "FILE without a file name") }
                file = name
            case "TITLE", "PERFORMER":
                let value = stringArgument(rest)
                if current != nil {
                    if command == "TITLE" { current!.title = value } else { current!.performer = value }
                } else {
                    if command == "TITLE" { sheetTitle = value } else { sheetPerformer = value }
                }
            case "TRACK":
                guard file != nil else { throw malformed(number, "TRACK before any FILE") }
                let fields = rest.split(whereSeparator: \.isWhitespace)
                guard fields.count == 2, let index = Int(fields[0]), index >= 1 else {
                    throw malformed(number, "expected 'TRACK nn TYPE' with nn ≥ 1, got 'TRACK \(rest)'")
                }
                if let current { pending.append(current) }
                current = PendingTrack(index: index, audio: fields[1].uppercased() == "AUDIO", line: number)
            case "INDEX":
                guard current != nil else { throw malformed(number, "INDEX outside a TRACK") }
                let fields = rest.split(whereSeparator: \.isWhitespace)
                guard fields.count == 2, let index = Int(fields[0]), index >= 0 else {
                    throw malformed(number, "expected 'INDEX nn MM:SS:FF', got 'INDEX \(rest)'")
                }
                guard let seconds = time(fields[1]) else {
                    throw malformed(number, "'\(fields[1])' is not a CUE time MM:SS:FF (seconds below 60, frames below 75)")
                }
                if index == 1 {
                    guard current!.start == nil else { throw malformed(number, "a second INDEX 01 in TRACK \(current!.index)") }
                    current!.start = seconds
                }
            default:
                continue  // REM, CATALOG, FLAGS, ISRC, PREGAP, POSTGAP, SONGWRITER, …
            }
        }
        if let current { pending.append(current) }

        guard let file else { throw .decodeError("\(path): no FILE directive; not a CUE sheet") }
        let audio = pending.filter(\.audio)
        guard !audio.isEmpty else { throw .decodeError("\(path): no AUDIO tracks") }
        var starts: [Double] = []
        for track in audio {
            guard let start = track.start else { throw malformed(track.line, "TRACK \(track.index) has no INDEX 01") }
            if let previous = starts.last, start - 1 / CueSheet.framesPerSecond <= previous {
                throw malformed(track.line, "TRACK \(track.index) starts at \(start) s, less than two CUE frames after the track before it")
            }
            starts.append(start)
        }
        let tracks = audio.enumerated().map { i, track in
            CueTrack(index: track.index, title: track.title ?? sheetTitle, performer: track.performer ?? sheetPerformer,
                     startTime: starts[i],
                     endTime: i + 1 < starts.count ? starts[i + 1] - 1 / CueSheet.framesPerSecond : nil)
        }
        return CueSheet(fileURL: resolve(file, against: path), title: sheetTitle, performer: sheetPerformer, tracks: tracks)
    }

    private struct PendingTrack {
        let index: Int
        let audio: Bool
        let line: Int
        var title: String?
        var performer: String?
        var start: Double?
    }

    /// `MM:SS:FF` → `MM × 60 + SS + FF / 75`; MM any number of digits, SS < 60, FF < 75.
    static func time(_ text: Substring) -> Double? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { ("0"..."9").contains($0) } }),
              let mm = Int(parts[0]), let ss = Int(parts[1]), let ff = Int(parts[2]), ss < 60, ff < 75 else { return nil }
        return Double(mm) * 60.0 + Double(ss) + Double(ff) / 75.0
    }

    /// A quoted string (to its last quote) or the bare rest of the line; nil when empty.
    static func stringArgument(_ text: String) -> String? {
        var value = text
        if value.hasPrefix("\"") {
            value.removeFirst()
            if let close = value.lastIndex(of: "\"") { value = String(value[..<close]) }
        }
        return value.isEmpty ? nil : value
    }

    /// `"name with spaces.wav" WAVE` or `name.wav WAVE` (the type is dropped).
    static func fileArgument(_ text: String) -> String? {
        if text.hasPrefix("\"") {
            let inner = text.dropFirst()
            guard let close = inner.lastIndex(of: "\"") else { return String(inner) }
            return String(inner[..<close])
        }
        var fields = text.split(whereSeparator: \.isWhitespace)
        if fields.count >= 2 { fields.removeLast() }
        return fields.isEmpty ? nil : text[fields.first!.startIndex..<fields.last!.endIndex].description
    }

    /// A `FILE` name: absolute paths and URLs as they are, others against the sheet's folder.
    static func resolve(_ name: String, against sheet: String) -> String {
        if name.hasPrefix("/") || name.contains("://") { return name }
        let folder = (sheet as NSString).deletingLastPathComponent
        return folder.isEmpty ? name : (folder as NSString).appendingPathComponent(name)
    }

    static func localPath(_ url: String) throws(CoreError) -> String {
        guard !url.isEmpty else { throw .invalidArgument("empty CUE sheet path") }
        if url.hasPrefix("file://") {
            let rest = String(url.dropFirst(7))
            return rest.removingPercentEncoding ?? rest
        }
        if url.contains("://") { throw .unsupported("\(url): CUE sheets are read from local files only") }
        return url
    }

    /// `path` against the working directory, with `.` and `..` removed.
    static func absolute(_ path: String) -> String {
        URL(fileURLWithPath: path).absoluteURL.standardized.path
    }

}
