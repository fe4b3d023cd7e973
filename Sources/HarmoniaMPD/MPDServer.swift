// The TCP server — specs/mpd-protocol.md §Transport, §Connections
//
// An accept thread; per connection a reader thread (which runs the
// commands, so a slow command delays only its own client) and a writer
// thread (so a client that does not read delays nobody: its bounded outbox
// fills and it is dropped). Threads rather than a poll loop: the handler's
// commands may block on the application layer and the library, and the
// client limit bounds the threads (two per client).
import Foundation
import HarmoniaCore

/// An MPD-protocol server on one TCP address.
///
/// Threads: every method may be called from any thread. `notify` never
/// blocks on a client. `shutdown` waits (bounded) for the connections' threads.
public final class MPDServer: @unchecked Sendable {
    public let configuration: MPDServerConfiguration
    private let dispatch: MPDDispatch
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var listener: Int32 = -1
    private var boundPort: UInt16 = 0
    private var connections: [Int: MPDConnection] = [:]
    private var nextID = 0
    private var acceptRunning = false
    private var stopped = false
    /// Where a new connection's stamp comes from (`notify(_:stamp:)`).
    private var stampSource: @Sendable () -> UInt64 = { 0 }

    /// Reads `handler.commands` once; does not bind yet (see `start`).
    public init(configuration: MPDServerConfiguration, handler: any MPDCommandHandler) {
        self.configuration = configuration
        self.dispatch = MPDDispatch(configuration: configuration, handler: handler)
    }

    /// Binds (SO_REUSEADDR) and starts accepting on a thread of its own.
    /// - Throws: `.invalidArgument` (the host is not a numeric address),
    ///   `.ioError` (bind or listen failed: the port is in use, …),
    ///   `.invalidState` (started twice, or after `shutdown`).
    public func start() throws(CoreError) {
        try lock.withLock { () throws(CoreError) in
            guard listener < 0, !stopped else { throw .invalidState("MPD server: already started") }
        }
        let (fd, port) = try MPDSocket.listen(host: configuration.host, port: configuration.port)
        lock.withLock {
            listener = fd
            boundPort = port
            acceptRunning = true
        }
        let thread = Thread { [self] in
            nameCurrentThread("mpd.accept")
            acceptLoop(fd)
            lock.withLock {
                acceptRunning = false
                lock.broadcast()
            }
        }
        thread.name = "mpd-accept"
        thread.start()
    }

    /// The port bound by `start` (the ephemeral one when configured with 0); 0 before.
    public var port: UInt16 { lock.withLock { boundPort } }

    /// Connections open now.
    public var connectionCount: Int { lock.withLock { connections.count } }

    /// Waits until `condition(connectionCount)` holds or `timeout` seconds
    /// pass; returns whether it held. For owners and tests that must see a
    /// client come or go (a dropped client is removed once its threads end).
    public func waitForConnections(timeout: Double, until condition: (Int) -> Bool) -> Bool {
        let deadline = monotonicSeconds() + timeout
        return lock.withLock {
            while !condition(connections.count) {
                let left = deadline - monotonicSeconds()
                if left <= 0 { return false }
                lock.wait(seconds: left)
            }
            return true
        }
    }

    /// Sets where each new connection reads the stamp of the last change
    /// made before it came (the application's `EventInbox.lastStamp`); call
    /// before `start`. Without it every connection has stamp 0.
    public func setStampSource(_ source: @escaping @Sendable () -> UInt64) {
        lock.withLock { stampSource = source }
    }

    /// Tells every client that `changed` subsystems changed (MPD's idle
    /// events): an idling client subscribed to one of them is answered now;
    /// the others see them at their next `idle`. Any thread; never blocks on
    /// a client (answers are queued).
    ///
    /// - Parameter stamp: when the change happened (see `setStampSource`):
    ///   only clients connected before it hear of it, as MPD tells a client
    ///   only of changes made after it connected. nil: the change is
    ///   happening now (every client connected now hears of it).
    public func notify(_ changed: MPDSubsystems, stamp: UInt64? = nil) {
        guard !changed.isEmpty else { return }
        for connection in lock.withLock({ Array(connections.values) }) {
            if let stamp, stamp <= connection.connectStamp { continue }
            connection.post(changed)
        }
    }

    /// Stops accepting, drops every client, and waits up to `timeout`
    /// seconds for their threads (a command still running in the handler
    /// finishes first; its answer is discarded). Idempotent.
    public func shutdown(timeout: Double = 5) {
        let (fd, open) = lock.withLock { () -> (Int32, [MPDConnection]) in
            stopped = true
            defer { listener = -1 }
            return (listener, Array(connections.values))
        }
        if fd >= 0 { MPDSocket.shutdownBoth(fd) }
        for connection in open { connection.drop() }
        let deadline = monotonicSeconds() + timeout
        let acceptEnded = lock.withLock { () -> Bool in
            while acceptRunning || !connections.isEmpty {
                let left = deadline - monotonicSeconds()
                if left <= 0 { break }
                lock.wait(seconds: left)
            }
            return !acceptRunning
        }
        // The accept thread uses the descriptor until it returns.
        if fd >= 0 && acceptEnded { MPDSocket.closeDescriptor(fd) }
    }

    private func acceptLoop(_ listener: Int32) {
        while let (fd, peer) = MPDSocket.accept(listener) {
            let connection = lock.withLock { () -> MPDConnection? in
                // Full (or stopping): closed without a greeting, as MPD does.
                guard !stopped, connections.count < configuration.maxClients else { return nil }
                let connection = MPDConnection(id: nextID, fd: fd, peer: peer, dispatch: dispatch,
                                               connectStamp: stampSource()) { [weak self] ended in
                    self?.remove(ended)
                }
                nextID += 1
                connections[connection.id] = connection
                lock.broadcast()
                return connection
            }
            guard let connection else {
                MPDSocket.closeDescriptor(fd)
                continue
            }
            connection.start()
        }
    }

    private func remove(_ connection: MPDConnection) {
        lock.withLock {
            connections.removeValue(forKey: connection.id)
            lock.broadcast()
        }
    }
}
