// A loopback TCP server that accepts and never answers: a network source
// whose open never ends by itself (the player's open must be interruptible).
#if canImport(Glibc)
import Glibc
#endif
import Foundation

public final class SilentTCPListener: @unchecked Sendable {
    public let port: UInt16
    private let listener: Int32
    // Only touched by the test's thread.
    private var accepted: [Int32] = []

    /// Listens on an ephemeral loopback port.
    public init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 8) == 0 else { close(fd); throw FixtureError("bind/listen failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listener = fd
    }

    public func url(_ file: String) -> String { "http://127.0.0.1:\(port)/\(file)" }

    /// Waits (until `timeout` seconds have passed) for a client to connect
    /// and send a whole HTTP request, which is never answered: the client is
    /// then waiting for the reply. Returns the request line, or nil.
    public func waitForRequest(timeout: Double = 10) -> String? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        guard wait(listener, until: deadline) else { return nil }
        let client = accept(listener, nil, nil)
        guard client >= 0 else { return nil }
        accepted.append(client)
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !(request.count >= 4 && Array(request.suffix(4)) == [13, 10, 13, 10]) {
            guard wait(client, until: deadline) else { return nil }
            let n = read(client, &buffer, buffer.count)
            if n <= 0 { return nil }
            request += buffer[0..<n]
        }
        return String(decoding: request, as: UTF8.self).components(separatedBy: "\r\n").first
    }

    private func wait(_ fd: Int32, until deadline: Date) -> Bool {
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return false }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let result = poll(&entry, 1, Int32(min(left, 1) * 1000) + 1)
            if result > 0 { return true }
            if result < 0 && errno != EINTR { return false }
        }
    }

    deinit {
        for fd in accepted { close(fd) }
        close(listener)
    }
}
