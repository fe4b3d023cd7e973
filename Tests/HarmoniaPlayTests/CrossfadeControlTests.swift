// The crossfade's setting through the interfaces (issue 41): the JSON
// control protocol's `set_crossfade` and status field, MPD's `crossfade`
// and `xfade:` as real clients see them, and serve's state file keeping
// it across a restart, a SIGKILL right after the reply included. Bad
// values change nothing. Every wait is for a line or an answer, with a
// deadline.
import Foundation
import HarmoniaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("crossfade: the setting through JSON control, MPD and the state file", .serialized)
struct CrossfadeControlTests {
    typealias C = HarmoniaPlayControlTests

    @Test("set_crossfade sets the status field; negative, non-numbers and too large are errors that change nothing")
    func jsonControl() throws {
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--control", "stdin", C.flac])
        let out = player.stdout
        player.write(C.request(1, "status"))
        #expect(C.result(try C.reply(out, 1).object)?["crossfade"] as? Double == 0)
        player.write(C.request(2, "set_crossfade", ["seconds": 2.5]))
        #expect(C.result(try C.reply(out, 2).object)?["crossfade"] as? Double == 2.5)
        var id = 3
        for bad: Any in [-1, "abc", 1e9, 30.5] {
            player.write(C.request(id, "set_crossfade", ["seconds": bad]))
            let reply = try C.reply(out, id).object
            #expect(reply["error_code"] as? String == "invalidArgument" || reply["error_code"] as? String == "invalidRequest",
                    "\(bad): \(reply)")
            #expect((reply["error"] as? String)?.contains("seconds") == true, "\(bad): \(reply)")
            id += 1
        }
        player.write(C.request(id, "status"))
        #expect(C.result(try C.reply(out, id).object)?["crossfade"] as? Double == 2.5)
        player.write(C.request(id + 1, "quit"))
        _ = try C.reply(out, id + 1)
        #expect(player.waitForExit(timeout: 10) == 0)
    }

    @Test("MPD: crossfade N shows as xfade: N, bad values answer ACK [2@0]; SIGKILL right after the OK, a restart has the value")
    func mpdAndStateFile() throws {
        let dir = try HarmoniaPlayServeTests.folder("xfade")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let music = dir + "/music"
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        var server = try ServeProcess(music: music, folder: dir)
        var client = try server.client()
        #expect(try client.fields("status")["xfade"] == nil)
        // MixRamp's values are kept and shown as MPD 0.23.12 shows them
        // (measured: mixrampdb: -17, mixrampdelay: 2, none after `nan`).
        #expect(try client.command("mixrampdb -17") == [])
        #expect(try client.command("mixrampdelay 2") == [])
        var status = try client.fields("status")
        #expect(status["mixrampdb"] == "-17")
        #expect(status["mixrampdelay"] == "2")
        #expect(try client.command("mixrampdelay nan") == [])
        status = try client.fields("status")
        #expect(status["mixrampdelay"] == nil)
        #expect(status["mixrampdb"] == "-17")
        for bad in ["-1", "abc", "1e9", "31"] {
            let answer = try client.command("crossfade \(bad)")
            #expect(answer.last?.hasPrefix("ACK [2@0] {crossfade} ") == true, "crossfade \(bad): \(answer)")
        }
        #expect(try client.fields("status")["xfade"] == nil)
        #expect(try client.command("crossfade 3") == [])
        // No event carries the change: the state file had it before the OK.
        #expect(server.stop(SIGKILL) == SIGKILL)

        server = try ServeProcess(music: music, folder: dir)
        defer { _ = server.stop() }
        client = try server.client()
        #expect(try client.fields("status")["xfade"] == "3")
        #expect(try client.command("crossfade 0") == [])
        #expect(try client.fields("status")["xfade"] == nil)
    }

    @Test("set_crossfade over the control socket: SIGKILL right after the reply, a restart has it; MPD idle clients hear options, not playlist")
    func jsonStateAfterKill() throws {
        let dir = try HarmoniaPlayServeTests.folder("xfade-json")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let music = dir + "/music", socket = dir + "/control.sock"
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        var server = try ServeProcess(music: music, folder: dir, extra: ["--control", "unix:" + socket])
        var control = try UnixLineClient(path: socket)
        control.write(C.request(1, "set_crossfade", ["seconds": 2.5]))
        #expect(C.result(try C.reply(control.lines, 1).object)?["crossfade"] as? Double == 2.5)
        #expect(server.stop(SIGKILL) == SIGKILL)
        _ = control.lines.waitForEnd(timeout: 10)

        server = try ServeProcess(music: music, folder: dir, extra: ["--control", "unix:" + socket])
        defer { _ = server.stop() }
        control = try UnixLineClient(path: socket)
        control.write(C.request(2, "status"))
        #expect(C.result(try C.reply(control.lines, 2).object)?["crossfade"] as? Double == 2.5)
        let idler = try server.client(), other = try server.client()
        let version = try idler.fields("status")["playlist"]
        idler.sendRaw("idle playlist options\n")
        control.write(C.request(3, "set_crossfade", ["seconds": 4]))
        _ = try C.reply(control.lines, 3)
        // A later command on the main loop: every event the change caused has been shown.
        control.write(C.request(4, "status"))
        _ = try C.reply(control.lines, 4)
        #expect(try idler.answer() == ["changed: options"])
        // A change by another MPD client: again options alone (a playlist
        // change left pending by the first would be answered here too).
        idler.sendRaw("idle playlist options\n")
        #expect(try other.command("crossfade 1") == [])
        #expect(try idler.answer() == ["changed: options"])
        let status = try idler.fields("status")
        #expect(status["xfade"] == "1")
        #expect(status["playlist"] == version)
        let events = control.lines.all.compactMap { C.object($0)?["event"] as? String }
        #expect(!events.contains("queue_changed"), "\(events)")
        control.close()
        _ = control.lines.waitForEnd(timeout: 10)
    }
}
