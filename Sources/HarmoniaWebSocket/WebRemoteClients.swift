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
        /// Requests handed to the main loop and not yet answered.
        var inFlight = 0
        var closed = false
        /// The stamp of the last event before the client connected.
        var connectStamp: UInt64 = 0
    }

    /// Requests of one client waiting for the main loop, at most; beyond
    /// that its socket is not read (its requests wait in the network). Small,
    /// so that a client sending without pause holds up the others' requests
    /// by at most this many of its own.
    static let maxInFlight = 16

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

    /// A request goes to the main loop; at `maxInFlight` reading pauses.
    func acquireSlot() {
        let full = state.withLockedValue { state -> Bool in
            state.inFlight += 1
            return state.inFlight == Self.maxInFlight
        }
        if full { channel.setOption(ChannelOptions.autoRead, value: false).whenFailure { _ in } }
    }

    /// A request was answered; reading resumes below `maxInFlight`.
    func releaseSlot() {
        let resume = state.withLockedValue { state -> Bool in
            state.inFlight -= 1
            return state.inFlight == Self.maxInFlight - 1
        }
        if resume { channel.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in } }
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

    /// Hands an authenticated client's request to the main loop.
    func deliver(_ bytes: [UInt8], from client: WebClient) {
        guard let receive = receiver.withLockedValue({ $0 }) else { return }
        client.acquireSlot()
        receive(Request(client: client, bytes: bytes))
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
