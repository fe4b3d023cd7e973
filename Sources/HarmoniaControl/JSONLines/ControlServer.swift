// The control protocol's transports: stdin/stdout, and a Unix socket with
// any number of clients — specs/control-protocol.md §Transports — each
// client's reader runs on a thread of its own and hands lines to the player's
// main loop; replies and events go from there into the client's bounded
// outbox, which a writer thread per client sends.
import Foundation
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// What a transport hands to the main loop.
public enum ControlMessage: Sendable {
    /// One request line, without its newline.
    case line(ControlClient, [UInt8])
    /// A line longer than `ControlProtocol.maxLineBytes` (discarded up to its newline).
    case tooLong(ControlClient)
    /// The client's input ended (for stdin: no more commands can come).
    case closed(ControlClient)
}

/// One peer: where its lines come from and where its replies and events go.
///
/// The stdin client writes to stdout directly. A socket client never makes
/// the main loop wait: `send` queues the line in a bounded outbox that a
/// writer thread of the client's own sends; a client whose outbox passes
/// `maxOutboxBytes` (it does not read its replies) is dropped. Its input
/// ending (a half-close) does not end its output: the replies to what it
/// sent go out first (`finishWriting`), then the connection closes.
public final class ControlClient: @unchecked Sendable {
    /// The stdin/stdout client, or a socket's.
    public let isStdin: Bool
    /// Replies and events a socket client has not read yet, at most.
    public static let maxOutboxBytes = 1 << 20
    private let lock = ConditionLock()
    // Guarded by `lock`: -1 once closed or dropped.
    private var writeFD: Int32
    // Guarded by `lock`: messages delivered but not yet handled. One: the
    // reader hands the next line to the main loop only once the last one is
    // answered, so a client's backlog waits in its socket, never on the
    // shared main loop ahead of the other clients' requests (round robin).
    private var inFlight = 0
    private static let maxInFlight = 1
    // Guarded by `lock` (socket clients): bytes to send from `outboxStart` on.
    private var outbox: [UInt8] = []
    private var outboxStart = 0
    /// No more lines will be queued: the writer ends once the outbox is sent.
    private var finishing = false
    /// Called once the client's reader and writer have both ended.
    private let onEnd: (@Sendable () -> Void)?
    private var threadsRunning = 0
    /// The stamp of the last event made before the client connected: it is
    /// owed only the events after it (`ControlServer.broadcast(_:stamp:)`).
    public let connectStamp: EventStamp

    public init(writeFD: Int32, isStdin: Bool, connectStamp: EventStamp = .zero, onEnd: (@Sendable () -> Void)? = nil) {
        self.writeFD = writeFD
        self.isStdin = isStdin
        self.connectStamp = connectStamp
        self.onEnd = onEnd
    }

    /// Writes (stdin client) or queues (socket client) one line; false when
    /// the client is gone. Never blocks on a socket client.
    @discardableResult
    public func send(_ text: String) -> Bool {
        var line = text + "\n"
        return lock.withLock {
            guard writeFD >= 0 else { return false }
            if isStdin {
                let ok = line.withUTF8 { Console.writeAll(writeFD, UnsafeRawBufferPointer($0)) }
                if !ok { writeFD = -1 }
                return ok
            }
            let queued = outbox.count - outboxStart
            guard queued + line.utf8.count <= Self.maxOutboxBytes else {
                Console.err("harmonia-play: control client dropped: it did not read its replies (\(queued) bytes waiting)")
                drop()
                return false
            }
            outbox.append(contentsOf: line.utf8)
            lock.broadcast()
            return true
        }
    }

    /// Ends the connection at once: the writer stops, the reader sees the end. Guarded by `lock`.
    private func drop() {
        Glibc.shutdown(writeFD, Int32(SHUT_RDWR))
        writeFD = -1
        outbox = []
        outboxStart = 0
        lock.broadcast()
    }

    /// The client's input ended: its writer ends after sending what is queued.
    public func finishWriting() {
        lock.withLock {
            finishing = true
            lock.broadcast()
        }
    }

    /// Starts the socket client's writer thread. `fd` stays open until both
    /// the reader (which calls `threadEnded` itself) and the writer end.
    public func startWriter(fd: Int32) {
        lock.withLock { threadsRunning = 2 }
        let thread = Thread { [self] in
            nameCurrentThread("control.writer")
            writeLoop(fd)
            threadEnded(fd)
        }
        thread.name = "control-writer"
        thread.start()
    }

    /// One of the socket client's two threads ended; the last closes `fd`.
    public func threadEnded(_ fd: Int32) {
        let last = lock.withLock { () -> Bool in
            threadsRunning -= 1
            return threadsRunning == 0
        }
        guard last else { return }
        close(fd)
        onEnd?()
    }

    private func writeLoop(_ fd: Int32) {
        var chunk = [UInt8]()
        while true {
            let more = lock.withLock { () -> Bool in
                while writeFD >= 0 && outboxStart == outbox.count && !finishing { lock.wait() }
                guard writeFD >= 0, outboxStart < outbox.count else { return false }
                chunk.removeAll(keepingCapacity: true)
                chunk.append(contentsOf: outbox[outboxStart..<min(outbox.count, outboxStart + 65_536)])
                return true
            }
            guard more else { break }
            let sent = chunk.withUnsafeBytes { Self.sendAll(fd, $0) }
            let stop = lock.withLock { () -> Bool in
                guard sent, writeFD >= 0 else {
                    if writeFD >= 0 { drop() }  // gone: the reader sees the end
                    return true
                }
                outboxStart += chunk.count
                lock.broadcast()  // a drain may wait for this
                if outboxStart == outbox.count || outboxStart > Self.maxOutboxBytes {
                    outbox.removeFirst(outboxStart)
                    outboxStart = 0
                }
                return false
            }
            if stop { break }
        }
        // Everything is sent (or the client is gone): end the connection.
        lock.withLock {
            if writeFD >= 0 { drop() }
        }
    }

    /// Waits until everything queued is sent, the client is gone, or
    /// `deadline` (monotonic seconds) passes: the last replies (a `quit`'s)
    /// go out before the process exits.
    public func drain(until deadline: Double) {
        lock.withLock {
            while writeFD >= 0 && outboxStart < outbox.count {
                let left = deadline - monotonicSeconds()
                if left <= 0 { return }
                lock.wait(seconds: left)
            }
        }
    }

    /// Waits until fewer than `maxInFlight` messages of this client await handling; counts one more.
    public func acquireSlot() {
        lock.withLock {
            while inFlight >= Self.maxInFlight { lock.wait() }
            inFlight += 1
        }
    }

    /// One message was handled.
    public func releaseSlot() {
        lock.withLock {
            inFlight -= 1
            lock.broadcast()
        }
    }

    /// `send` with MSG_NOSIGNAL: a client that went away is an error, not SIGPIPE.
    private static func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }
}

/// Where requests come from.
public enum ControlTransport: Equatable {
    case stdin
    case unix(path: String)

    /// `stdin` or `unix:PATH`.
    public init?(argument: String) {
        if argument == "stdin" { self = .stdin }
        else if argument.hasPrefix("unix:"), argument.count > 5 { self = .unix(path: String(argument.dropFirst(5))) }
        else { return nil }
    }
}

public final class ControlServer: @unchecked Sendable {
    public let transport: ControlTransport
    private let lock = ConditionLock()
    // Guarded by `lock`.
    /// By descriptor (the stdin client under 0).
    private var clients: [Int32: ControlClient] = [:]
    private var listenFD: Int32 = -1
    private var post: (@Sendable (ControlMessage) -> Void)?
    private var stampSource: @Sendable () -> EventStamp = { .zero }

    public init(transport: ControlTransport) {
        self.transport = transport
    }

    /// Creates the socket (connections wait in its backlog until `start`).
    public func open() throws(CoreError) {
        guard case .unix(let path) = transport else { return }
        let fd = try Self.listen(path: path)
        lock.withLock { listenFD = fd }
    }

    /// Starts the reader threads (and accepting, after `open`); `post`
    /// receives every line in order per client; each client accepted notes
    /// `stamp()` (the application's `EventInbox.lastStamp`) as it connects.
    public func start(stamp: @escaping @Sendable () -> EventStamp = { .zero },
                      post: @escaping @Sendable (ControlMessage) -> Void) {
        lock.withLock {
            self.post = post
            self.stampSource = stamp
        }
        switch transport {
        case .stdin:
            let client = ControlClient(writeFD: 1, isStdin: true)
            lock.withLock { clients[0] = client }
            startReader(fd: 0, client: client)
        case .unix:
            let fd = lock.withLock { listenFD }
            guard fd >= 0 else { return }
            let thread = Thread { [self] in nameCurrentThread("control.accept"); acceptLoop(fd) }
            thread.name = "control-accept"
            thread.start()
        }
    }

    /// Sends `text` to every client; with a `stamp` (an event's), only to
    /// the clients connected before it happened.
    public func broadcast(_ text: String, stamp: EventStamp? = nil) {
        for client in lock.withLock({ Array(clients.values) }) {
            if let stamp, stamp <= client.connectStamp { continue }
            client.send(text)
        }
    }

    /// Stops listening and removes the socket file, after giving each
    /// client up to `drainSeconds` (in all) to receive what is queued for it.
    public func shutdown(drainSeconds: Double = 1) {
        guard case .unix(let path) = transport else { return }
        let deadline = monotonicSeconds() + drainSeconds
        for client in lock.withLock({ Array(clients.values) }) { client.drain(until: deadline) }
        let fd = lock.withLock { () -> Int32 in
            defer { listenFD = -1 }
            return listenFD
        }
        if fd >= 0 {
            Glibc.shutdown(fd, Int32(SHUT_RDWR))
            close(fd)
            unlink(path)
        }
    }

    // MARK: - Reading

    private func startReader(fd: Int32, client: ControlClient) {
        let thread = Thread { [self] in
            readLines(fd: fd, client: client)
            // After the client's last line: its replies go out, then it closes
            // (ControlSession calls finishWriting). Stdout stays open for events.
            deliver(.closed(client), from: client)
            if !client.isStdin { client.threadEnded(fd) }
        }
        thread.name = "control-reader"
        thread.start()
    }

    private func deliver(_ message: ControlMessage, from client: ControlClient) {
        client.acquireSlot()
        lock.withLock { post }?(message)
    }

    /// Reads `fd` to its end, delivering each line (a final line without a
    /// newline too). Blank lines are ignored.
    private func readLines(fd: Int32, client: ControlClient) {
        var buffer = [UInt8](repeating: 0, count: 65536)
        var line: [UInt8] = []
        var discarding = false  // inside a line that was too long
        func finish() {
            if discarding {
                discarding = false
            } else {
                if line.last == UInt8(ascii: "\r") { line.removeLast() }
                if line.contains(where: { !($0 == 0x20 || $0 == 0x09 || $0 == 0x0D) }) {
                    deliver(.line(client, line), from: client)
                }
            }
            line.removeAll(keepingCapacity: line.count < 65536)
        }
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            var start = 0
            for i in 0..<n where buffer[i] == UInt8(ascii: "\n") {
                if !discarding { line.append(contentsOf: buffer[start..<i]) }
                finish()
                start = i + 1
            }
            if !discarding {
                line.append(contentsOf: buffer[start..<n])
                if line.count > ControlProtocol.maxLineBytes {
                    discarding = true
                    line.removeAll()
                    deliver(.tooLong(client), from: client)
                }
            }
        }
        if !line.isEmpty || discarding { finish() }
    }

    // MARK: - The Unix socket

    /// Forgets a client whose connection closed (its descriptor number may be reused).
    private func remove(fd: Int32) {
        lock.withLock { _ = clients.removeValue(forKey: fd) }
    }

    private func acceptLoop(_ listenFD: Int32) {
        while true {
            let fd = accept(listenFD, nil, nil)
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                return  // closed by shutdown()
            }
            let client = lock.withLock { () -> ControlClient in
                let client = ControlClient(writeFD: fd, isStdin: false, connectStamp: stampSource(),
                                           onEnd: { [weak self] in self?.remove(fd: fd) })
                clients[fd] = client
                return client
            }
            client.startWriter(fd: fd)
            startReader(fd: fd, client: client)
        }
    }

    /// A listening socket at `path`, mode 0600; a stale socket file there is replaced.
    public static func listen(path: String) throws(CoreError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let bytes = Array(path.utf8)
        guard bytes.count < capacity else {
            throw .invalidArgument("--control unix:\(path): the path is longer than \(capacity - 1) bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        var info = stat()
        if lstat(path, &info) == 0 {
            guard (info.st_mode & S_IFMT) == S_IFSOCK else {
                throw .invalidArgument("--control unix:\(path): the path exists and is not a socket")
            }
            // Stale if nobody accepts on it.
            let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            let live = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(probe, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) == 0 }
            }
            close(probe)
            if live { throw .invalidArgument("--control unix:\(path): another player is listening there") }
            unlink(path)
        }
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw .ioError("--control unix:\(path): socket: \(String(cString: strerror(errno)))") }
        let oldMask = umask(0o177)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        let bindErrno = errno
        umask(oldMask)
        guard bound == 0 else {
            close(fd)
            let category: CoreError.Category = bindErrno == ENOENT ? .notFound : .ioError
            throw CoreError(category, "--control unix:\(path): \(String(cString: strerror(bindErrno)))")
        }
        chmod(path, 0o600)
        guard Glibc.listen(fd, SOMAXCONN) == 0 else {
            close(fd)
            unlink(path)
            throw .ioError("--control unix:\(path): listen: \(String(cString: strerror(errno)))")
        }
        return fd
    }
}

