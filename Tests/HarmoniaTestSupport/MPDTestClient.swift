// A minimal MPD-protocol client for tests: one command, its answer lines.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Connects to 127.0.0.1:`port`, reads the greeting, and sends commands one
/// at a time, each answered up to its `OK` or `ACK` line. Every read has a
/// timeout (`seconds`): a server that stops answering fails the test, never hangs it.
public final class MPDTestClient {
    public private(set) var greeting = ""
    private let fd: Int32
    private var buffer: [UInt8] = []

    public init(port: Int, seconds: Int = 10) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var timeout = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            throw POSIXError(.ECONNREFUSED)
        }
        greeting = try readLine() ?? ""
    }

    deinit { close(fd) }

    /// Sends `line` and returns the answer's lines, the final `OK` left out
    /// (an `ACK …` line is returned as the last line). Empty when the server closed.
    public func command(_ line: String) throws -> [String] {
        var bytes = Array((line + "\n").utf8)
        _ = bytes.withUnsafeMutableBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        return try answer()
    }

    /// Reads one answer (of a command sent with `sendRaw`, or an `idle`'s),
    /// as `command` returns it.
    public func answer() throws -> [String] {
        var answer: [String] = []
        while let next = try readLine() {
            if next == "OK" { return answer }
            answer.append(next)
            if next.hasPrefix("ACK ") { return answer }
        }
        return answer
    }

    /// Sends `text` as it is (several lines at once), reading nothing.
    public func sendRaw(_ text: String) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// True once the server has closed or reset the connection, seen without
    /// reading anything (a client that reads is not a client that never reads);
    /// false if it is still open after `seconds`.
    public func waitForClose(seconds: Int) -> Bool {
        let readHangUp: Int16 = 0x2000  // POLLRDHUP (Linux; C declares it only with _GNU_SOURCE)
        var entry = pollfd(fd: fd, events: readHangUp, revents: 0)
        let deadline = Date().addingTimeInterval(Double(seconds))
        while Date() < deadline {
            let left = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
            let n = poll(&entry, 1, left)
            if n > 0 && entry.revents & (readHangUp | Int16(POLLHUP) | Int16(POLLERR)) != 0 { return true }
            if n < 0 && errno != EINTR { return false }
        }
        return false
    }

    /// `key: value` pairs of an answer (the first value of each key).
    public func fields(_ line: String) throws -> [String: String] {
        var result: [String: String] = [:]
        for answer in try command(line) {
            guard let colon = answer.range(of: ": ") else { continue }
            let key = String(answer[..<colon.lowerBound])
            if result[key] == nil { result[key] = String(answer[colon.upperBound...]) }
        }
        return result
    }

    /// One line without its newline; nil at the end of the connection.
    /// - Throws: on a read timeout.
    private func readLine() throws -> String? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeFirst(newline + 1)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw POSIXError(.ETIMEDOUT) }
            if n == 0 { return nil }
            buffer.append(contentsOf: chunk[..<n])
        }
    }
}
