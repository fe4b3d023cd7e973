// A client hears of the changes made after it connected, never of earlier
// ones, on every frontend that fans changes out: MPD's idle and the control
// socket's events (specs/application.md §Event stamps; the WebSocket's are
// checked by Tests/WebSocket/ws_protocol_test.py).
import Foundation
import HarmoniaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("harmonia-play serve: changes reach the clients connected when they happened", .serialized)
struct HarmoniaPlayIdleTests {
    typealias Serve = HarmoniaPlayServeTests
    typealias C = HarmoniaPlayControlTests

    /// B changes something and has its OK; A connects and idles; B makes a
    /// later change of another subsystem. A's first answer names only the
    /// later one, so nothing needs a sleep to show that the earlier one
    /// never arrived. With a state file, as users run it: the state keeper
    /// saves (fsync) before the MPD frontend is shown each event.
    @Test("MPD: idle after another client's add or repeat names only what changed after the connect")
    func idleStartsAtConnect() throws { try HarmoniaPlayEdgesTests.withServer("idle") { server, _ in
        let b = try server.client()
        for round in 0..<5 {
            // A queue change before A comes, a mode change after.
            #expect(try b.command("add \"loose\"") == [])
            let a = try server.client()
            a.sendRaw("idle\n")
            #expect(try b.command("repeat \(round % 2 == 0 ? 1 : 0)") == [])
            #expect(try a.answer() == ["changed: options"], "round \(round): add before the connect")

            // A mode change before A comes, a queue change after.
            #expect(try b.command("random \(round % 2 == 0 ? 1 : 0)") == [])
            let a2 = try server.client()
            a2.sendRaw("idle\n")
            #expect(try b.command("delete 0") == [])
            #expect(try a2.answer() == ["changed: playlist"], "round \(round): random before the connect")
        }
        // A mode set to what it already is changes nothing, as in MPD: no idle.
        #expect(try b.command("repeat 0") == [])
        #expect(try b.command("random 0") == [])
        let c = try server.client()
        #expect(try b.command("repeat 0") == [])
        #expect(try b.command("random 0") == [])
        c.sendRaw("idle options playlist\n")
        #expect(try b.command("clear") == [])
        #expect(try c.answer() == ["changed: playlist"])
    } }

    @Test("the two-client idle session answers as MPD 0.23 does (Tests/MPD/session_idle.txt)")
    func idleDifferential() throws { try HarmoniaPlayEdgesTests.expectSessionLikeMPD("session_idle.txt") }

    @Test("control socket: a client connecting after a change gets only the events of later changes")
    func socketEventsStartAtConnect() throws {
        let music = try Serve.music(), dir = try Serve.folder("idle-socket")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/control.sock"
        let server = try ServeProcess(music: music, folder: dir, extra: ["--control", "unix:" + path])
        try server.waitForLibrary(songs: Serve.musicSongs)
        let b = try UnixLineClient(path: path)
        var clients = [b]
        defer {
            // Each client's reading thread ends with the connection, before the client goes.
            server.stop()
            for client in clients { _ = client.lines.waitForEnd(timeout: 10) }
        }
        for round in 0..<5 {
            b.write(C.request("add\(round)", "queue/add", ["uri": "loose"]))
            _ = try C.reply(b.lines, "add\(round)")
            let a = try UnixLineClient(path: path)
            clients.append(a)
            a.write(C.request("hello", "status"))  // answered: A is accepted (connected) now
            _ = try C.reply(a.lines, "hello")
            b.write(C.request("vol\(round)", "volume", ["level": 50 + round]))
            _ = try C.reply(b.lines, "vol\(round)")
            let volume = try C.event(a.lines, "volume_changed")
            let before = a.lines.all.prefix(volume.position + 1).compactMap { C.object($0)?["event"] as? String }
            #expect(before == ["volume_changed"], "round \(round): \(before)")
        }
    }
}
