// The MPRIS object's rules without a bus: method calls and property access
// on a real playback service (scripted decoder, null output), commands
// recorded (specs/mpris.md §Methods). And an unreachable bus: one debug line.
import Foundation
import HarmoniaCore
@testable import HarmoniaMPRIS
import HarmoniaTestSupport
import Testing

/// Records every command; throws `failure` from the throwing ones when set.
final class RecordingCommands: MPRISCommands, @unchecked Sendable {
    private let lock = NSLock()
    private var recorded: [String] = []
    let failure: CoreError?

    init(failure: CoreError? = nil) { self.failure = failure }

    var calls: [String] { lock.withLock { recorded } }

    private func record(_ call: String) throws(CoreError) {
        lock.withLock { recorded.append(call) }
        if let failure { throw failure }
    }

    func play() throws(CoreError) { try record("play") }
    func pause() throws(CoreError) { try record("pause") }
    func playPause() throws(CoreError) { try record("playPause") }
    func stop() { lock.withLock { recorded.append("stop") } }
    func next() throws(CoreError) { try record("next") }
    func previous() throws(CoreError) { try record("previous") }
    func seek(to seconds: Double) throws(CoreError) { try record("seek(to: \(seconds))") }
    func seek(by delta: Double) throws(CoreError) { try record("seek(by: \(delta))") }
    func setVolume(_ level: Double) { lock.withLock { recorded.append("volume(\(level))") } }
    func setRepeatMode(_ mode: RepeatMode) { lock.withLock { recorded.append("repeat(\(mode))") } }
    func setShuffle(_ enabled: Bool) { lock.withLock { recorded.append("shuffle(\(enabled))") } }
    func open(url: String) throws(CoreError) { try record("open(\(url))") }
    func quit() { lock.withLock { recorded.append("quit") } }
}

@Suite("MPRIS object")
struct MPRISObjectTests {
    let service: DefaultPlaybackService
    let commands: RecordingCommands
    let object: MPRISObject

    /// A service paused at the start of a 2 s track "a".
    init() throws {
        service = DefaultPlaybackService(decoder: CounterDecoder(["a": .init(frames: 88_200)]), output: NullAudioOutput(pace: .manual),
                                         clock: MonotonicClockAdapter())
        try service.load(url: "a")
        commands = RecordingCommands()
        object = MPRISObject(service: service, commands: commands, identity: "Test Player",
                             metadataSource: MPRISMetadataSource(tagReader: nil, covers: nil, currentDirectory: "/"))
    }

    func call(_ interface: String?, _ member: String, _ arguments: [DBusValue] = [], path: String = "/org/mpris/MediaPlayer2") -> MPRISObject.Answer {
        object.call(path: path, interface: interface, member: member, arguments: arguments)
    }

    func errorName(_ answer: MPRISObject.Answer) -> String? {
        if case .error(let name, _) = answer { name } else { nil }
    }

    func get(_ name: String, _ interface: String = "org.mpris.MediaPlayer2.Player") -> DBusValue? {
        if case .values(let values) = call("org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)]) {
            values.first?.variantValue
        } else {
            nil
        }
    }

    func set(_ name: String, _ value: DBusValue, _ interface: String = "org.mpris.MediaPlayer2.Player") -> MPRISObject.Answer {
        call("org.freedesktop.DBus.Properties", "Set", [.string(interface), .string(name), .variant(value)])
    }

    @Test("Get and GetAll: every property of both interfaces, with its D-Bus type")
    func properties() {
        guard case .values(let all) = call("org.freedesktop.DBus.Properties", "GetAll", [.string("org.mpris.MediaPlayer2.Player")]),
              case .dictionary(let entries)? = all.first else { Issue.record("GetAll failed"); return }
        #expect(Dictionary(uniqueKeysWithValues: entries.map { ($0.key, $0.value.signature) }) == [
            "PlaybackStatus": "s", "LoopStatus": "s", "Rate": "d", "Shuffle": "b", "Metadata": "a{sv}", "Volume": "d",
            "Position": "x", "MinimumRate": "d", "MaximumRate": "d", "CanGoNext": "b", "CanGoPrevious": "b",
            "CanPlay": "b", "CanPause": "b", "CanSeek": "b", "CanControl": "b",
        ])
        #expect(get("PlaybackStatus") == .string("Paused"))
        #expect(get("Position") == .int64(0))
        #expect(get("Metadata")?["mpris:length"] == .int64(2_000_000))
        #expect(get("CanSeek") == .boolean(true) && get("CanGoNext") == .boolean(false))
        #expect(get("Identity", "org.mpris.MediaPlayer2") == .string("Test Player"))
        #expect(get("CanQuit", "org.mpris.MediaPlayer2") == .boolean(true))
        #expect(get("CanRaise", "org.mpris.MediaPlayer2") == .boolean(false))
        #expect(errorName(call("org.freedesktop.DBus.Properties", "Get", [.string("org.mpris.MediaPlayer2.Player"), .string("Nope")]))
                == "org.freedesktop.DBus.Error.UnknownProperty")
        #expect(errorName(call("org.freedesktop.DBus.Properties", "Get", [.string("x.y"), .string("Volume")]))
                == "org.freedesktop.DBus.Error.UnknownInterface")
        #expect(errorName(call("org.freedesktop.DBus.Properties", "Get", [.int32(1)])) == "org.freedesktop.DBus.Error.InvalidArgs")
    }

    @Test("Set: volume clamped to 0…1, loop and shuffle mapped, read-only and wrong types refused, Rate 0 pauses")
    func setProperties() {
        #expect(set("Volume", .double(1.5)) == .values([]))
        #expect(set("Volume", .double(-3)) == .values([]))
        #expect(set("Volume", .double(0.25)) == .values([]))
        #expect(errorName(set("Volume", .double(.nan))) == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(errorName(set("Volume", .string("loud"))) == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(set("LoopStatus", .string("Playlist")) == .values([]))
        #expect(errorName(set("LoopStatus", .string("Always"))) == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(set("Shuffle", .boolean(true)) == .values([]))
        #expect(set("Rate", .double(2)) == .values([]))  // ignored: only 1.0
        #expect(set("Rate", .double(0)) == .values([]))  // pause
        #expect(errorName(set("PlaybackStatus", .string("Playing"))) == "org.freedesktop.DBus.Error.PropertyReadOnly")
        #expect(errorName(set("Identity", .string("x"), "org.mpris.MediaPlayer2")) == "org.freedesktop.DBus.Error.PropertyReadOnly")
        #expect(errorName(set("Nope", .boolean(true))) == "org.freedesktop.DBus.Error.UnknownProperty")
        #expect(commands.calls == ["volume(1.0)", "volume(0.0)", "volume(0.25)", "repeat(all)", "shuffle(true)", "pause"])
    }

    @Test("methods: commands in order; Seek by offset; SetPosition only for the current track and inside it")
    func methods() throws {
        for method in ["Play", "Pause", "PlayPause", "Stop", "Next", "Previous"] {
            #expect(call("org.mpris.MediaPlayer2.Player", method) == .values([]))
        }
        #expect(call("org.mpris.MediaPlayer2.Player", "Seek", [.int64(-500_000)]) == .values([]))
        let trackID = try #require(get("Metadata")?["mpris:trackid"]?.objectPathValue)
        #expect(call("org.mpris.MediaPlayer2.Player", "SetPosition", [.objectPath(trackID), .int64(1_250_000)]) == .values([]))
        #expect(call("org.mpris.MediaPlayer2.Player", "SetPosition", [.objectPath(trackID), .int64(2_000_001)]) == .values([]))
        #expect(call("org.mpris.MediaPlayer2.Player", "SetPosition", [.objectPath(trackID), .int64(-1)]) == .values([]))
        #expect(call("org.mpris.MediaPlayer2.Player", "SetPosition", [.objectPath("/org/x/1"), .int64(0)]) == .values([]))
        #expect(call("org.mpris.MediaPlayer2.Player", "SetPosition", [.objectPath(trackID), .int64(2_000_000)]) == .values([]))
        #expect(call("org.mpris.MediaPlayer2.Player", "OpenUri", [.string("file:///m/a%20b.flac")]) == .values([]))
        #expect(call("org.mpris.MediaPlayer2.Player", "OpenUri", [.string("https://h/s.ogg")]) == .values([]))
        #expect(errorName(call("org.mpris.MediaPlayer2.Player", "OpenUri", [.string("ftp://h/a.flac")])) == "org.freedesktop.DBus.Error.NotSupported")
        #expect(errorName(call("org.mpris.MediaPlayer2.Player", "OpenUri", [.string("file:///bad%zz")])) == "org.freedesktop.DBus.Error.NotSupported")
        #expect(call("org.mpris.MediaPlayer2", "Raise") == .values([]))
        #expect(commands.calls == [
            "play", "pause", "playPause", "stop", "next", "previous", "seek(by: -0.5)", "seek(to: 1.25)", "seek(to: 2.0)",
            "open(/m/a b.flac)", "open(https://h/s.ogg)",
        ])
    }

    @Test("malformed calls: wrong arguments, unknown methods and objects are D-Bus errors; service errors keep their category")
    func errors() throws {
        #expect(errorName(call("org.mpris.MediaPlayer2.Player", "Play", [.int32(1)])) == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(errorName(call("org.mpris.MediaPlayer2.Player", "Seek", [.string("1")])) == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(errorName(call("org.mpris.MediaPlayer2.Player", "SetPosition", [.int64(1)])) == "org.freedesktop.DBus.Error.InvalidArgs")
        #expect(errorName(call("org.mpris.MediaPlayer2.Player", "Fly")) == "org.freedesktop.DBus.Error.UnknownMethod")
        #expect(errorName(call("com.example.Other", "Play")) == "org.freedesktop.DBus.Error.UnknownMethod")
        #expect(errorName(call(nil, "Play", path: "/elsewhere")) == "org.freedesktop.DBus.Error.UnknownObject")
        #expect(call("org.freedesktop.DBus.Introspectable", "Introspect", path: "/org") == .values([.string("<node><node name=\"mpris\"/></node>")]))
        guard case .values(let xml) = call(nil, "Introspect"), let text = xml.first?.stringValue else { Issue.record("no XML"); return }
        #expect(text.contains("<interface name=\"org.mpris.MediaPlayer2.Player\">") && text.contains("<signal name=\"Seeked\">"))
        #expect(commands.calls.isEmpty)

        let failing = MPRISObject(service: service, commands: RecordingCommands(failure: .invalidState("pause: playback failed")),
                                  identity: "T", metadataSource: MPRISMetadataSource(tagReader: nil, covers: nil))
        #expect(failing.call(path: "/org/mpris/MediaPlayer2", interface: "org.mpris.MediaPlayer2.Player", member: "Pause", arguments: [])
                == .error(name: "org.freedesktop.DBus.Error.Failed", message: "invalidState: pause: playback failed"))
    }
}

/// A logger that keeps its lines and lets a test wait for one.
final class WaitingLogger: LoggerPort, @unchecked Sendable {
    private let condition = NSCondition()
    private var lines: [String] = []

    func debug(_ message: @autoclosure () -> String) { add("debug: " + message()) }
    func info(_ message: @autoclosure () -> String) { add("info: " + message()) }
    func warn(_ message: @autoclosure () -> String) { add("warn: " + message()) }
    func error(_ message: @autoclosure () -> String) { add("error: " + message()) }

    private func add(_ line: String) {
        condition.lock()
        lines.append(line)
        condition.broadcast()
        condition.unlock()
    }

    /// Every line once one matches `matches`, waiting up to 30 s; nil if none came.
    func wait(for matches: (String) -> Bool) -> [String]? {
        let deadline = Date(timeIntervalSinceNow: 30)
        condition.lock()
        defer { condition.unlock() }
        while !lines.contains(where: matches) {
            guard condition.wait(until: deadline) else { return nil }
        }
        return lines
    }
}

@Suite("MPRIS adapter without a bus")
struct MPRISAdapterNoBusTests {
    @Test("an address nobody listens on: one debug line, no name, posts and shutdown return")
    func unreachableBus() throws {
        let service = DefaultPlaybackService(decoder: CounterDecoder(["a": .init(frames: 1000)]), output: NullAudioOutput(pace: .manual),
                                             clock: MonotonicClockAdapter())
        let logger = WaitingLogger()
        let adapter = MPRISPlayerAdapter(service: service, commands: RecordingCommands(), tagReader: nil, logger: logger)
        adapter.start(busAddress: "unix:path=/nonexistent/harmonia-test-bus")
        for _ in 0..<10_000 { adapter.post(.volumeChanged(0.5)) }  // bounded: only a flag and a pipe byte
        let lines = try #require(logger.wait { $0.hasPrefix("debug: mpris: no session bus") })
        #expect(lines.count == 1, "\(lines)")
        #expect(adapter.busName == nil)
        adapter.shutdown()
        #expect(MPRISPlayerAdapter.sessionBusAddress(environment: ["DBUS_SESSION_BUS_ADDRESS": ""]) == nil)
        #expect(MPRISPlayerAdapter.sessionBusAddress(environment: [:]) == nil)
        #expect(MPRISPlayerAdapter.sessionBusAddress(environment: ["DBUS_SESSION_BUS_ADDRESS": "unix:path=/b"]) == "unix:path=/b")
    }
}
