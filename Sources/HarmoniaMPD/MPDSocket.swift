// TCP calls — specs/mpd-protocol.md §Transport
//
// Every socket call of the module, each failure named after the C
// function that failed and mapped to CoreError.
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaCore

enum MPDSocket {
    /// A listening TCP socket on the numeric address `host` (IPv4 or IPv6)
    /// and `port` (0: ephemeral), with SO_REUSEADDR (a restarted server binds
    /// at once) and, for IPv6, IPV6_V6ONLY (as MPD). Returns the descriptor
    /// and the bound port.
    /// - Throws: `.invalidArgument` for an address that is not numeric,
    ///   `.ioError` naming the call that failed (bind: address in use, …).
    static func listen(host: String, port: UInt16) throws(CoreError) -> (fd: Int32, port: UInt16) {
        var storage = sockaddr_storage()
        let length: socklen_t
        let family: Int32
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            family = AF_INET
            withUnsafeMutableBytes(of: &storage) { raw in
                let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                address.pointee.sin_family = sa_family_t(AF_INET)
                address.pointee.sin_port = port.bigEndian
                address.pointee.sin_addr = v4
            }
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            family = AF_INET6
            withUnsafeMutableBytes(of: &storage) { raw in
                let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                address.pointee.sin6_family = sa_family_t(AF_INET6)
                address.pointee.sin6_port = port.bigEndian
                address.pointee.sin6_addr = v6
            }
            length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        } else {
            throw .invalidArgument("MPD server: \"\(host)\" is not a numeric IPv4 or IPv6 address")
        }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw failure("socket") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET6 {
            setsockopt(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        let bound = withUnsafePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else {
            let error = failure("bind \(host) port \(port)")
            close(fd)
            throw error
        }
        guard Glibc.listen(fd, SOMAXCONN) == 0 else {
            let error = failure("listen")
            close(fd)
            throw error
        }
        var actual = sockaddr_storage()
        var actualLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &actualLength) }
        }
        return (fd, boundPort(actual))
    }

    /// Accepts one connection (blocking); nil once the listener is shut down.
    /// Returns the descriptor (close-on-exec) and the peer as text.
    static func accept(_ listener: Int32) -> (fd: Int32, peer: String)? {
        while true {
            var peer = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(listener, $0, &length) }
            }
            if fd >= 0 {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)  // accept4 is not visible to Swift
                // Answers are sent in whole chunks already (MPDResponseWriter):
                // Nagle's rule would only hold a long answer's tail back until
                // the client's delayed ACK, 40 ms later.
                var one: Int32 = 1
                _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                return (fd, describe(peer))
            }
            switch errno {
            case EINTR, ECONNABORTED, EPROTO: continue
            // Out of descriptors or memory: not the listener's fault; the
            // pending connection stays queued. Back off briefly.
            case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                var pause = timespec(tv_sec: 0, tv_nsec: 50_000_000)
                nanosleep(&pause, nil)
                continue
            default: return nil
            }
        }
    }

    /// Reads what is there (blocking); 0 at the end or on an error.
    static func read(_ fd: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        while true {
            let n = recv(fd, buffer.baseAddress, buffer.count, 0)
            if n < 0 && errno == EINTR { continue }
            return max(n, 0)
        }
    }

    /// Sends all of `bytes` with MSG_NOSIGNAL (a vanished peer is an error,
    /// not SIGPIPE); false when the peer is gone.
    static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }

    /// Sends what the socket takes now without waiting (MSG_DONTWAIT): the
    /// bytes sent (0 when its buffer is full), or nil when the peer is gone.
    static func sendNow(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int? {
        var offset = 0
        while offset < bytes.count {
            let n = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT))
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { return offset }
                return nil
            }
            offset += n
        }
        return offset
    }

    /// Ends both directions: a thread blocked in recv/send/accept on `fd` returns.
    static func shutdownBoth(_ fd: Int32) {
        _ = Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    static func closeDescriptor(_ fd: Int32) {
        _ = close(fd)
    }

    private static func failure(_ call: String) -> CoreError {
        .ioError("MPD server: \(call): \(cText(strerror(errno)))")
    }

    private static func boundPort(_ address: sockaddr_storage) -> UInt16 {
        var copy = address
        return withUnsafeBytes(of: &copy) { raw in
            if Int32(address.ss_family) == AF_INET6 {
                return UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
            }
            return UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
        }
    }

    /// "1.2.3.4:5" or "[::1]:5".
    private static func describe(_ address: sockaddr_storage) -> String {
        var copy = address
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        return withUnsafeBytes(of: &copy) { raw -> String in
            if Int32(address.ss_family) == AF_INET6 {
                var a = raw.load(as: sockaddr_in6.self)
                inet_ntop(AF_INET6, &a.sin6_addr, &text, socklen_t(text.count))
                return "[\(cText(text))]:\(UInt16(bigEndian: a.sin6_port))"
            }
            var a = raw.load(as: sockaddr_in.self)
            inet_ntop(AF_INET, &a.sin_addr, &text, socklen_t(text.count))
            return "\(cText(text)):\(UInt16(bigEndian: a.sin_port))"
        }
    }
}

/// A NUL-terminated C string as text.
private func cText(_ pointer: UnsafePointer<CChar>?) -> String {
    guard let pointer else { return "" }
    return String(decoding: UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)), as: UTF8.self)
}

private func cText(_ buffer: [CChar]) -> String {
    buffer.withUnsafeBufferPointer { cText($0.baseAddress) }
}
