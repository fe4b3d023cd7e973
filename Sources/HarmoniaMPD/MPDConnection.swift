// One client connection — specs/mpd-protocol.md §Connections
//
// A reader thread reads lines and runs each command (MPDConnection+Lines);
// answers, and idle notifications posted from any thread, go into a bounded
// outbox that a writer thread sends. The discipline is harmonia-play's
// control socket's (Sources/harmonia-play/Control/ControlServer.swift).
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HarmoniaCore

/// What the server shares with every connection. Immutable.
final class MPDDispatch: Sendable {
    let configuration: MPDServerConfiguration
    let handler: any MPDCommandHandler
    /// By name: the row and whether the connection answers it itself.
    let table: [String: (info: MPDCommandInfo, builtin: Bool)]
    /// Every row, sorted by name (`commands`, `notcommands`).
    let sorted: [MPDCommandInfo]

    /// The commands a connection answers itself, as MPD's table has them.
    static let builtins = [
        MPDCommandInfo("binarylimit", [], .exactly(1)),
        MPDCommandInfo("close", [], .unchecked),
        MPDCommandInfo("commands", [], .none),
        MPDCommandInfo("idle", .read, .range(0, nil)),
        MPDCommandInfo("notcommands", [], .none),
        MPDCommandInfo("password", [], .exactly(1)),
        MPDCommandInfo("ping", [], .none),
        MPDCommandInfo("tagtypes", [], .range(0, nil)),
    ]

    init(configuration: MPDServerConfiguration, handler: any MPDCommandHandler) {
        self.configuration = configuration
        self.handler = handler
        var table: [String: (info: MPDCommandInfo, builtin: Bool)] = [:]
        for info in handler.commands { table[info.name] = (info, false) }
        for info in Self.builtins { table[info.name] = (info, true) }  // ours win
        self.table = table
        self.sorted = table.values.map(\.info).sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }
}

/// One client. Created by the server's accept thread; `start` runs its two
/// threads; the last of them to end closes the socket and calls `onEnd`.
/// A command's long answer is streamed (`MPDResponseSink`): the reader
/// thread waits while more than `streamHighWaterBytes` are unsent.
final class MPDConnection: MPDResponseSink, @unchecked Sendable {
    /// Unsent bytes above which a streaming command waits for the client.
    static let streamHighWaterBytes = 256 * 1024

    let id: Int
    let peer: String
    let dispatch: MPDDispatch
    /// The stamp of the last change made before this client was accepted
    /// (`MPDServer.notify(_:stamp:)`): changes up to it are not its own.
    let connectStamp: UInt64
    private let fd: Int32
    private let onEnd: @Sendable (MPDConnection) -> Void

    enum State { case open, finishing, closed }

    let lock = ConditionLock()
    // Guarded by `lock`.
    private var state = State.open
    private var outbox: [UInt8] = []
    private var outboxStart = 0
    /// Bytes the writer has sent so far: a waiting stream sees progress.
    private var sentBytes = 0
    private var threadsRunning = 0
    /// Idle: waiting for one of `idleSubscriptions`; `pendingChanges` are the
    /// changes since the last idle answer (MPD's idle_flags).
    private var idleWaiting = false
    private var idleSubscriptions: MPDSubsystems = []
    private var pendingChanges: MPDSubsystems = []

    // Reader thread only (MPDConnection+Lines).
    var permissions: MPDPermissions
    var clientTags = MPDTagMask.all
    var binaryLimit = MPDProtocol.defaultBinaryLimit
    var commandList: [[UInt8]]?
    var commandListOK = false
    var commandListBytes = 0

    init(id: Int, fd: Int32, peer: String, dispatch: MPDDispatch, connectStamp: UInt64,
         onEnd: @escaping @Sendable (MPDConnection) -> Void) {
        self.id = id
        self.connectStamp = connectStamp
        self.fd = fd
        self.peer = peer
        self.dispatch = dispatch
        self.onEnd = onEnd
        self.permissions = dispatch.configuration.initialPermissions
    }

    /// Queues the greeting and starts the reader and writer threads.
    func start() {
        lock.withLock { threadsRunning = 2 }
        _ = enqueue(Array("OK MPD \(dispatch.configuration.version)\n".utf8))
        let writer = Thread { [self] in
            nameCurrentThread("mpd.writer")
            writeLoop()
            threadEnded()
        }
        writer.name = "mpd-writer"
        writer.start()
        let reader = Thread { [self] in
            nameCurrentThread("mpd.reader")
            readLoop()
            dispatch.handler.connectionClosed(clientID: id)
            threadEnded()
        }
        reader.name = "mpd-reader"
        reader.start()
    }

    // MARK: - Any thread

    /// Subsystems changed: remembered, and answered at once if the client
    /// idles on one of them. Never blocks (the answer is queued).
    func post(_ changes: MPDSubsystems) {
        lock.withLock {
            guard state == .open else { return }
            pendingChanges.formUnion(changes)
            if idleWaiting { answerIdleLocked() }
        }
    }

    /// Ends the connection at once, discarding unsent output.
    func drop() {
        lock.withLock { dropLocked() }
    }

    /// Bytes queued and not yet sent.
    var queuedBytes: Int { lock.withLock { outbox.count - outboxStart } }

    /// Queues `bytes`; false (and the client dropped) when the outbox would
    /// pass `maxOutputBytes`, or when the connection is already closing.
    @discardableResult
    func enqueue(_ bytes: [UInt8]) -> Bool {
        lock.withLock { enqueueLocked(bytes) }
    }

    /// `MPDResponseSink`: waits (reader thread) while the client has more
    /// than `streamHighWaterBytes` unsent, then queues `bytes`; false when
    /// the connection is closing or closed (the client went, or was dropped),
    /// and when the client read nothing for `stalledClientSeconds` (it is
    /// then dropped).
    func deliver(_ bytes: [UInt8]) -> Bool {
        lock.withLock {
            let stall = dispatch.configuration.stalledClientSeconds
            var deadline = monotonicSeconds() + stall
            var seen = sentBytes
            while state == .open && outbox.count - outboxStart > Self.streamHighWaterBytes {
                let left = deadline - monotonicSeconds()
                guard left > 0 else {
                    dropLocked()
                    return false
                }
                lock.wait(seconds: left)
                if sentBytes != seen {
                    seen = sentBytes
                    deadline = monotonicSeconds() + stall
                }
            }
            return enqueueLocked(bytes)
        }
    }

    // MARK: - Idle (reader thread)

    /// `idle`: waits for `subscriptions`; answers at once when one of them
    /// changed since the last answer.
    func enterIdle(_ subscriptions: MPDSubsystems) {
        lock.withLock {
            idleWaiting = true
            idleSubscriptions = subscriptions
            answerIdleLocked()
        }
    }

    /// `noidle`: ends a wait with an empty answer; nothing when the client
    /// was not waiting (it already has its answer). Returns whether it waited.
    func leaveIdle() {
        lock.withLock {
            guard idleWaiting else { return }
            idleWaiting = false
            _ = enqueueLocked(Array("OK\n".utf8))
        }
    }

    var isIdle: Bool { lock.withLock { idleWaiting } }

    /// Waits `seconds` (a wrong password's delay); ends early when the connection closes.
    func pause(seconds: Double) {
        let deadline = monotonicSeconds() + seconds
        lock.withLock {
            while state == .open {
                let left = deadline - monotonicSeconds()
                if left <= 0 { break }
                lock.wait(seconds: left)
            }
        }
    }

    // MARK: - Guarded by `lock`

    private func answerIdleLocked() {
        let changed = pendingChanges.intersection(idleSubscriptions)
        guard !changed.isEmpty else { return }
        var text = ""
        for name in changed.memberNames { text += "changed: \(name)\n" }
        text += "OK\n"
        pendingChanges = []  // as MPD: every flag, subscribed or not
        idleWaiting = false
        _ = enqueueLocked(Array(text.utf8))
    }

    private func enqueueLocked(_ bytes: [UInt8]) -> Bool {
        guard state == .open else { return false }
        var start = 0
        if outboxStart == outbox.count {
            // Nothing queued or in the writer's hands: send what the socket
            // takes at once (never waiting), and queue only the rest — an
            // answer does not wait for the writer thread to wake.
            guard let sent = bytes.withUnsafeBytes({ MPDSocket.sendNow(fd, $0) }) else {
                dropLocked()
                return false
            }
            start = sent
            if start == bytes.count { return true }
        }
        guard outbox.count - outboxStart + bytes.count - start <= dispatch.configuration.maxOutputBytes else {
            dropLocked()
            return false
        }
        outbox.append(contentsOf: bytes[start...])
        lock.broadcast()
        return true
    }

    private func dropLocked() {
        guard state != .closed else { return }
        state = .closed
        MPDSocket.shutdownBoth(fd)
        outbox = []
        outboxStart = 0
        lock.broadcast()
    }

    // MARK: - Threads

    /// The writer ends after sending what is queued; then the connection closes.
    func finish() {
        lock.withLock {
            if state == .open { state = .finishing }
            lock.broadcast()
        }
    }

    private func readLoop() {
        var lines = MPDLineBuffer(maxLineBytes: dispatch.configuration.maxLineBytes)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        reading: while true {
            let n = buffer.withUnsafeMutableBytes { MPDSocket.read(fd, into: $0) }
            if n == 0 { break }
            lines.append(buffer[0..<n])
            while let event = lines.next() {
                guard case .line(let line) = event else {
                    drop()  // more than maxLineBytes without a newline
                    break reading
                }
                switch processLine(line) {
                case .proceed: continue
                case .finish: break reading
                case .drop:
                    drop()
                    break reading
                }
            }
            if lock.withLock({ state != .open }) { break }
        }
        finish()
    }

    private func writeLoop() {
        var chunk = [UInt8]()
        while true {
            let more = lock.withLock { () -> Bool in
                while state == .open && outboxStart == outbox.count { lock.wait() }
                guard state != .closed, outboxStart < outbox.count else { return false }
                chunk.removeAll(keepingCapacity: true)
                chunk.append(contentsOf: outbox[outboxStart..<min(outbox.count, outboxStart + 65_536)])
                return true
            }
            guard more else { break }
            let sent = chunk.withUnsafeBytes { MPDSocket.sendAll(fd, $0) }
            let stop = lock.withLock { () -> Bool in
                guard sent, state != .closed else {
                    dropLocked()
                    return true
                }
                outboxStart += chunk.count
                sentBytes &+= chunk.count
                if outboxStart == outbox.count || outboxStart > 1 << 20 {
                    outbox.removeFirst(outboxStart)
                    outboxStart = 0
                }
                lock.broadcast()  // a streaming command may wait for room
                return false
            }
            if stop { break }
        }
        drop()  // everything sent (or the peer is gone): the reader sees the end
    }

    private func threadEnded() {
        let last = lock.withLock { () -> Bool in
            threadsRunning -= 1
            return threadsRunning == 0
        }
        guard last else { return }
        MPDSocket.closeDescriptor(fd)
        onEnd(self)
    }
}

