// TCP and UDP calls of the slimproto player — specs/slimproto.md §Connection
//
// Every socket call of the module, each failure named after the C function
// that failed and mapped to CoreError.
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaCore

enum SlimprotoSocket {
    /// The IPv4 address of `host` (a numeric address or a name). Slimproto
    /// is IPv4 only: `strm` carries a 32-bit server address.
    /// - Throws: `.notFound` when the name does not resolve to IPv4.
    static func resolve(_ host: String) throws(CoreError) -> in_addr {
        var address = in_addr()
        if inet_pton(AF_INET, host, &address) == 1 { return address }
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &result) == 0, let first = result else {
            throw .notFound("slimproto: the server \(host.prefix(80)) does not resolve to an IPv4 address")
        }
        defer { freeaddrinfo(result) }
        return first.pointee.ai_addr.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
    }

    static func text(_ address: in_addr) -> String {
        SlimprotoFrames.dotted(UInt32(bigEndian: address.s_addr))
    }

    /// A connected TCP socket to `address:port`, within `timeout` seconds.
    /// - Throws: `.ioError` naming the call that failed (connection refused, timeout).
    static func connect(to address: in_addr, port: UInt16, timeout: Double) throws(CoreError) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { throw failure("socket") }
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = port.bigEndian
        target.sin_addr = address
        let started = withUnsafePointer(to: &target) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if started != 0 {
            guard errno == EINPROGRESS else {
                let error = failure("connect \(text(address)):\(port)")
                close(fd)
                throw error
            }
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&poller, 1, Int32(timeout * 1000))
            var code: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
            guard ready == 1, code == 0 else {
                close(fd)
                throw .ioError("slimproto: connect \(text(address)):\(port): \(ready == 0 ? "timed out" : String(cString: strerror(code)))")
            }
        }
        // Blocking from here on: the reader waits in poll, the writer's frames are small.
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~Int32(O_NONBLOCK))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        return fd
    }

    /// Writes every byte (MSG_NOSIGNAL: a closed peer is an error, not SIGPIPE).
    static func sendAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    enum Received {
        case bytes(Int)
        case closed
        case timedOut
        case failed(String)
    }

    /// Reads what is there into `buffer`, waiting up to `timeout` seconds.
    static func receive(_ fd: Int32, into buffer: inout [UInt8], timeout: Double) -> Received {
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ready = poll(&poller, 1, Int32(timeout * 1000))
        if ready == 0 { return .timedOut }
        if ready < 0 { return errno == EINTR ? .bytes(0) : .failed("poll: " + String(cString: strerror(errno))) }
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
        if n == 0 { return .closed }
        if n < 0 { return errno == EINTR ? .bytes(0) : .failed("recv: " + String(cString: strerror(errno))) }
        return .bytes(n)
    }

    /// Asks the network for a server with the `e` discovery datagram
    /// (broadcast to UDP 3483) and returns the address of the first that
    /// answers `E` within `timeout` seconds.
    static func discover(timeout: Double) throws(CoreError) -> in_addr? {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket") }
        defer { close(fd) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, socklen_t(MemoryLayout<Int32>.size))
        // The request: 'e', then the fields asked for, each a 4-byte name and a zero length.
        let request = Array("eIPAD\0NAME\0JSON\0VERS\0".utf8)
        var target = sockaddr_in()
        target.sin_family = sa_family_t(AF_INET)
        target.sin_port = UInt16(3483).bigEndian
        target.sin_addr.s_addr = INADDR_BROADCAST
        let sent = request.withUnsafeBytes { bytes in
            withUnsafePointer(to: &target) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    sendto(fd, bytes.baseAddress!, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard sent == request.count else { throw failure("sendto (discovery broadcast)") }
        var buffer = [UInt8](repeating: 0, count: 1500)
        var from = sockaddr_in()
        var fromLength = socklen_t(MemoryLayout<sockaddr_in>.size)
        var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, Int32(timeout * 1000)) == 1 else { return nil }
        let n = buffer.withUnsafeMutableBytes { bytes in
            withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(fd, bytes.baseAddress!, bytes.count, 0, $0, &fromLength) }
            }
        }
        guard n > 0, buffer[0] == UInt8(ascii: "E") || buffer[0] == UInt8(ascii: "D") else { return nil }
        return from.sin_addr
    }

    private static func failure(_ call: String) -> CoreError {
        .ioError("slimproto: \(call): \(String(cString: strerror(errno)))")
    }
}
