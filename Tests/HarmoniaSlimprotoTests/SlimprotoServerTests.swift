// The player against a real slimproto server: Tests/Slimproto/slimproto_player_test.py
// drives `harmonia-play slimproto` on loopback with aioslimproto (Music
// Assistant's slimproto server library; pinned, installed by `make test`
// into .build/python-slimproto) — specs/slimproto.md §Tests
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play slimproto player", .serialized)
struct SlimprotoServerTests {
    static let python = Fixtures.repositoryRoot + "/.build/python-slimproto/bin/python3"
    static let script = Fixtures.repositoryRoot + "/Tests/Slimproto/slimproto_player_test.py"

    @Test("aioslimproto: HELO registers device 12 with its codecs and name; play bit-exact to the file output after the server's gain; STMc before RESP, the stream's own headers; DSCO; STAT's buffer fields; pause and unpause lose no frame; a gapless FLAC→Ogg queue through STMd; stop; pause-for and skip-ahead to the frame; raw PCM (strm p) and a WAV by its header, bit-exact; a 404 is STMn and DSCO 3; server restart; 30 malformed frames from a raw socket; SIGTERM")
    func aioslimproto() throws {
        try runScript([], seconds: 180)
    }

    @Test("On the private PulseAudio server: unpause at jiffies T lines the heard position up with T (within 2 ms, by exact skips); pause-for 300 ms and skip-ahead 500 ms move it by exactly that much; squeezelite and ours in one group: both register, prefill, start and play")
    func sync() throws {
        try PulseTestServer.control("start")
        try runScript(["sync"], seconds: 120)
    }

    /// Runs the script (bounded: it bounds every wait; `timeout` bounds the
    /// whole) and expects every check of it to pass.
    private func runScript(_ arguments: [String], seconds: Int) throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            Issue.record("\(Self.python) is missing: `make test` installs aioslimproto there (make slimproto-server)")
            return
        }
        let result = try ProcessRunner.run("/usr/bin/timeout", ["--kill-after=10", String(seconds), Self.python, Self.script,
                                                                ProcessRunner.productsDirectory + "/harmonia-play"] + arguments)
        #expect(result.status == 0, "\(result.stdoutText.suffix(4000))\n\(result.stderrText.suffix(3000))")
        #expect(result.stdoutText.contains(" passed, 0 failed"))
        print(result.stdoutText, terminator: "")
    }
}
