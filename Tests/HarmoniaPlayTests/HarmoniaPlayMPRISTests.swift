// harmonia-play as a desktop sees it: an MPRIS 2 player on a private
// session bus (specs/mpris.md), driven by playerctl and gdbus, its signals
// read by dbus-monitor. Each test starts its own dbus-daemon; every wait is
// for a line, a name or an exit, with a deadline — never a sleep.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play on the session bus (MPRIS)")
struct HarmoniaPlayMPRISTests {
    static let flac = Fixtures.named("flac_s16_stereo_44k.flac").path  // 2 s, 44.1 kHz, tagged, cover
    static let mp3 = Fixtures.named("mp3_cbr_stereo_44k.mp3").path
    static let wav = Fixtures.named("wav_s16_stereo_44k.wav").path     // 1 s, untagged

    /// A copy of the FLAC fixture with non-ASCII tags and a non-ASCII name with a space.
    static func utf8Copy(in folder: String) throws -> String {
        let path = folder + "/mpris tëst.flac"
        let result = try ProcessRunner.run("/usr/bin/env", [
            "ffmpeg", "-v", "error", "-y", "-i", flac, "-map", "0", "-c", "copy",
            "-metadata", "title=Ünïcödé — 東京 🎵", "-metadata", "artist=Zoë Ångström", "-metadata", "album=Ελληνικά",
            path,
        ])
        try #require(result.status == 0, "ffmpeg: \(result.stderrText)")
        return path
    }

    /// The D-Bus property value as gdbus prints it inside `(<…>,)`.
    static func unwrap(_ printed: String) -> String {
        guard printed.hasPrefix("(<"), printed.hasSuffix(">,)") else { return printed }
        return String(printed.dropFirst(2).dropLast(3))
    }

    /// Waits until the player has started playing. The name may come before
    /// the start's play (a jump: Paused, then Playing); the monitor, started
    /// before the player, has every PlaybackStatus signal.
    static func waitUntilPlaying(_ bus: PrivateSessionBus, _ monitor: SignalMonitor,
                                 sourceLocation: SourceLocation = #_sourceLocation) throws {
        if try bus.playerctl("status") != "Playing" {
            #expect(monitor.next("PropertiesChanged") { $0.contains("string \"Playing\"") } != nil, sourceLocation: sourceLocation)
        }
        #expect(try bus.playerctl("status") == "Playing", sourceLocation: sourceLocation)
    }

    @Test("playerctl: status, UTF-8 metadata, pause freezes the position, exact SetPosition, volume, loop, shuffle, stop and play, Quit")
    func playerctlSession() throws {
        let bus = try PrivateSessionBus()
        let file = try Self.utf8Copy(in: bus.folder)
        let monitor = try SignalMonitor(bus)
        // Repeat one: the track never runs out, however slow the machine.
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--repeat", "one", file], environment: bus.environment)
        defer { PrivateSessionBus.kill(player) }
        try #require(try bus.waitForName(), "the player never appeared on the bus; stderr: \(player.stderr.all)")

        #expect(try bus.playerctl("-l") == "harmonia_play")
        try Self.waitUntilPlaying(bus, monitor)
        #expect(try bus.playerctl("metadata", "--format", "{{xesam:title}}|{{xesam:artist}}|{{xesam:album}}")
                == "Ünïcödé — 東京 🎵|Zoë Ångström|Ελληνικά")
        #expect(try bus.playerctl("metadata", "--format",
                                   "{{mpris:length}}|{{xesam:albumArtist}}|{{xesam:trackNumber}}|{{xesam:discNumber}}|{{xesam:genre}}|{{xesam:composer}}")
                == "2000000|Harmonia Album Artist|3|1|Electronic|Harmonia Composer")
        // The path as a file URI, percent-encoded (the folder's name is plain ASCII).
        #expect(try bus.playerctl("metadata", "xesam:url") == "file://" + bus.folder + "/mpris%20t%C3%ABst.flac")
        let trackID = try bus.playerctl("metadata", "mpris:trackid")
        #expect(trackID.hasPrefix("'/org/harmonia/HarmoniaPlay/Track/"))
        // The cover, written once to the cache folder.
        let art = try bus.playerctl("metadata", "mpris:artUrl")
        #expect(art.hasPrefix("file://" + bus.folder + "/cache/harmonia-play/covers/") && art.hasSuffix(".png"))
        let cover = try Data(contentsOf: URL(fileURLWithPath: String(art.dropFirst(7))))
        #expect(cover.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        #expect(Self.unwrap(try bus.property("Identity", interface: "org.mpris.MediaPlayer2")) == "'Harmonia Play'")
        #expect(Self.unwrap(try bus.property("SupportedUriSchemes", interface: "org.mpris.MediaPlayer2")) == "['file', 'http', 'https']")
        #expect(Self.unwrap(try bus.property("Rate")) == "1.0")

        // A change whose signal comes after any of the start's (Paused, then Playing):
        // the PlaybackStatus signals read from here on are this test's.
        try bus.playerctl("volume", "0.7")
        #expect(monitor.next("PropertiesChanged") { $0.contains("string \"Volume\"") && $0.contains("double 0.7") } != nil)

        // Pause: the status is signalled; the heard position stays where it stopped.
        try bus.playerctl("pause")
        #expect(try bus.playerctl("status") == "Paused")
        #expect(monitor.next("PropertiesChanged") { $0.contains("string \"PlaybackStatus\"") && $0.contains("string \"Paused\"") } != nil)
        let frozen = Self.unwrap(try bus.property("Position"))
        #expect(frozen.hasPrefix("int64 "))
        _ = try bus.playerctl("metadata")
        _ = try bus.playerctl("status")
        #expect(Self.unwrap(try bus.property("Position")) == frozen)

        // `playerctl position 1.25` is SetPosition(trackid, 1250000): exact, and Seeked says so.
        try bus.playerctl("position", "1.25")
        #expect(monitor.next("Seeked") { $0.contains("int64 1250000") } != nil)
        #expect(Self.unwrap(try bus.property("Position")) == "int64 1250000")
        // A relative seek (Seek) from there.
        try bus.playerctl("position", "0.5-")
        #expect(monitor.next("Seeked") { $0.contains("int64 750000") } != nil)
        #expect(try bus.playerctl("position") == "0.750000")
        // A SetPosition naming another track id is ignored (specification).
        _ = try bus.call("org.mpris.MediaPlayer2.Player.SetPosition", ["/org/harmonia/HarmoniaPlay/Track/0", "100000"])
        #expect(Self.unwrap(try bus.property("Position")) == "int64 750000")

        try bus.playerctl("volume", "0.5")
        #expect(try bus.playerctl("volume") == "0.500000")
        #expect(monitor.next("PropertiesChanged") { $0.contains("string \"Volume\"") && $0.contains("double 0.5") } != nil)

        #expect(try bus.playerctl("loop") == "Track")  // --repeat one
        try bus.playerctl("loop", "Playlist")
        #expect(try bus.playerctl("loop") == "Playlist")
        #expect(monitor.next("PropertiesChanged") { $0.contains("string \"LoopStatus\"") && $0.contains("string \"Playlist\"") } != nil)
        try bus.playerctl("shuffle", "On")
        #expect(try bus.playerctl("shuffle") == "On")
        #expect(monitor.next("PropertiesChanged") { $0.contains("string \"Shuffle\"") && $0.contains("boolean true") } != nil)
        try bus.playerctl("loop", "Track")
        try bus.playerctl("shuffle", "Off")
        #expect(Self.unwrap(try bus.call("org.freedesktop.DBus.Properties.Set",
                                          ["org.mpris.MediaPlayer2.Player", "LoopStatus", "<'Sometimes'>"])).contains("InvalidArgs"))

        // Play-pause resumes; Stop stops and the player stays; Play starts the track again.
        try bus.playerctl("play-pause")
        #expect(try bus.playerctl("status") == "Playing")
        #expect(monitor.next("PropertiesChanged") { $0.contains("string \"Playing\"") } != nil)
        try bus.playerctl("stop")
        #expect(try bus.playerctl("status") == "Stopped")
        #expect(monitor.next("PropertiesChanged") { $0.contains("string \"Stopped\"") } != nil)
        try bus.playerctl("play")
        #expect(try bus.playerctl("status") == "Playing")
        #expect(try bus.playerctl("metadata", "mpris:trackid") == trackID)  // the same queue entry

        // Quit ends the player as the control protocol's quit: exit 0, nothing on stderr.
        #expect(try bus.call("org.mpris.MediaPlayer2.Quit") == "()")
        #expect(PrivateSessionBus.exitStatus(player) == 0)
        #expect(player.stderr.all.isEmpty, "\(player.stderr.all)")
    }

    @Test("next and previous change the track (new track id, new metadata) and play it, also from paused; OpenUri plays a file")
    func nextPreviousOpen() throws {
        let bus = try PrivateSessionBus()
        let monitor = try SignalMonitor(bus)
        let queue = [Self.flac, Self.mp3, Self.wav]
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--repeat", "all"] + queue, environment: bus.environment)
        defer { PrivateSessionBus.kill(player) }
        try #require(try bus.waitForName(), "stderr: \(player.stderr.all)")
        try Self.waitUntilPlaying(bus, monitor)
        // Paused, the current entry cannot move by itself.
        try bus.playerctl("pause")
        func current() throws -> (url: String, id: String) {
            (try bus.playerctl("metadata", "xesam:url"), try bus.playerctl("metadata", "mpris:trackid"))
        }
        let uris = queue.map { "file://" + $0 }
        let start = try current()
        let index = try #require(uris.firstIndex(of: start.url), "\(start.url)")

        // From paused, Next plays the next entry, as every frontend's skip
        // does (specs/application.md §Next and previous); paused again at
        // once, it stays current (each entry lasts 1 s or more).
        try bus.playerctl("next")
        #expect(try bus.playerctl("status") == "Playing")
        try bus.playerctl("pause")
        let next = try current()
        #expect(next.url == uris[(index + 1) % 3])
        #expect(next.id != start.id)
        #expect(monitor.next("PropertiesChanged") { $0.contains("string \"Metadata\"") && $0.contains(next.id.trimmingCharacters(in: .init(charactersIn: "'"))) } != nil)

        try bus.playerctl("previous")
        #expect(try bus.playerctl("status") == "Playing")
        try bus.playerctl("pause")
        let back = try current()
        #expect(back.url == start.url && back.id == start.id)

        try bus.playerctl("open", "file://" + Self.wav)
        #expect(try bus.playerctl("status") == "Playing")
        let opened = try current()
        #expect(opened.url == "file://" + Self.wav)
        #expect(opened.id != start.id && opened.id != next.id)  // a new queue entry, a new id
        #expect(try bus.playerctl("metadata", "--format", "{{mpris:length}}") == "1000000")
        #expect(Self.unwrap(try bus.call("org.mpris.MediaPlayer2.Player.OpenUri", ["ftp://host/a.flac"])).contains("NotSupported"))

        #expect(try bus.call("org.mpris.MediaPlayer2.Quit") == "()")
        #expect(PrivateSessionBus.exitStatus(player) == 0)
    }

    @Test("SetPosition is exact to the frame: the file output's next frame is the target frame of a straight decode; --control seeks are Seeked too")
    func setPositionExactInFileOutput() throws {
        let bus = try PrivateSessionBus()
        let monitor = try SignalMonitor(bus)
        let out = bus.folder + "/out.f32"
        // The file output plays the whole track at once; --control keeps the player at the end.
        let player = try LineProcess.harmoniaPlay(["--output", "file:" + out, "--control", "stdin", Self.flac], environment: bus.environment)
        defer { PrivateSessionBus.kill(player) }
        func event(_ state: String) -> Bool {
            player.stdout.take(timeout: 30) { line in
                guard let o = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                      o["event"] as? String == "state_changed" else { return false }
                return (o["data"] as? [String: Any])?["state"] as? String == state
            } != nil
        }
        try #require(event("stopped"), "\(player.stdout.all)")
        try #require(try bus.waitForName(), "stderr: \(player.stderr.all)")
        // Back to the track, paused at 0 (a control command), then seeks from both sides.
        player.write("{\"message_id\":1,\"command\":\"jump\",\"args\":{\"index\":0}}\n")
        try #require(event("paused"))
        player.write("{\"message_id\":2,\"command\":\"seek\",\"args\":{\"position\":0.5}}\n")
        #expect(monitor.next("Seeked") { $0.contains("int64 500000") } != nil)
        let trackID = try bus.playerctl("metadata", "mpris:trackid").trimmingCharacters(in: .init(charactersIn: "'"))
        let target: Int64 = 55_125  // 1.25 s at 44.1 kHz
        #expect(try bus.call("org.mpris.MediaPlayer2.Player.SetPosition", [trackID, "1250000"]) == "()")
        #expect(monitor.next("Seeked") { $0.contains("int64 1250000") } != nil)
        try bus.playerctl("play")
        try #require(event("stopped"))
        player.write("{\"message_id\":3,\"command\":\"quit\"}\n")
        #expect(PrivateSessionBus.exitStatus(player) == 0)

        let samples = try Data(contentsOf: URL(fileURLWithPath: out)).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let reference = try Fixtures.cliReference(Self.flac)  // 88200 stereo frames
        let first = reference.count  // the first play, whole
        try #require(samples.count == first + reference.count - Int(target) * 2, "\(samples.count) samples")
        func maxDifference(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>) -> Float {
            zip(a, b).reduce(0) { max($0, abs($1.0 - $1.1)) }
        }
        #expect(maxDifference(samples[..<first], reference[...]) <= 1e-6)
        // The first frame after the seek is frame 55125 of the straight decode, and so on to the end.
        #expect(maxDifference(samples[first...], reference[(Int(target) * 2)...]) <= 1e-6)
        #expect(samples[first] == reference[Int(target) * 2] && samples[first] != reference[Int(target) * 2 - 2])
    }

    @Test("`playerctl position 30` in a 40 s file: the heard position is 30 s exactly; `position 45` is outside and ignored")
    func position30() throws {
        let bus = try PrivateSessionBus()
        let file = bus.folder + "/sine40.flac"
        let made = try ProcessRunner.run("/usr/bin/env", ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=40",
                                                          "-ar", "48000", "-c:a", "flac", file])
        try #require(made.status == 0, "ffmpeg: \(made.stderrText)")
        let monitor = try SignalMonitor(bus)
        let player = try LineProcess.harmoniaPlay(["--output", "null", file], environment: bus.environment)
        defer { PrivateSessionBus.kill(player) }
        try #require(try bus.waitForName(), "stderr: \(player.stderr.all)")
        try Self.waitUntilPlaying(bus, monitor)
        try bus.playerctl("pause")
        #expect(try bus.playerctl("metadata", "mpris:length") == "40000000")
        try bus.playerctl("position", "30")
        #expect(monitor.next("Seeked") { $0.contains("int64 30000000") } != nil)
        #expect(Self.unwrap(try bus.property("Position")) == "int64 30000000")
        try bus.playerctl("position", "45")  // past the end: SetPosition is ignored (MPRIS)
        #expect(Self.unwrap(try bus.property("Position")) == "int64 30000000")
        try bus.playerctl("play-pause")
        #expect(try bus.playerctl("status") == "Playing")
        #expect(try bus.call("org.mpris.MediaPlayer2.Quit") == "()")
        #expect(PrivateSessionBus.exitStatus(player) == 0)
    }

    @Test("two players: the second is org.mpris.MediaPlayer2.harmonia_play.instance<pid>; --no-mpris stays off the bus")
    func instanceNames() throws {
        let bus = try PrivateSessionBus()
        let first = try LineProcess.harmoniaPlay(["--output", "null", "--repeat", "one", Self.wav], environment: bus.environment)
        defer { PrivateSessionBus.kill(first) }
        try #require(try bus.waitForName())
        let second = try LineProcess.harmoniaPlay(["--output", "null", "--repeat", "one", Self.wav], environment: bus.environment)
        defer { PrivateSessionBus.kill(second) }
        let instance = PrivateSessionBus.mprisName + ".instance\(second.process.processIdentifier)"
        try #require(try bus.waitForName(instance))
        #expect(Self.unwrap(try bus.property("Identity", interface: "org.mpris.MediaPlayer2", busName: instance)) == "'Harmonia Play'")
        // Off: the player answers its control channel, and the bus has no third player.
        let off = try LineProcess.harmoniaPlay(["--no-mpris", "--output", "null", "--control", "stdin", Self.wav], environment: bus.environment)
        defer { PrivateSessionBus.kill(off) }
        off.write("{\"message_id\":1,\"command\":\"status\"}\n")
        #expect(off.stdout.take(timeout: 30) { $0.contains("\"message_id\":1") } != nil)
        let names = try bus.run("playerctl", ["-l"]).stdoutText.split(separator: "\n").sorted()
        #expect(names == ["harmonia_play", "harmonia_play.instance\(second.process.processIdentifier)"])
        off.write("{\"message_id\":2,\"command\":\"quit\"}\n")
        #expect(PrivateSessionBus.exitStatus(off) == 0)
        for player in [first, second] {
            #expect(try bus.call(busName: player === first ? PrivateSessionBus.mprisName : instance, "org.mpris.MediaPlayer2.Quit") == "()")
            #expect(PrivateSessionBus.exitStatus(player) == 0)
        }
    }

    @Test("internet radio: the heard StreamTitle is xesam:title, the ICY station xesam:album")
    func radioMetadata() throws {
        let bus = try PrivateSessionBus()
        // A stream without tags of its own, as a station's is.
        let made = try ProcessRunner.run("/usr/bin/env", ["ffmpeg", "-v", "error", "-y", "-i", Self.mp3, "-map", "0:a", "-c", "copy", "-map_metadata", "-1",
                                                          "-id3v2_version", "0", "-write_xing", "0", bus.folder + "/live.mp3"])
        try #require(made.status == 0, "ffmpeg: \(made.stderrText)")
        let server = try FaultHTTPServer(root: bus.folder)
        let monitor = try SignalMonitor(bus)
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--repeat", "one", server.url("live.mp3", "icy=8192")],
                                                  environment: bus.environment)
        defer { PrivateSessionBus.kill(player) }
        try #require(try bus.waitForName(), "stderr: \(player.stderr.all)")
        #expect(monitor.next("PropertiesChanged") { $0.contains("Title 0") } != nil)
        let shown = try bus.playerctl("metadata", "--format", "{{xesam:title}}|{{xesam:album}}")
        #expect(shown == "Title 0|Loopback Radio", "\(shown)")
    }

    @Test("no session bus, or one that cannot be reached: the player plays as without, silently")
    func missingBusIsSilent() throws {
        var environment = ProcessInfo.processInfo.environment
        for address in [nil, "unix:path=/nonexistent/harmonia-no-bus", "garbage-address"] {
            environment["DBUS_SESSION_BUS_ADDRESS"] = address
            let result = try ProcessRunner.run(ProcessRunner.productsDirectory + "/harmonia-play",
                                               ["--output", "file:/dev/null", Self.flac], environment: environment)
            #expect(result.status == 0, "\(address ?? "unset")")
            #expect(result.stderrText.isEmpty, "\(address ?? "unset"): \(result.stderrText)")
            #expect(result.stdoutText == "Playing 1/1: Harmonia Test Title — Harmonia Artist (0:02.0)\n")
        }
    }
}
