// The control socket under abuse (specs/control-protocol.md §Transports):
// a client that never reads, clients that half-close, fifty at once, a 10 MB
// line, a path that is not a socket. Every wait is for a line or an end,
// with a deadline; nothing is timed.
import Foundation
import HarmoniaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("harmonia-play control socket under abuse", .serialized)
struct HarmoniaPlayControlAbuseTests {
    typealias C = HarmoniaPlayControlTests

    static func socketPath(_ name: String) -> String {
        NSTemporaryDirectory() + "hp-abuse-\(getpid())-\(name).sock"
    }

    /// A player on a 60 s-long queue (the 2 s file repeated), listening at `path`.
    static func player(_ path: String) throws -> LineProcess {
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--repeat", "one", "--control", "unix:" + path, C.flac])
        try #require(player.stdout.take { $0.hasPrefix("Playing 1/1: ") } != nil)
        return player
    }

    /// Asks the player to quit through `client`; expects exit 0.
    static func quit(_ client: UnixLineClient, _ player: LineProcess, sourceLocation: SourceLocation = #_sourceLocation) throws {
        client.write(C.request("quit", "quit"))
        _ = try C.reply(client.lines, "quit", sourceLocation: sourceLocation)
        #expect(player.waitForExit() == 0, sourceLocation: sourceLocation)
    }

    /// A raw connection that writes and never reads.
    static func rawConnection(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return fd
    }

    /// Writes `text` until done or the peer is gone; whether all of it went.
    @discardableResult
    static func writeAll(_ fd: Int32, _ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if n <= 0 { return false }
                offset += n
            }
            return true
        }
    }

    /// Sends `count` status requests and checks one reply per id, each consistent.
    static func statusBurst(_ client: UnixLineClient, prefix: String, count: Int) throws {
        client.write((0..<count).map { C.request("\(prefix)\($0)", "status") }.joined())
        for i in 0..<count {
            let reply = try C.reply(client.lines, "\(prefix)\(i)")
            let status = try #require(C.result(reply.object))
            let position = try #require(status["position"] as? Double)
            let duration = try #require(status["duration"] as? Double)
            #expect(position >= 0 && position <= duration, "\(status)")
        }
    }

    @Test("a client that floods requests and never reads is dropped at 1 MiB of replies; another client's status round trips stay under 1 s")
    func neverReads() throws {
        let path = Self.socketPath("flood")
        let player = try Self.player(path)
        let flooder = Self.rawConnection(path)
        defer { close(flooder) }
        let flooding = Thread {
            let burst = (0..<20_000).map { C.request($0, "status") }.joined()
            Self.writeAll(flooder, burst)  // ends early once the player drops it
        }
        flooding.start()
        let polite = try UnixLineClient(path: path)
        for round in 0..<5 { try Self.statusBurst(polite, prefix: "r\(round)-", count: 100) }
        // One request at a time: each round trip stays under 1 s whatever the
        // flooder has sent (a correctness bound, not a speed figure: only a
        // request queued behind the flooder's backlog would take that long).
        var worst = 0.0
        for i in 0..<300 {
            let start = ProcessInfo.processInfo.systemUptime
            polite.write(C.request("one\(i)", "status"))
            _ = try C.reply(polite.lines, "one\(i)")
            worst = max(worst, ProcessInfo.processInfo.systemUptime - start)
        }
        print("[control] a status round trip while another client floods: at most \(Int(worst * 1000)) ms")
        #expect(worst < 1.0)
        // The flooder is cut off: its connection ends, with a line on stderr.
        #expect(player.stderr.take(timeout: 30) { $0.contains("control client dropped: it did not read its replies") } != nil)
        var byte: UInt8 = 0
        var drained = 0
        while recv(flooder, &byte, 1, 0) == 1 { drained += 1 }  // what was sent before the drop, then the end
        #expect(drained <= 2 << 20)
        try Self.statusBurst(polite, prefix: "after-", count: 10)
        try Self.quit(polite, player)
    }

    @Test("a client that half-closes after its requests gets every reply, then the end", arguments: 0..<5)
    func halfClose(_ attempt: Int) throws {
        let path = Self.socketPath("half\(attempt)")
        let player = try Self.player(path)
        let client = try UnixLineClient(path: path)
        client.write((0..<20).map { C.request($0, "status") }.joined() + C.request("bad", "no-such-command"))
        client.finishWriting()
        #expect(client.lines.waitForEnd(timeout: 30), "the player closes the connection once it has answered")
        let replies = client.lines.all.compactMap(C.object).filter { $0["event"] == nil }
        #expect(replies.count == 21)
        #expect(Set(replies.compactMap { $0["message_id"] as? Int }) == Set(0..<20))
        #expect(replies.contains { $0["message_id"] as? String == "bad" && $0["error"] != nil })
        try Self.quit(try UnixLineClient(path: path), player)
    }

    @Test("fifty clients connecting at once are all answered")
    func fiftyClients() throws {
        let path = Self.socketPath("fifty")
        let player = try Self.player(path)
        let clients = try (0..<50).map { _ in try UnixLineClient(path: path) }
        for (i, client) in clients.enumerated() { client.write(C.request(i, "status")) }
        for (i, client) in clients.enumerated() { _ = try C.reply(client.lines, i) }
        try Self.quit(clients[0], player)
    }

    @Test("a 10 MB line: one invalidRequest reply, memory stays bounded, the next request is answered")
    func hugeLine() throws {
        let path = Self.socketPath("huge")
        let player = try Self.player(path)
        let client = try UnixLineClient(path: path)
        let chunk = String(repeating: "x", count: 1 << 20)
        for _ in 0..<10 { client.write(chunk) }
        client.write("\n" + C.request(2, "status"))
        let error = try #require(client.lines.take { C.object($0)?["error"] != nil })
        #expect(C.object(error.line)?["error_code"] as? String == "invalidRequest", "\(error.line)")
        _ = try C.reply(client.lines, 2)
        // The line was discarded as it came, not kept: the player's peak RSS stays small.
        let status = try String(contentsOfFile: "/proc/\(player.process.processIdentifier)/status", encoding: .utf8)
        let peakKB = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") }
            .flatMap { Int($0.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) } ?? .max
        print("[control] peak RSS after a 10 MB line: \(peakKB / 1024) MiB")
        #expect(peakKB < 200 * 1024)
        try Self.quit(client, player)
    }

    @Test("--control at a path that is not a socket: refused, the file left as it was")
    func notASocket() throws {
        let path = Self.socketPath("plain")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: path))
        defer { unlink(path) }
        let result = try ProcessRunner.harmoniaPlay(["--output", "null", "--control", "unix:" + path, C.flac])
        #expect(result.status == 1)
        #expect(result.stderrText.contains("exists and is not a socket"), "\(result.stderrText)")
        #expect(FileManager.default.contents(atPath: path) == Data("keep me".utf8))
    }
}
