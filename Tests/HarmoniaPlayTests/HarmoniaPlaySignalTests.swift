// SIGINT and SIGTERM in every phase of `play` (specs/inputs.md §Signals):
// the built binary, a real network peer that never answers, a real control
// socket. Each test waits for the player to show it is in the phase (a
// request reaching the server, a line it printed), then signals; deadlines
// are generous and shorter than the 15 s network timeout, so only an
// interrupted open can meet them.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play signals in every phase")
struct HarmoniaPlaySignalTests {
    static let wav = Fixtures.named("wav_s16_stereo_44k.wav").path  // 1 s

    /// A 30 s sine made once per run by the ffmpeg command line: it never ends within a test.
    static let long: String = {
        let path = NSTemporaryDirectory() + "harmonia-play-signals-\(getpid()).flac"
        let result = try? ProcessRunner.run("/usr/bin/env", [
            "ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=30", "-ac", "2", path,
        ])
        precondition(result?.status == 0, "ffmpeg could not make \(path)")
        return path
    }()

    static func socketPath(_ name: String) -> String {
        NSTemporaryDirectory() + "hp-sig-\(getpid())-\(name).sock"
    }

    @Test("opening a network source that never answers: the signal ends it, exit 128+signal, socket file removed",
          arguments: [SIGINT, SIGTERM])
    func silentServer(_ signo: Int32) throws {
        let server = try SilentTCPListener()
        let path = Self.socketPath("silent\(signo)")
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--control", "unix:" + path, server.url("song.mp3")])
        #expect(try #require(server.waitForRequest()).hasPrefix("GET /song.mp3"))
        #expect(FileManager.default.fileExists(atPath: path))
        kill(player.process.processIdentifier, signo)
        #expect(player.waitForExit(timeout: 10) == 128 + signo)
        #expect(!FileManager.default.fileExists(atPath: path), "the control socket file is removed")
    }

    @Test("on a terminal, SIGINT while the network source opens: exit 130, the terminal restored")
    func silentServerOnTerminal() throws {
        let server = try SilentTCPListener()
        let pty = try PseudoTerminal(ProcessRunner.productsDirectory + "/harmonia-play", ["--output", "null", server.url("radio")])
        let before = pty.initialModes
        #expect(server.waitForRequest() != nil)
        kill(pty.pid, SIGINT)
        #expect(try pty.waitForExit(timeout: 10) == .exited(130))
        #expect(sameModes(before, pty.modes()))
    }

    @Test("probing a source that stalls after its first bytes: SIGTERM, exit 143")
    func probing() throws {
        let root = NSTemporaryDirectory() + "hp-sig-probe-\(getpid())"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: Fixtures.named("flac_s16_stereo_44k.flac").path, toPath: root + "/a.flac")
        defer { try? FileManager.default.removeItem(atPath: root) }
        let server = try LoopbackHTTPServer(root: root)
        defer { server.stop() }
        server.stall("a.flac", afterBytes: 16)
        let player = try LineProcess.harmoniaPlay(["--output", "null", server.url("a.flac")])
        server.waitUntilStalled()
        kill(player.process.processIdentifier, SIGTERM)
        #expect(player.waitForExit(timeout: 10) == 143)
    }

    @Test("decoding and playing: exit 128+signal, socket file removed", arguments: [SIGINT, SIGTERM])
    func playing(_ signo: Int32) throws {
        let path = Self.socketPath("play\(signo)")
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--control", "unix:" + path, Self.long])
        #expect(player.stdout.take { $0.hasPrefix("Playing 1/1") } != nil)
        kill(player.process.processIdentifier, signo)
        #expect(player.waitForExit(timeout: 10) == 128 + signo)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("waiting for a control client (the only input refused): exit 128+signal, socket file removed",
          arguments: [SIGINT, SIGTERM])
    func waitingForClient(_ signo: Int32) throws {
        let fifo = NSTemporaryDirectory() + "hp-sig-fifo-\(getpid())-\(signo).flac"
        unlink(fifo)
        #expect(mkfifo(fifo, 0o600) == 0)
        defer { unlink(fifo) }
        let path = Self.socketPath("wait\(signo)")
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--control", "unix:" + path, fifo])
        // Reported from the main loop once the socket listens; then it waits for commands.
        #expect(player.stderr.take { $0.contains("FIFO") } != nil)
        #expect(FileManager.default.fileExists(atPath: path))
        kill(player.process.processIdentifier, signo)
        #expect(player.waitForExit(timeout: 10) == 128 + signo)
        #expect(!FileManager.default.fileExists(atPath: path))
    }

    @Test("while the next track's open hangs (on the decode thread), pause, status and quit are answered; quit exits 0")
    func controlDuringSlowOpen() throws {
        let server = try SilentTCPListener()
        // The 1 s file ends within the decode-ahead distance: the next track is opened at once.
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--control", "stdin", Self.wav, server.url("next.ogg")])
        #expect(server.waitForRequest() != nil)
        for (id, command) in [(1, "pause"), (2, "status"), (3, "quit")] {
            player.write(#"{"message_id":\#(id),"command":"\#(command)"}"# + "\n")
            let reply = player.stdout.take { $0.contains(#""message_id":\#(id)"#) }
            #expect(reply?.line.contains(#""result""#) == true, "\(command): \(String(describing: reply))")
        }
        #expect(player.waitForExit(timeout: 10) == 0)
    }
}
