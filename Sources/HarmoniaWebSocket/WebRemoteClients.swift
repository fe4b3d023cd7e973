// The web remote's connected clients as the main loop sees them, and the
// hub that hands their requests to the main loop and the events to them
// — specs/control-protocol.md §WebSocket
import HarmoniaControl
import HarmoniaCore
import NIOConcurrencyHelpers
import NIOCore
import NIOWebSocket

/// One WebSocket client. `send` may be called from any thread (the main loop
/// sends replies and events); writes go out on the channel's event loop in
/// the order sent, so a reply precedes the events its command caused.
public final class WebClient: Sendable {
    let channel: any Channel
    private let state: NIOLockedValueBox<State>

    private struct State {
        var authenticated: Bool
        /// A request of this client is on the main loop (at most one).
        var inFlight = false
        /// Requests read and waiting for the one in flight to be answered.
        var waiting: [[UInt8]] = []
        var waitingHead = 0
        var waitingBytes = 0
        var readingPaused = false
        var closed = false
        /// The stamp of the last event before the client connected.
        var connectStamp: UInt64 = 0
    }

    /// Requests of one client read and waiting for its request on the main
    /// loop to be answered: past this many its socket is not read (they wait
    /// in the network). Only one request per client is on the main loop at
    /// a time, so one client's backlog never queues ahead of the others'.
    static let maxWaiting = 16
    /// What a client may have waiting at all (frames already read when
    /// reading paused): past it, the client is closed (1008).
    static let maxWaitingBytes = 4 << 20

    init(channel: any Channel, authenticated: Bool) {
        self.channel = channel
        self.state = NIOLockedValueBox(State(authenticated: authenticated))
    }

    /// True once the client gave the token (or none is required): only then
    /// does it get events and may it send commands.
    public var isAuthenticated: Bool { state.withLockedValue { $0.authenticated && !$0.closed } }

    func authenticate() { state.withLockedValue { $0.authenticated = true } }

    /// The stamp of the last event made before this client connected: it
    /// gets only the events after it (`WebRemoteHub.broadcast(_:stamp:)`).
    var connectStamp: UInt64 { state.withLockedValue { $0.connectStamp } }

    func noteConnected(stamp: UInt64) { state.withLockedValue { $0.connectStamp = stamp } }

    /// Sends one message as a text frame; nothing once the client is closing.
    public func send(_ text: String) {
        guard !state.withLockedValue({ $0.closed }) else { return }
        send(ByteBuffer(string: text))
    }

    /// Sends one already encoded message (a broadcast encodes once for all).
    func send(_ buffer: ByteBuffer) {
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .text, data: buffer), promise: nil)
    }

    /// Starts the closing handshake: a close frame with `code` and a
    /// reason, then the sending side is shut; the connection ends when the
    /// client answers with its close frame (`finishClosing`), or after
    /// `closingGrace` seconds. Closing the socket at once would make the
    /// kernel reset it over unread data, and the client would lose the code.
    func close(code: WebSocketErrorCode, reason: String) {
        let first = state.withLockedValue { state -> Bool in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        let channel = self.channel
        var data = channel.allocator.buffer(capacity: 2 + reason.utf8.count)
        data.write(webSocketErrorCode: code)
        data.writeString(String(reason.utf8.prefix(120)) ?? "")
        channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)).whenComplete { _ in
            channel.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }
            channel.eventLoop.scheduleTask(in: .milliseconds(Int64(Self.closingGrace * 1000))) { channel.close(promise: nil) }
        }
    }

    /// True once `close` started the closing handshake.
    var isClosing: Bool { state.withLockedValue { $0.closed } }

    /// The client answered our close frame: the connection ends now.
    func finishClosing() { channel.close(promise: nil) }

    /// How long a closing client may take to answer with its close frame.
    static let closingGrace = 2.0

    /// What to do with a request just read (`WebRemoteHub.deliver`).
    enum Admission {
        /// Hand it to the main loop now: nothing of this client is there.
        case post
        /// Queued behind the one on the main loop.
        case queued
        /// Over `maxWaitingBytes`: the client is to be closed.
        case overflow
    }

    /// A request was read (the channel's event loop).
    func admit(_ bytes: [UInt8]) -> Admission {
        let (admission, pause) = state.withLockedValue { state -> (Admission, Bool) in
            guard state.inFlight else {
                state.inFlight = true
                return (.post, false)
            }
            guard state.waitingBytes + bytes.count <= Self.maxWaitingBytes else { return (.overflow, false) }
            state.waiting.append(bytes)
            state.waitingBytes += bytes.count
            let pause = !state.readingPaused && state.waiting.count - state.waitingHead >= Self.maxWaiting
            if pause { state.readingPaused = true }
            return (.queued, pause)
        }
        if pause { channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in } }
        return admission
    }

    /// The request on the main loop was answered (main loop): the next one
    /// waiting, if any, to hand to the main loop (behind every other
    /// client's, round robin); reading resumes once few wait.
    func answered() -> [UInt8]? {
        let (next, resume) = state.withLockedValue { state -> ([UInt8]?, Bool) in
            guard state.waitingHead < state.waiting.count, !state.closed else {
                state.inFlight = false
                state.waiting = []
                state.waitingHead = 0
                state.waitingBytes = 0
                return (nil, false)
            }
            let next = state.waiting[state.waitingHead]
            state.waitingHead += 1
            state.waitingBytes -= next.count
            if state.waitingHead == state.waiting.count || state.waitingHead > 1024 {
                state.waiting.removeFirst(state.waitingHead)
                state.waitingHead = 0
            }
            let resume = state.readingPaused && state.waiting.count - state.waitingHead < Self.maxWaiting / 2
            if resume { state.readingPaused = false }
            return (next, resume)
        }
        if resume { channel.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in } }
        return next
    }
}

/// Between the network threads and the player's main loop: the set of
/// clients, the way requests reach the main loop (`deliver`), and the event
/// fan-out (`broadcast`). Any thread.
public final class WebRemoteHub: Sendable {
    /// A request of an authenticated client, for the main loop.
    public struct Request: Sendable {
        public let client: WebClient
        public let bytes: [UInt8]
    }

    private let clients = NIOLockedValueBox<[ObjectIdentifier: WebClient]>([:])
    /// Where a new client reads the stamp of the last event before it came.
    private let stampSource = NIOLockedValueBox<@Sendable () -> UInt64>({ 0 })
    private let receiver = NIOLockedValueBox<(@Sendable (Request) -> Void)?>(nil)
    /// When the last wrong token was answered (monotonic seconds): the next
    /// is answered `failedAuthDelay` after it at the earliest.
    private let lastFailure = NIOLockedValueBox<Double>(0)
    let configuration: WebRemoteConfiguration

    public init(configuration: WebRemoteConfiguration) {
        self.configuration = configuration
    }

    /// Where requests go from now on (the frontend's `start`).
    public func receive(_ body: @escaping @Sendable (Request) -> Void) {
        receiver.withLockedValue { $0 = body }
    }

    /// Sets where each new client reads the stamp of the last event made
    /// before it connected (the application's `EventInbox.lastStamp`); call
    /// before the server starts.
    public func setStampSource(_ source: @escaping @Sendable () -> UInt64) {
        stampSource.withLockedValue { $0 = source }
    }

    /// A client connected: it is owed the events stamped after now.
    func add(_ client: WebClient) {
        let source = stampSource.withLockedValue { $0 }
        clients.withLockedValue {
            client.noteConnected(stamp: source())
            $0[ObjectIdentifier(client)] = client
        }
    }

    func remove(_ client: WebClient) { _ = clients.withLockedValue { $0.removeValue(forKey: ObjectIdentifier(client)) } }

    /// Connected clients, authenticated or not.
    public var count: Int { clients.withLockedValue { $0.count } }

    /// Hands an authenticated client's request to the main loop, or queues
    /// it behind the client's request already there (the channel's event
    /// loop). Returns false when the client has more waiting than
    /// `WebClient.maxWaitingBytes` (the caller closes it).
    func deliver(_ bytes: [UInt8], from client: WebClient) -> Bool {
        guard let receive = receiver.withLockedValue({ $0 }) else { return true }
        switch client.admit(bytes) {
        case .post: receive(Request(client: client, bytes: bytes))
        case .queued: break
        case .overflow: return false
        }
        return true
    }

    /// `client`'s request was answered (main loop): its next waiting
    /// request goes to the main loop, behind the other clients' requests.
    public func answered(_ client: WebClient) {
        guard let next = client.answered(), let receive = receiver.withLockedValue({ $0 }) else { return }
        receive(Request(client: client, bytes: next))
    }

    /// Sends `text` to every authenticated client (events): encoded once,
    /// and handed to each event loop in one task for all its clients (one
    /// wake-up per event, not one per client). A task runs after the replies
    /// handed over before it, so the order of replies and events holds.
    ///
    /// - Parameter stamp: when the event happened (`setStampSource`): a
    ///   client that connected after it does not get it (nil: everyone).
    public func broadcast(_ text: String, stamp: UInt64? = nil) {
        let frame = WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: text))
        var byLoop: [ObjectIdentifier: (any EventLoop, [any Channel])] = [:]
        for client in clients.withLockedValue({ Array($0.values) }) where client.isAuthenticated {
            if let stamp, stamp <= client.connectStamp { continue }
            let loop = client.channel.eventLoop
            byLoop[ObjectIdentifier(loop), default: (loop, [])].1.append(client.channel)
        }
        for (loop, channels) in byLoop.values {
            loop.execute {
                for channel in channels { channel.writeAndFlush(frame, promise: nil) }
            }
        }
    }

    /// Closes every client with 1001 (the server is going away).
    public func closeAll() {
        for client in clients.withLockedValue({ Array($0.values) }) {
            client.close(code: .goingAway, reason: "the player is stopping")
        }
    }

    /// True when `token` is the configured one (or none is configured);
    /// compared in constant time.
    func accepts(_ token: String?) -> Bool {
        guard let expected = configuration.token else { return true }
        guard let token else { return false }
        let a = Array(expected.utf8), b = Array(token.utf8)
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<a.count { difference |= a[i] ^ (i < b.count ? b[i] : 0) }
        return difference == 0
    }

    /// Seconds from now at which to answer a wrong token: one a second for
    /// the whole server, so guessing in parallel gains nothing.
    func delayForFailure() -> Double {
        lastFailure.withLockedValue { last in
            let now = monotonicSeconds()
            let at = max(now, last) + configuration.failedAuthDelay
            last = at
            return at - now
        }
    }
}
