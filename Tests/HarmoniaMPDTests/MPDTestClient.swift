// A raw MPD-protocol client for the server tests: every read is bounded by
// a deadline (poll), so a test never hangs and never sleeps.
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaCore
import HarmoniaLibrary
import HarmoniaMPD
import HarmoniaTestSupport

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// One TCP connection. Not thread-safe: one test thread uses it.
final class MPDTestClient {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private(set) var closed = false
    /// The first line the server sent ("OK MPD 0.23.5"), nil when it closed at once.
    private(set) var greeting: String?

    /// Connects to `host`:`port`; `receiveBuffer` shrinks SO_RCVBUF (a client
    /// that does not read then fills up quickly).
    init(port: UInt16, host: String = "127.0.0.1", receiveBuffer: Int32? = nil, readGreeting: Bool = true) throws {
        let v6 = host.contains(":")
        fd = socket(v6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket failed") }
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var connected: Int32
        if v6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            inet_pton(AF_INET6, host, &address.sin6_addr)
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size)) }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = port.bigEndian
            address.sin_addr.s_addr = inet_addr(host)
            connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
        guard connected == 0 else {
            close(fd)
            throw TestFailure("connect to \(host):\(port) failed: errno \(errno)")
        }
        if readGreeting { greeting = readLine() }
    }

    deinit { close(fd) }

    /// Sends `line` and a newline; false when the server is gone.
    @discardableResult
    func send(_ line: String) -> Bool { sendRaw(Array((line + "\n").utf8)) }

    @discardableResult
    func sendRaw(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }

    /// The next line, or nil at the end of the stream or after `timeout` seconds.
    func readLine(timeout: Double = 10) -> String? {
        let deadline = now() + timeout
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeFirst(newline + 1)
                return line
            }
            guard fill(until: deadline) else { return nil }
        }
    }

    /// The lines of one answer, through `OK` or an `ACK` line; ends with
    /// "<closed>" or "<timeout>" when the answer did not finish.
    func readAnswer(timeout: Double = 10) -> [String] {
        let deadline = now() + timeout
        var lines: [String] = []
        while true {
            guard let line = readLine(timeout: max(0, deadline - now())) else {
                lines.append(closed ? "<closed>" : "<timeout>")
                return lines
            }
            lines.append(line)
            if line == "OK" || line.hasPrefix("ACK ") { return lines }
        }
    }

    /// Sends `line` and reads its answer.
    func command(_ line: String) -> [String] {
        send(line)
        return readAnswer()
    }

    /// Reads (and discards) until the server closes; false after `timeout`.
    func waitForClose(timeout: Double = 10) -> Bool {
        let deadline = now() + timeout
        while !closed {
            buffer.removeAll()
            guard fill(until: deadline) else { return closed }
        }
        return true
    }

    /// Whether bytes are waiting now (no wait).
    var hasPendingData: Bool {
        if !buffer.isEmpty { return true }
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) > 0
    }

    /// Reads what arrives before `deadline`; false at the end of the stream or the deadline.
    private func fill(until deadline: Double) -> Bool {
        while true {
            let left = deadline - now()
            guard left > 0 else { return false }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, Int32(min(left, 1) * 1000) + 1)
            if ready < 0 && errno != EINTR { return false }
            guard ready > 0 else { continue }
            var chunk = [UInt8](repeating: 0, count: 65_536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                closed = true
                return false
            }
            buffer.append(contentsOf: chunk[0..<n])
            return true
        }
    }

    private func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }
}

/// A handler with a few commands to drive the server's wire rules.
struct FakeHandler: MPDCommandHandler {
    let closedClients = LockedValue<[Int]>([])

    var commands: [MPDCommandInfo] {
        [
            MPDCommandInfo("add", .add, .exactly(1)),
            MPDCommandInfo("big", .read, .exactly(1)),
            MPDCommandInfo("echo", [], .range(0, nil)),
            MPDCommandInfo("fail", .read, .none),
            MPDCommandInfo("lsinfo", .read, .range(0, 1)),
            MPDCommandInfo("status", .read, .none),
        ]
    }

    static let song = LibrarySong(path: "a/b.flac", modified: 1_700_000_000, size: 1,
                                  tags: [.artist: ["A"], .title: ["T"]], duration: 2, format: "44100:16:2")

    func handle(_ request: MPDRequest, context: MPDContext, into writer: inout MPDResponseWriter) throws(MPDError) {
        switch request.command {
        case "status": writer.append("state", "stop")
        case "add": writer.append("added", request.arguments[0])
        case "echo":
            for (i, argument) in request.arguments.enumerated() { writer.append("arg\(i)", argument) }
            writer.append("client", context.clientID)
        case "fail":
            writer.append("partial", "yes")
            throw MPDError(.noExist, "No such thing")
        case "big":
            let line = String(repeating: "x", count: 1000)
            for _ in 0..<(Int(request.arguments[0]) ?? 0) where !writer.isFull { writer.append("line", line) }
        case "lsinfo": writer.appendSong(Self.song)
        default: throw MPDError(.unknown, "not here")
        }
    }

    func connectionClosed(clientID: Int) {
        closedClients.withLock { $0.append(clientID) }
    }
}
