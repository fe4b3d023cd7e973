// One WebSocket connection on its event loop: frames in, authentication,
// keep-alive and the limits — specs/control-protocol.md §WebSocket
import HarmoniaControl
import HarmoniaCore
import NIOCore
import NIOWebSocket

/// Reads a client's frames (whole messages: `NIOWebSocketFrameAggregator`
/// joins fragments before this handler and bounds their total).
///
/// - Until the client is authenticated its only accepted message is `auth`
///   (anything else: an `unauthorized` error and close code 4401); a wrong
///   token is answered so after the server-wide delay; no event reaches it.
/// - Text messages of an authenticated client go to the main loop (the
///   hub); `auth` is answered here.
/// - Pings are answered; a ping goes out every `pingInterval`, and a
///   client that did not answer the previous one is closed (1001).
/// - A client whose unread backlog passes `maxOutboxBytes` (the channel's
///   high-water mark) is dropped, with one line on standard error.
///
/// Threads: the channel's event loop only.
final class WebSocketPeer: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let hub: WebRemoteHub
    private let client: WebClient
    /// The `Authorization: Bearer` token of the upgrade request, if any.
    private let headerToken: String?
    private var awaitingPong = false
    private var pingTask: RepeatedTask?
    private var authDeadline: Scheduled<Void>?
    /// A wrong token is being answered: everything else is ignored.
    private var refusing = false
    private let log: @Sendable (String) -> Void

    static let unauthorized = WebSocketErrorCode(codeNumber: 4401)

    init(hub: WebRemoteHub, client: WebClient, headerToken: String?, log: @escaping @Sendable (String) -> Void) {
        self.hub = hub
        self.client = client
        self.headerToken = headerToken
        self.log = log
    }

    func handlerAdded(context: ChannelHandlerContext) {
        hub.add(client)
        let configuration = hub.configuration
        let client = self.client
        if let headerToken {
            if hub.accepts(headerToken) { client.authenticate() } else { refuse(context: context, id: .null) }
        }
        if !client.isAuthenticated && !refusing {
            authDeadline = context.eventLoop.scheduleTask(in: .nanoseconds(Int64(configuration.authTimeout * 1e9))) {
                if !client.isAuthenticated {
                    client.send(ControlProtocol.reply(.null, failure: Self.unauthorizedFailure("no 'auth' within \(Int(configuration.authTimeout)) s")).serialized)
                    client.close(code: Self.unauthorized, reason: "authentication required")
                }
            }
        }
        let interval = TimeAmount.nanoseconds(Int64(configuration.pingInterval * 1e9))
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        pingTask = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            loopBound.value.ping()
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        pingTask?.cancel()
        authDeadline?.cancel()
        hub.remove(client)
    }

    func channelInactive(context: ChannelHandlerContext) {
        hub.remove(client)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .text:
            guard !refusing, !client.isClosing else { return }
            var payload = frame.unmaskedData
            let bytes = payload.readBytes(length: payload.readableBytes) ?? []
            message(bytes, context: context)
        case .binary:
            guard !refusing, !client.isClosing else { return }
            client.send(ControlProtocol.reply(.null, failure: .invalidRequest("binary frames are not read: send each request as one JSON text frame")).serialized)
            if !client.isAuthenticated { client.close(code: Self.unauthorized, reason: "authentication required") }
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            awaitingPong = false
        case .connectionClose:
            if client.isClosing {
                client.finishClosing()  // the answer to ours
            } else {
                // Answer with the client's code (RFC 6455 §5.5.1); it closes the connection.
                var data = frame.unmaskedData
                client.close(code: data.readWebSocketErrorCode() ?? .normalClosure, reason: "")
            }
        default:
            break
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if !context.channel.isWritable {
            log("harmonia-play: web client dropped: it did not read its replies and events (over \(hub.configuration.maxOutboxBytes) bytes waiting)")
            context.close(promise: nil)
        }
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // The decoder's and the aggregator's limits, and protocol errors.
        if case NIOWebSocketError.invalidFrameLength = error {
            client.close(code: .messageTooLarge, reason: "a message is limited to \(hub.configuration.maxMessageBytes) bytes")
        } else if case NIOWebSocketFrameAggregator.Error.accumulatedFrameSizeIsTooLarge = error {
            client.close(code: .messageTooLarge, reason: "a message is limited to \(hub.configuration.maxMessageBytes) bytes")
        } else if case NIOWebSocketFrameAggregator.Error.tooManyFragments = error {
            client.close(code: .messageTooLarge, reason: "too many fragments")
        } else {
            client.close(code: .protocolError, reason: "protocol error")
        }
    }

    private func message(_ bytes: [UInt8], context: ChannelHandlerContext) {
        if client.isAuthenticated {
            // `auth` again is answered here; everything else by the main loop.
            if bytes.count < 4096, case .request(let request) = ControlProtocol.parse(bytes), request.command == "auth" {
                client.send(ControlProtocol.reply(request.id, result: Self.authenticated).serialized)
            } else if !hub.deliver(bytes, from: client) {
                log("harmonia-play: web client dropped: over \(WebClient.maxWaitingBytes) bytes of requests waiting for answers")
                client.close(code: .policyViolation, reason: "too many requests waiting for answers")
            }
            return
        }
        switch ControlProtocol.parse(bytes) {
        case .request(let request) where request.command == "auth":
            let token = try? request.args.string("token")
            if hub.accepts(token) {
                authDeadline?.cancel()
                client.authenticate()
                client.send(ControlProtocol.reply(request.id, result: Self.authenticated).serialized)
            } else {
                refuse(context: context, id: request.id)
            }
        case .request(let request):
            authDeadline?.cancel()
            client.send(ControlProtocol.reply(request.id, failure: Self.unauthorizedFailure("send 'auth' with the token first")).serialized)
            client.close(code: Self.unauthorized, reason: "authentication required")
        case .invalid(let id, let failure):
            authDeadline?.cancel()
            client.send(ControlProtocol.reply(id, failure: failure).serialized)
            client.close(code: Self.unauthorized, reason: "authentication required")
        }
    }

    /// A wrong token: answered after the server-wide delay, then closed with 4401.
    private func refuse(context: ChannelHandlerContext, id: JSONValue) {
        refusing = true
        authDeadline?.cancel()
        let client = self.client, delay = hub.delayForFailure()
        context.eventLoop.scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) {
            client.send(ControlProtocol.reply(id, failure: Self.unauthorizedFailure("wrong token")).serialized)
            client.close(code: Self.unauthorized, reason: "wrong token")
        }
    }

    private func ping() {
        if awaitingPong {
            client.close(code: .goingAway, reason: "no pong to the last ping")
            return
        }
        awaitingPong = true
        client.channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .ping, data: ByteBuffer(string: "harmonia")), promise: nil)
    }

    static let authenticated = JSONValue.object([("authenticated", .bool(true))])

    static func unauthorizedFailure(_ why: String) -> ControlFailure {
        ControlFailure(code: "unauthorized", message: "auth: \(why)")
    }
}
