// The connection to the server: discovery, connect, HELO, frames in,
// reconnect with back-off — specs/slimproto.md §Connection
import Foundation
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// Keeps one TCP connection to a slimproto server, making it again when it
/// ends. Frames read are handed to `onCommand` on the connection's thread;
/// `send` writes from any thread.
///
/// Threads: its own reader thread (`slimproto.conn`); `send`, `switchServer`
/// and `stop` from any thread.
final class SlimprotoConnection: @unchecked Sendable {
    /// Where to connect: nil host means discovery by UDP broadcast.
    struct Target: Sendable {
        var host: String?
        var port: UInt16
    }

    /// Seconds the server may send nothing before the connection is
    /// considered dead (servers send `strm t` every 5 s or so).
    static let silenceLimit = 35.0
    /// Back-off between attempts: doubles from the first to the last.
    static let firstRetry = 0.25
    static let lastRetry = 4.0
    /// Malformed frames logged per connection; the rest are counted.
    static let loggedMalformed = 20

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var target: Target
    private var fd: Int32 = -1
    private var stopped = false
    private var running = false
    private var everConnected = false
    /// The server's address of the connection now (for `strm` with address 0).
    private var serverAddress: in_addr?

    private let hello: @Sendable (_ reconnect: Bool) -> [[UInt8]]
    private let onCommand: @Sendable (SlimprotoCommand) -> Void
    private let onConnection: @Sendable (_ connected: Bool) -> Void
    private let log: @Sendable (String) -> Void

    /// - Parameters:
    ///   - hello: the frames to send first on each connection (HELO, SETD).
    ///   - onCommand: each frame read, on the connection's thread.
    ///   - onConnection: true once HELO is sent, false when the connection ends.
    ///   - log: one line for standard error.
    init(target: Target, hello: @escaping @Sendable (Bool) -> [[UInt8]],
         onCommand: @escaping @Sendable (SlimprotoCommand) -> Void,
         onConnection: @escaping @Sendable (Bool) -> Void,
         log: @escaping @Sendable (String) -> Void) {
        self.target = target
        self.hello = hello
        self.onCommand = onCommand
        self.onConnection = onConnection
        self.log = log
    }

    /// Starts the connection's thread.
    func start() {
        lock.withLock { running = true }
        let thread = Thread { [self] in
            nameCurrentThread("slimproto.conn")
            run()
            lock.withLock {
                running = false
                lock.broadcast()
            }
        }
        thread.start()
    }

    /// Ends the connection and its thread (waits up to 2 s for it).
    func stop() {
        lock.withLock {
            stopped = true
            if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
            lock.broadcast()
            let deadline = Date().addingTimeInterval(2)
            while running && Date() < deadline { lock.wait(seconds: 0.1) }
        }
    }

    /// Writes a frame; dropped when not connected. Any thread.
    func send(_ frame: [UInt8]) {
        lock.withLock {
            guard fd >= 0 else { return }
            if !SlimprotoSocket.sendAll(fd, frame) { shutdown(fd, Int32(SHUT_RDWR)) }  // the reader sees the end
        }
    }

    /// Connects to `address` (same port) from now on (`serv`).
    func switchServer(to address: String) {
        lock.withLock {
            target.host = address
            if fd >= 0 { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    /// The address of the server connected to now, dotted.
    var serverAddressText: String? { lock.withLock { serverAddress.map(SlimprotoSocket.text) } }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func run() {
        var retry = Self.firstRetry
        var lastFailure = ""
        while !isStopped {
            let target = lock.withLock { self.target }
            do throws(CoreError) {
                let address: in_addr
                if let host = target.host {
                    address = try SlimprotoSocket.resolve(host)
                } else {
                    guard let found = try SlimprotoSocket.discover(timeout: 2) else {
                        throw .notFound("slimproto: no server answered the discovery broadcast on UDP 3483")
                    }
                    address = found
                }
                let socket = try SlimprotoSocket.connect(to: address, port: target.port, timeout: 5)
                let reconnect = lock.withLock { () -> Bool in
                    fd = socket
                    serverAddress = address
                    defer { everConnected = true }
                    return everConnected
                }
                log("slimproto: connected to \(SlimprotoSocket.text(address)):\(target.port)" + (reconnect ? " (reconnected)" : ""))
                for frame in hello(reconnect) { send(frame) }
                onConnection(true)
                let heard = serve(socket)
                lock.withLock {
                    fd = -1
                    close(socket)
                }
                onConnection(false)
                if !isStopped { log("slimproto: connection to the server ended (\(heard.reason)); reconnecting") }
                lastFailure = ""
                retry = heard.frames > 0 ? Self.firstRetry : min(retry * 2, Self.lastRetry)
            } catch {
                let line = "\(error)"
                if line != lastFailure { log("\(error); retrying") }  // once per kind
                lastFailure = line
                retry = min(retry * 2, Self.lastRetry)
            }
            lock.withLock { if !stopped { lock.wait(seconds: retry) } }
        }
    }

    /// Reads frames until the connection ends; returns why and how many frames came.
    private func serve(_ socket: Int32) -> (reason: String, frames: Int) {
        var reader = SlimprotoFrameReader()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var frames = 0, malformed = 0
        defer {
            if malformed > Self.loggedMalformed { log("slimproto: \(malformed - Self.loggedMalformed) more malformed frames were ignored") }
        }
        while !isStopped {
            switch SlimprotoSocket.receive(socket, into: &buffer, timeout: Self.silenceLimit) {
            case .closed: return ("closed by the server", frames)
            case .timedOut: return ("nothing heard for \(Int(Self.silenceLimit)) s", frames)
            case .failed(let why): return (why, frames)
            case .bytes(let n):
                reader.append(buffer[0..<n])
                while let command = reader.next() {
                    frames += 1
                    switch command {
                    case .malformed(let why):
                        malformed += 1
                        if malformed <= Self.loggedMalformed { log("slimproto: malformed frame from the server ignored: \(why)") }
                    case .unknown(let opcode):
                        malformed += 1
                        if malformed <= Self.loggedMalformed { log("slimproto: unknown frame '\(opcode)' from the server ignored") }
                    case .ignored:
                        break
                    default:
                        onCommand(command)
                    }
                }
            }
        }
        return ("stopped", frames)
    }
}
