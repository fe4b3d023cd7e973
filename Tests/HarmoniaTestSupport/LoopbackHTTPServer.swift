// A minimal HTTP/1.0 file server on 127.0.0.1 for testing network sources:
// GET of a file under its root answers 200 with the bytes (or 404), and can
// stall part-way through a file. One
// thread, one connection at a time; stops when `stop()` is called.
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HarmoniaCore

public final class LoopbackHTTPServer: @unchecked Sendable {
    public let port: UInt16
    private let root: String
    private let listener: Int32
    private let thread: Thread
    // Written once by stop(); read by the accept thread.
    private let stopped = LockedValue(false)
    /// Requests served so far (paths).
    public let requests = LockedValue<[String]>([])
    private let stall = Stall()

    /// Starts serving files under `root` on an ephemeral loopback port.
    public init(root: String) throws {
        self.root = root
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FixtureError("socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 8) == 0 else { throw FixtureError("bind/listen failed") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        listener = fd
        let listener = fd, root = self.root, stopped = self.stopped, requests = self.requests, stall = self.stall
        thread = Thread {
            while !stopped.withLock({ $0 }) {
                let client = accept(listener, nil, nil)
                if client < 0 { continue }
                Self.serve(client, root: root, requests: requests, stall: stall)
                close(client)
            }
        }
        thread.start()
    }

    public func url(_ file: String) -> String { "http://127.0.0.1:\(port)/\(file)" }

    /// Makes the next response for `/file` send `bytes` bytes of its body,
    /// then nothing until `release()` (or `stop()`): a network stall.
    public func stall(_ file: String, afterBytes bytes: Int) {
        stall.lock.withLock { stall.path = "/" + file; stall.afterBytes = bytes; stall.released = false }
    }
    /// Blocks until a stalled response has sent its first bytes.
    public func waitUntilStalled() {
        stall.lock.withLock { while !stall.reached { stall.lock.wait() } }
    }
    /// Lets a stalled response go on.
    public func release() {
        stall.lock.withLock { stall.released = true; stall.lock.broadcast() }
    }

    /// Stops accepting; closes the listening socket.
    public func stop() {
        release()
        stopped.withLock { $0 = true }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private static func serve(_ client: Int32, root: String, requests: LockedValue<[String]>, stall: Stall) {
        var request = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !request.ends(with: [13, 10, 13, 10]) {
            let n = read(client, &buffer, buffer.count)
            if n <= 0 { return }
            request += buffer[0..<n]
        }
        let line = String(decoding: request, as: UTF8.self).split(separator: "\r\n").first ?? ""
        let parts = line.split(separator: " ")
        let path = parts.count > 1 ? String(parts[1]) : "/"
        requests.withLock { $0.append(path) }
        let file = root + path
        if !path.contains(".."), let data = FileManager.default.contents(atPath: file) {
            send(client, "HTTP/1.0 200 OK\r\nContent-Length: \(data.count)\r\nContent-Type: application/octet-stream\r\n\r\n")
            let stallAt = stall.lock.withLock { stall.path == path && !stall.released ? stall.afterBytes : nil }
            data.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    if let stallAt, offset >= stallAt {
                        stall.lock.withLock {
                            stall.reached = true
                            stall.lock.broadcast()
                            while !stall.released { stall.lock.wait() }
                        }
                    }
                    let end = stallAt.map { offset < $0 ? min($0, bytes.count) : bytes.count } ?? bytes.count
                    let n = write(client, bytes.baseAddress! + offset, end - offset)
                    if n <= 0 { break }
                    offset += n
                }
            }
        } else {
            send(client, "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n")
        }
    }

    private static func send(_ client: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
    }
}

/// The stall set by `stall(_:afterBytes:)`.
private final class Stall: @unchecked Sendable {
    let lock = ConditionLock()
    // Guarded by `lock`.
    var path: String?
    var afterBytes = 0
    var released = true
    var reached = false
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
