// SnapcastSocket — specs/snapcast.md §Faults
// Every socket call of the module lives in this file: a TCP client of
// snapserver's TCP source, non-blocking, never raising SIGPIPE.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// One TCP connection to snapserver's TCP source (server mode). Owned by
/// one thread at a time: made by `connect`, then used and closed by the
/// writer thread. No call blocks longer than its timeout.
struct SnapcastSocket {
    private(set) var fd: Int32

    /// Why a connection could not be made or went away, for the event.
    struct Failure: Error, CustomStringConvertible {
        let function: String
        let code: Int32
        var description: String { "\(function): \(String(cString: strerror(code)))" }
    }

    /// Connects to `host:port` within `timeout` seconds per address (the
    /// name resolved by getaddrinfo, every address tried in turn).
    static func connect(host: String, port: UInt16, timeout: Double) -> Result<SnapcastSocket, Failure> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &list)
        guard resolved == 0, let list else {
            return .failure(Failure(function: "getaddrinfo(\(host)): \(String(cString: gai_strerror(resolved)))", code: 0))
        }
        defer { freeaddrinfo(list) }
        var lastFailure = Failure(function: "connect", code: ECONNREFUSED)
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let address = entry {
            entry = address.pointee.ai_next
            let fd = socket(address.pointee.ai_family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
                            | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { lastFailure = Failure(function: "socket", code: errno); continue }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            if Glibc.connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 {
                return .success(SnapcastSocket(fd: fd))
            }
            guard errno == EINPROGRESS else {
                lastFailure = Failure(function: "connect", code: errno)
                Glibc.close(fd)
                continue
            }
            var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ready = poll(&poller, 1, Int32(timeout * 1000))
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            if ready == 1, getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) == 0, error == 0 {
                return .success(SnapcastSocket(fd: fd))
            }
            lastFailure = Failure(function: "connect", code: ready == 0 ? ETIMEDOUT : (error != 0 ? error : errno))
            Glibc.close(fd)
        }
        return .failure(lastFailure)
    }

    /// Sends what the socket takes now (MSG_DONTWAIT, MSG_NOSIGNAL: a
    /// closed peer is an error, not a SIGPIPE). Returns the bytes sent (0
    /// when the socket is full), or the failure.
    func send(_ bytes: UnsafeRawPointer, count: Int) -> Result<Int, Failure> {
        var sent = 0
        while sent < count {
            let n = Glibc.send(fd, bytes + sent, count - sent, Int32(MSG_DONTWAIT) | Int32(MSG_NOSIGNAL))
            if n > 0 { sent += n; continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { break }
            return .failure(Failure(function: "send", code: n < 0 ? errno : EPIPE))
        }
        return .success(sent)
    }

    /// Whether the peer has closed the connection (snapserver never sends
    /// on a TCP source, so anything readable is its end or an error).
    func peerClosed() -> Failure? {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_DONTWAIT) | Int32(MSG_PEEK))
        if n == 0 { return Failure(function: "recv (snapserver closed the connection)", code: ECONNRESET) }
        if n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { return Failure(function: "recv", code: errno) }
        return nil
    }

    /// Waits until the socket can take more bytes, at most `milliseconds`.
    func waitWritable(milliseconds: Int32) {
        var poller = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
        _ = poll(&poller, 1, milliseconds)
    }

    mutating func close() {
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
    }
}
