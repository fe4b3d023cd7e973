// Edges of MPD's playback commands as MPD 0.23 answers them (issue 29):
// next/previous/seekcur when stopped, play past the end, single oneshot
// — specs/mpd-protocol.md §Command groups, specs/application.md §Single mode.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play serve: MPD's playback edges", .serialized)
struct HarmoniaPlayEdgesTests {
    typealias Serve = HarmoniaPlayServeTests

    /// Runs `body` with a `serve` on the harness's tree (its library scanned)
    /// and the tree's folder; stops it and removes its folder afterwards.
    static func withServer(_ name: String, _ body: (ServeProcess, String) throws -> Void) throws {
        let music = try Serve.music(), dir = try Serve.folder(name)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ServeProcess(music: music, folder: dir)
        defer { server.stop() }
        try server.waitForLibrary(songs: Serve.musicSongs)
        try body(server, music)
    }

    /// Runs `Tests/MPD/SESSION` on a fresh `serve` and on a private MPD
    /// (mpd_diff.py `against`, with `--tag-order`): the two must be equal.
    static func expectSessionLikeMPD(_ session: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try withServer(session) { server, music in
            let result = try ProcessRunner.run(Serve.python, [Serve.harness, "against", "--port", String(server.port),
                                                              "--script", Fixtures.repositoryRoot + "/Tests/MPD/" + session,
                                                              "--music", music, "--tag-order"])
            #expect(result.status == 0, "\(result.stdoutText.suffix(4000))\n\(result.stderrText.suffix(2000))",
                    sourceLocation: sourceLocation)
            #expect(result.stdoutText.contains("equal:"), sourceLocation: sourceLocation)
        }
    }

    @Test("the edges session answers as MPD 0.23 does (Tests/MPD/session_edges.txt)")
    func differential() throws { try Self.expectSessionLikeMPD("session_edges.txt") }

    @Test("single oneshot: at the end of the song the player pauses at the next one's start, and single turns off")
    func singleOneshot() throws { try Self.withServer("oneshot") { server, _ in
        let client = try server.client()
        #expect(try client.command("add \"loose\"") == [])  // two songs of 1 s
        #expect(try client.command("single oneshot") == [])
        #expect(try client.fields("status")["single"] == "oneshot")
        _ = try client.command("idle options")  // the single set above
        #expect(try client.command("play 0") == [])
        // The song plays out (1 s); the answer to this idle is single turning off.
        #expect(try client.command("idle options") == ["changed: options"])
        let status = try client.fields("status")
        #expect(status["single"] == "0")
        #expect(status["state"] == "pause")
        #expect(status["song"] == "1")
        #expect((status["elapsed"].flatMap(Double.init) ?? 9) < 0.05, "\(status)")
    } }

    /// Issue 29's third part on the MPD side: commands that run on the
    /// shared main loop (`setvol` goes through `perform`), one client
    /// sending 20,000 of them and reading nothing; another client's round
    /// trips through the main loop stay under 1 s (a correctness bound: only
    /// a request queued behind the flooder's backlog would take that long).
    @Test("MPD: while a client floods main-loop commands without reading, another client's setvol round trips stay under 1 s")
    func mainLoopFlood() throws { try Self.withServer("mainloop-flood") { server, _ in
        let flood = try server.client()
        flood.sendRaw(String(repeating: "setvol 30\n", count: 20_000))  // never read
        let other = try MPDTestClient(port: server.port, seconds: 1)  // a read waiting longer than 1 s fails the test
        var worst = 0.0
        for i in 0..<200 {
            let start = ProcessInfo.processInfo.systemUptime
            #expect(try other.command("setvol \(60 + i % 2)") == [])
            worst = max(worst, ProcessInfo.processInfo.systemUptime - start)
        }
        print("[serve] a setvol round trip while another client floods 20,000 setvol: at most \(Int(worst * 1000)) ms")
        #expect(worst < 1.0)
    } }
}
