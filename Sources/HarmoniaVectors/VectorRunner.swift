// The test-vector runner: reads vector files (specs/vectors/README.md) and
// runs each case against a fresh DefaultPlaybackService on the real FFmpeg
// adapters, a manual clock and a manual-paced null output.
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaFFmpeg
#if canImport(Glibc)
import Glibc
#endif

/// A vector file as read: its cases are checked one by one when run, so a
/// malformed case fails alone instead of the whole file.
public struct VectorFile {
    public let path: String
    public let name: String
    /// Fixture name → path resolved against the vector file's folder.
    public let fixtures: [String: String]
    public let cases: [JSONValue]

    /// Reads and parses `path`. Throws a message naming what is wrong.
    public static func read(path: String) throws(VectorFileError) -> VectorFile {
        let bytes: [UInt8]
        do {
            bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        } catch {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "no such file"
            throw VectorFileError(path: path, message: reason)
        }
        let root: JSONValue
        do {
            root = try JSONValue.parse(bytes)
        } catch {
            throw VectorFileError(path: path, message: "not valid JSON (\(Self.describe(error, in: bytes)))")
        }
        guard case .object = root else { throw VectorFileError(path: path, message: "the top level is not a JSON object") }
        guard let cases = root["test_cases"]?.array else {
            throw VectorFileError(path: path, message: "no \"test_cases\" array")
        }
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        let folder = (absolute as NSString).deletingLastPathComponent
        var fixtures: [String: String] = [:]
        if let declared = root["fixtures"], !declared.isNull {
            guard case .object(let members) = declared else {
                throw VectorFileError(path: path, message: "\"fixtures\" is not an object of name → path")
            }
            for (name, value) in members {
                guard let relative = value.string else {
                    throw VectorFileError(path: path, message: "fixture \"\(name)\" is not a string")
                }
                fixtures[name] = Self.resolve(relative, against: folder)
            }
        }
        let fallback = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        return VectorFile(path: path, name: root["vector_name"]?.string ?? fallback, fixtures: fixtures, cases: cases)
    }

    /// Relative paths are relative to the vector's folder; absolute paths and
    /// URLs (`scheme://`) are kept.
    static func resolve(_ path: String, against folder: String) -> String {
        if path.hasPrefix("/") || path.contains("://") { return path }
        return ((folder as NSString).appendingPathComponent(path) as NSString).standardizingPath
    }

    /// What is wrong with text that does not parse (JSONSerialization says
    /// where; JSONDecoder does not).
    private static func describe(_ error: any Error, in bytes: [UInt8]) -> String {
        do {
            _ = try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        } catch {
            if let detail = (error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String { return detail }
        }
        if case DecodingError.dataCorrupted(let context) = error { return context.debugDescription }
        return "\(error)"
    }
}

public struct VectorFileError: Error {
    public let path: String
    public let message: String
}

/// Why a case failed.
struct CaseFailure: Error {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// Runs cases. Each case gets a fresh service; time moves only when a `wait`
/// operation moves it, so every run gives the same result.
public final class VectorRunner {
    /// Device and clock time pass in steps this long during `wait`.
    static let waitStepNanoseconds: UInt64 = 5_000_000

    private let watchdog: Watchdog

    /// - Parameter operationTimeLimit: real seconds one operation or assertion
    ///   may take; past it the service is taken to hang and the run ends.
    public init(operationTimeLimit: Double) {
        watchdog = Watchdog(limit: operationTimeLimit)
    }

    /// The case's name, and nil when it passed or the reason it failed.
    public func run(_ file: VectorFile, index: Int, onHang: @escaping @Sendable (String, String) -> Void) -> (name: String, failure: String?) {
        let testCase = file.cases[index]
        let name = testCase["name"]?.string ?? "case \(index + 1)"
        do throws(CaseFailure) {
            guard case .object = testCase else { throw CaseFailure("the case is not a JSON object") }
            let run = CaseRun(fixtures: file.fixtures)
            defer {
                watchdog.arm(name, "shutting the service down", onHang)
                run.finish()
                watchdog.disarm()
            }
            let operations = try Self.list(testCase, "operations")
            for (number, operation) in operations.enumerated() {
                let label = "operation \(number + 1)"
                watchdog.arm(name, "\(label) (\(operation["action"]?.string ?? operation["type"]?.string ?? "?"))", onHang)
                defer { watchdog.disarm() }
                do throws(CaseFailure) {
                    try run.perform(operation)
                } catch {
                    throw CaseFailure("\(label): \(error.reason)")
                }
            }
            var failures: [String] = []
            for (number, assertion) in try Self.list(testCase, "assertions").enumerated() {
                let label = "assertion \(number + 1)"
                watchdog.arm(name, label, onHang)
                defer { watchdog.disarm() }
                do throws(CaseFailure) {
                    try run.check(assertion)
                } catch {
                    failures.append("\(label) (\(Self.kind(of: assertion) ?? "?")): \(error.reason)")
                }
            }
            return (name, failures.isEmpty ? nil : failures.joined(separator: "; "))
        } catch {
            return (name, error.reason)
        }
    }

    private static func list(_ testCase: JSONValue, _ key: String) throws(CaseFailure) -> [JSONValue] {
        guard let value = testCase[key] else { return [] }
        guard let items = value.array else { throw CaseFailure("\"\(key)\" is not an array") }
        return items
    }

    /// The kind an operation or assertion names in `action` or `type`.
    static func kind(of item: JSONValue) -> String? {
        item["action"]?.string ?? item["type"]?.string
    }
}

/// One case's service and what the runner remembers between operations.
final class CaseRun {
    let clock = ManualClock()
    let output = NullAudioOutput(pace: .manual)
    let tagReader = FFmpegTagReaderAdapter()
    let service: DefaultPlaybackService
    let fixtures: [String: String]
    /// The error of the most recent operation that threw.
    private var lastError: CoreError?
    /// The url of the most recent `load`, when it succeeded.
    private var loadedURL: String?

    init(fixtures: [String: String]) {
        self.fixtures = fixtures
        service = DefaultPlaybackService(decoder: FFmpegDecoderAdapter(), output: output, clock: clock,
                                         tagReader: tagReader)
    }

    /// Stops the service and lets its decode thread go idle, so releasing the
    /// service ends the thread (it never sleeps on the manual clock forever).
    func finish() {
        service.stop()
        service.waitUntilSettled()
    }

    // MARK: Operations

    func perform(_ operation: JSONValue) throws(CaseFailure) {
        guard case .object = operation else { throw CaseFailure("not a JSON object") }
        let kind = try Self.kind(operation)
        let args = Arguments(operation: operation, kind: kind)
        switch kind {
        case "load":
            let url = try substitute(try args.string("url"))
            do throws(CoreError) {
                try service.load(url: url)
                loadedURL = url
            } catch {
                lastError = error
                loadedURL = nil
            }
        case "play":
            record { () throws(CoreError) in try service.play() }
        case "pause":
            record { () throws(CoreError) in try service.pause() }
        case "stop":
            service.stop()
        case "seek":
            let seconds = try args.number("to", "seconds")
            record { () throws(CoreError) in try service.seek(to: seconds) }
        case "wait":
            let seconds: Double
            if args.has("ms") { seconds = try args.number("ms") / 1000 } else { seconds = try args.number("seconds") }
            guard seconds >= 0, seconds < 3600 else { throw CaseFailure("wait: \(seconds) s is not a duration from 0 to an hour") }
            wait(nanoseconds: UInt64((seconds * 1e9).rounded()))
            return
        case "set_volume":
            let volume = try args.number("volume")
            service.setVolume(Float(volume))
        case "set_range":
            let start = try args.number("start")
            let end = try args.optionalNumber("end")
            record { () throws(CoreError) in try service.setPlaybackRange(start: start, end: end) }
        case "clear_range":
            service.clearPlaybackRange()
        // Our extension (specs/vectors/README.md): the queue.
        case "enqueue":
            let url = try substitute(try args.string("url"))
            service.enqueue([Track(url: url)])
        case "next":
            record { () throws(CoreError) in try service.next() }
        case "previous":
            record { () throws(CoreError) in try service.previous() }
        case "jump":
            let index = try args.number("index")
            record { () throws(CoreError) in try service.jump(to: Int(index)) }
        case "set_repeat":
            let name = try args.string("mode")
            guard let mode = RepeatMode(rawValue: name) else { throw CaseFailure("set_repeat: unknown mode '\(name)'") }
            service.setRepeatMode(mode)
        default:
            throw CaseFailure("unknown operation '\(kind)'")
        }
        service.waitUntilSettled()
    }

    /// Device time and clock time pass together in small steps; after each,
    /// the decode thread does everything due by then.
    private func wait(nanoseconds: UInt64) {
        var remaining = nanoseconds
        while remaining > 0 {
            let step = min(remaining, VectorRunner.waitStepNanoseconds)
            output.advance(seconds: Double(step) / 1e9)
            clock.advance(by: step)
            service.waitUntilSettled()
            remaining -= step
        }
    }

    private func record(_ call: () throws(CoreError) -> Void) {
        do throws(CoreError) { try call() } catch { lastError = error }
    }

    /// Replaces every `{NAME}` of a declared fixture by its path; a `{NAME}`
    /// naming no fixture is an error (a typo would otherwise load a missing file).
    func substitute(_ text: String) throws(CaseFailure) -> String {
        var result = ""
        var rest = Substring(text)
        while let open = rest.firstIndex(of: "{") {
            result += rest[..<open]
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: "}") else { break }
            let name = String(rest[afterOpen..<close])
            if let path = fixtures[name] {
                result += path
            } else if !name.isEmpty, name.allSatisfy({ $0.isLetter || $0.isNumber || "_-.".contains($0) }) {
                throw CaseFailure("'{\(name)}' names no fixture of this file")
            } else {
                result += rest[open...close]
            }
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }

    private static func kind(_ item: JSONValue) throws(CaseFailure) -> String {
        let action = item["action"], type = item["type"]
        if let action, action.string == nil { throw CaseFailure("\"action\" is not a string") }
        if let type, type.string == nil { throw CaseFailure("\"type\" is not a string") }
        switch (action?.string, type?.string) {
        case (nil, nil): throw CaseFailure("names no kind (neither \"action\" nor \"type\")")
        case (let a?, let t?) where a != t: throw CaseFailure("\"action\" '\(a)' and \"type\" '\(t)' disagree")
        case (let a?, _): return a
        case (nil, let t?): return t
        }
    }

    // MARK: Assertions

    func check(_ assertion: JSONValue) throws(CaseFailure) {
        guard case .object = assertion else { throw CaseFailure("not a JSON object") }
        let kind = try Self.kind(assertion)
        let fields = Arguments(operation: assertion, kind: kind)
        switch kind {
        case "state_equals":
            let expected = try fields.string("expected")
            let state = service.state
            guard state.name == expected else { throw CaseFailure("expected state \(expected), the state is \(state)") }
        case "error_thrown":
            let category = try fields.string("category")
            guard let error = lastError else { throw CaseFailure("expected \(category), but no operation threw") }
            guard error.category.rawValue == category else {
                throw CaseFailure("expected \(category), the most recent error was \(error)")
            }
            if fields.has("message_contains") {
                let part = try substitute(try fields.string("message_contains"))
                guard error.message.contains(part) else {
                    throw CaseFailure("the \(category) message does not contain \"\(part)\": \(error.message)")
                }
            }
        case "position_near":
            let position = service.currentTime()
            try expectSeconds(position, near: try fields.number("target"), fields,
                              "position", "\(position) s (state \(service.state.name))")
        case "duration_equals":
            let duration = service.duration()
            try expectSeconds(duration, near: try fields.number("expected"), fields, "duration", "\(duration) s")
        case "sample_rate_equals":
            let expected = try fields.number("expected")
            let rate = try currentStream().sampleRate
            guard rate == expected else { throw CaseFailure("expected \(expected) Hz, the track is \(rate) Hz") }
        case "channels_equals":
            let expected = try fields.number("expected")
            let channels = try currentStream().channels
            guard Double(channels) == expected else { throw CaseFailure("expected \(expected) channels, the track has \(channels)") }
        // Our extension: which queue entry the listener hears.
        case "index_equals":
            let expected = try fields.number("expected")
            let index = service.currentIndex
            guard index.map(Double.init) == expected else {
                throw CaseFailure("expected queue index \(Int(expected)), it is \(index.map(String.init) ?? "none")")
            }
        case "tags_equal":
            guard let expected = fields.value("expected") else { throw CaseFailure("missing \"expected\"") }
            try checkTags(expected)
        default:
            throw CaseFailure("unknown assertion '\(kind)'")
        }
    }

    /// The stream facts of the service's current track.
    /// Passes when `value` is within the assertion's `tolerance_ms` (default 1 ms) of `target`.
    private func expectSeconds(_ value: Double, near target: Double, _ fields: Arguments,
                               _ what: String, _ actual: String) throws(CaseFailure) {
        let tolerance = try fields.has("tolerance_ms") ? fields.number("tolerance_ms") : 1
        guard abs(value - target) * 1000 <= tolerance + 1e-9 else {
            throw CaseFailure("expected \(what) \(target) s ± \(tolerance) ms, it is \(actual)")
        }
    }

    private func currentStream() throws(CaseFailure) -> StreamInfo {
        guard let url = service.currentTrack?.url else {
            throw CaseFailure("no track is loaded (state \(service.state.name))")
        }
        do throws(CoreError) {
            return try tagReader.readWithStreamInfo(url: url).stream
        } catch {
            throw CaseFailure("reading the stream facts of \(url): \(error)")
        }
    }

    /// Fields a `tags_equal` may name: the TagBundle's, as `info --json` writes them.
    private static let tagFields: Set<String> = [
        "title", "artist", "album", "albumArtist", "composer", "genre", "year", "trackNumber", "trackTotal",
        "discNumber", "discTotal", "bpm", "replayGainTrack", "replayGainAlbum", "replayGainTrackPeak",
        "replayGainAlbumPeak", "comment", "artworkBytes", "lyrics", "duration", "bitrate", "sampleRate",
        "channels", "fileSize", "codec", "encoding", "bitDepth", "totalFrames",
    ]

    private func checkTags(_ expected: JSONValue) throws(CaseFailure) {
        guard case .object(let wanted) = expected else { throw CaseFailure("\"expected\" is not an object") }
        guard let url = loadedURL else { throw CaseFailure("no file is loaded (the last load failed, or none ran)") }
        let read: (tags: TagBundle, stream: StreamInfo)
        do throws(CoreError) {
            read = try tagReader.readWithStreamInfo(url: url)
        } catch {
            throw CaseFailure("reading the tags of \(url): \(error)")
        }
        let actual = EventJSON.info(url: url, tags: read.tags, stream: read.stream)
        var mismatches: [String] = []
        for (key, value) in wanted {
            if key == "artworkData" { throw CaseFailure("artworkData cannot be compared; use artworkBytes (its size)") }
            guard Self.tagFields.contains(key) else { throw CaseFailure("unknown TagBundle field '\(key)'") }
            let have = actual.first { $0.0 == key }?.1 ?? .null
            if !Self.tagValue(have, equals: value) {
                mismatches.append("\(key): expected \(value.brief), read \(have.brief)")
            }
        }
        if !mismatches.isEmpty { throw CaseFailure(mismatches.joined(separator: ", ")) }
    }

    /// Strings equal after trimming; numbers by value; `lyrics` may be given
    /// as one string (a single variant's text); null means absent.
    private static func tagValue(_ have: JSONValue, equals want: JSONValue) -> Bool {
        switch (have, want) {
        case (.string(let a), .string(let b)):
            return a.trimmingCharacters(in: .whitespacesAndNewlines) == b.trimmingCharacters(in: .whitespacesAndNewlines)
        case (.array(let variants), .string(let text)):
            guard variants.count == 1, let only = variants[0]["text"] else { return false }
            return tagValue(only, equals: .string(text))
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { tagValue($0, equals: $1) }
        case (.object(let a), .object(let b)):
            return a.count == b.count && b.allSatisfy { key, value in
                tagValue(a.first { $0.0 == key }?.1 ?? .null, equals: value)
            }
        default:
            if let a = have.number, let b = want.number { return a == b }
            return have == want
        }
    }
}

/// An operation's or assertion's arguments: in its `args` object, or beside
/// its kind (both forms are in use).
struct Arguments {
    let operation: JSONValue
    let kind: String

    func value(_ name: String) -> JSONValue? {
        operation["args"]?[name] ?? operation[name]
    }

    func has(_ name: String) -> Bool { value(name) != nil }

    func string(_ name: String) throws(CaseFailure) -> String {
        guard let value = value(name) else { throw CaseFailure("\(kind): missing \"\(name)\"") }
        guard let text = value.string else { throw CaseFailure("\(kind): \"\(name)\" is not a string: \(value.brief)") }
        return text
    }

    /// The first of `names` present, as a number.
    func number(_ names: String...) throws(CaseFailure) -> Double {
        guard let name = names.first(where: has) else {
            throw CaseFailure("\(kind): missing " + names.map { "\"\($0)\"" }.joined(separator: " or "))
        }
        guard let number = value(name)!.number else { throw CaseFailure("\(kind): \"\(name)\" is not a number: \(value(name)!.brief)") }
        return number
    }

    /// nil when absent or null.
    func optionalNumber(_ name: String) throws(CaseFailure) -> Double? {
        guard let value = value(name), !value.isNull else { return nil }
        guard let number = value.number else { throw CaseFailure("\(kind): \"\(name)\" is not a number or null: \(value.brief)") }
        return number
    }
}

/// Ends the run when one operation takes too long in real time: a hung
/// service must not hang the test suite.
final class Watchdog: @unchecked Sendable {
    private let limit: Double
    private let lock = NSCondition()
    private var armed: (caseName: String, what: String, since: UInt64, onHang: @Sendable (String, String) -> Void)?
    private var started = false

    init(limit: Double) { self.limit = limit }

    func arm(_ caseName: String, _ what: String, _ onHang: @escaping @Sendable (String, String) -> Void) {
        lock.lock()
        defer { lock.unlock() }
        armed = (caseName, what, DispatchTime.now().uptimeNanoseconds, onHang)
        if !started {
            started = true
            let thread = Thread { [self] in watch() }
            thread.name = "harmonia.vectors-watchdog"
            thread.start()
        }
    }

    func disarm() {
        lock.lock()
        armed = nil
        lock.unlock()
    }

    private func watch() {
        while true {
            usleep(200_000)
            lock.lock()
            let current = armed
            lock.unlock()
            guard let current else { continue }
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - current.since) / 1e9
            if elapsed > limit {
                current.onHang(current.caseName, "\(current.what) did not return within \(limit) s (the service hangs)")
            }
        }
    }
}
