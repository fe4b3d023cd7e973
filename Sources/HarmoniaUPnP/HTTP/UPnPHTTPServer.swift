// The renderer's HTTP server: the description, SCPDs, SOAP control and
// GENA subscriptions on one port — specs/upnp.md §HTTP
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HarmoniaCore
import NIOCore
import NIOHTTP1
import NIOPosix

/// What the HTTP server asks of its owner. `control` runs a request on the
/// main loop and calls `reply` once (from any thread).
public struct UPnPHTTPRoutes: Sendable {
    public var friendlyName: String
    public var uuid: String
    public var control: @Sendable (SOAPRequest, _ reply: @escaping @Sendable (Result<[(String, String)], UPnPError>) -> Void) -> Void
}

/// One event-loop thread serves every client: nothing in a request waits
/// on that thread (a control request is a job on the main loop, answered
/// when it has run), so a slow client delays only itself.
///
/// Limits: request heads as NIO bounds them, bodies to `maxBodyBytes`
/// (413), 64 connections at once (more are closed at once), a connection
/// idle for 30 s is closed. Threads: `bind`, `start`, `shutdown` from one
/// thread (the main loop).
public final class UPnPHTTPServer: @unchecked Sendable {
    public static let maxBodyBytes = 64 << 10
    public static let maxConnections = 64
    let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    let host: String
    let requestedPort: Int
    let routes: UPnPHTTPRoutes
    public let subscriptions: GENASubscriptions
    private var listener: (any Channel)?
    private let connections = ConnectionCounter()

    public init(host: String, port: Int, routes: UPnPHTTPRoutes) {
        self.host = host
        self.requestedPort = port
        self.routes = routes
        self.subscriptions = GENASubscriptions(loop: group.next())
    }

    /// The port bound (the one asked for, or the one chosen for port 0).
    public private(set) var port = 0

    /// "http://127.0.0.1:PORT" (no trailing slash).
    public var baseURL: String { "http://\(host.contains(":") ? "[\(host)]" : host):\(port)" }

    /// Takes the port; accepts nobody until `start`.
    /// - Throws: `ioError` when the address is taken or not this machine's.
    public func bind() throws(CoreError) {
        let routes = self.routes, subscriptions = self.subscriptions, connections = self.connections
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 128)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(ChannelOptions.autoRead, value: false)
            .childChannelOption(ChannelOptions.maxMessagesPerRead, value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    guard connections.increment() <= Self.maxConnections else {
                        connections.decrement()
                        channel.close(promise: nil)
                        return
                    }
                    channel.closeFuture.whenComplete { _ in connections.decrement() }
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(IdleStateHandler(allTimeout: .seconds(30)))
                    try pipeline.configureHTTPServerPipeline(withErrorHandling: true)
                    try pipeline.addHandler(UPnPHTTPHandler(routes: routes, subscriptions: subscriptions))
                }
            }
        do {
            let channel = try bootstrap.bind(host: host, port: requestedPort).wait()
            listener = channel
            port = channel.localAddress?.port ?? requestedPort
        } catch {
            try? group.syncShutdownGracefully()
            throw .ioError("UPnP: cannot listen on \(host):\(requestedPort) (\(String(describing: error).prefix(160))): choose another port with --upnp-listen")
        }
    }

    public func start() {
        listener?.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in }
    }

    /// Closes the port and every connection; stops the thread.
    public func shutdown() {
        subscriptions.close()
        if let listener { try? listener.close().wait() }
        listener = nil
        try? group.syncShutdownGracefully()
    }
}

/// A count shared by the connections' channels (any thread).
final class ConnectionCounter: @unchecked Sendable {
    private let lock = ConditionLock()
    private var value = 0
    @discardableResult func increment() -> Int { lock.withLock { value += 1; return value } }
    func decrement() { lock.withLock { value -= 1 } }
}

/// One connection: a request at a time (NIO's pipelining handler holds the
/// next until this one's answer is written). Threads: the channel's event loop.
final class UPnPHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let routes: UPnPHTTPRoutes
    private let subscriptions: GENASubscriptions
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false
    /// The request's `Connection`: closed after the answer when it says so.
    private var keepAlive = true

    init(routes: UPnPHTTPRoutes, subscriptions: GENASubscriptions) {
        self.routes = routes
        self.subscriptions = subscriptions
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
            tooLarge = head.headers.first(name: "content-length").flatMap { Int($0) }.map { $0 > UPnPHTTPServer.maxBodyBytes } ?? false
        case .body(var chunk):
            guard !tooLarge else { return }
            if body.count + chunk.readableBytes > UPnPHTTPServer.maxBodyBytes {
                tooLarge = true
                body = []
            } else {
                body += chunk.readBytes(length: chunk.readableBytes) ?? []
            }
        case .end:
            guard let head else { return }
            self.head = nil
            keepAlive = head.isKeepAlive
            respond(head, context: context)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent { context.close(promise: nil) } else { context.fireUserInboundEventTriggered(event) }
    }

    private func respond(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        if tooLarge { return send(.payloadTooLarge, "request body over \(UPnPHTTPServer.maxBodyBytes) bytes\n", context: context) }
        if let host = head.headers.first(name: "host"), !Self.isAddressLiteral(host) {
            return send(.forbidden, "Host must be an IP address (DNS rebinding)\n", context: context)
        }
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? head.uri
        let xml = "text/xml; charset=\"utf-8\""
        if path == UPnPDescription.path || path == "/" {
            guard head.method == .GET || head.method == .HEAD else { return send(.methodNotAllowed, "GET only\n", context: context) }
            return send(.ok, UPnPDescription.device(friendlyName: routes.friendlyName, uuid: routes.uuid), type: xml,
                        context: context, headOnly: head.method == .HEAD)
        }
        guard let service = UPnPServiceSpec.all.first(where: { [$0.scpdPath, $0.controlPath, $0.eventPath].contains(path) }) else {
            return send(.notFound, "not found\n", context: context)
        }
        switch (path, head.method) {
        case (service.scpdPath, .GET), (service.scpdPath, .HEAD):
            send(.ok, UPnPDescription.scpd(service), type: xml, context: context, headOnly: head.method == .HEAD)
        case (service.controlPath, .POST):
            control(service, head: head, context: context)
        case (service.eventPath, .SUBSCRIBE), (service.eventPath, .UNSUBSCRIBE):
            let peer = context.channel.remoteAddress?.ipAddress ?? ""
            let answer = subscriptions.handle(method: head.method == .SUBSCRIBE ? .subscribe : .unsubscribe,
                                              service: service.name, headers: head.headers, peer: peer)
            let sid = answer.initialEventFor, subscriptions = self.subscriptions
            send(answer.status, "", context: context, extra: answer.headers) {
                if let sid { subscriptions.sendInitial(sid: sid) }  // after the 200, as UDA says
            }
        default:
            send(.methodNotAllowed, "method not allowed here\n", context: context)
        }
    }

    /// `Host` names this machine by address (`127.0.0.1:49594`, `[::1]:80`)
    /// or as `localhost`: control points use the address in LOCATION, while
    /// a web page that rebinds its own name to this address sends its name.
    static func isAddressLiteral(_ host: String) -> Bool {
        var name = Substring(host)
        if name.hasPrefix("["), let close = name.firstIndex(of: "]") {
            var v6 = in6_addr()
            return inet_pton(AF_INET6, String(name[name.index(after: name.startIndex)..<close]), &v6) == 1
        }
        if let colon = name.lastIndex(of: ":") { name = name[..<colon] }
        var v4 = in_addr()
        return name.lowercased() == "localhost" || inet_pton(AF_INET, String(name), &v4) == 1
    }

    private func control(_ service: UPnPServiceSpec, head: HTTPRequestHead, context: ChannelHandlerContext) {
        let request: SOAPRequest
        do throws(UPnPError) {
            request = try UPnPSOAP.parse(body: body, soapAction: head.headers.first(name: "soapaction"), serviceType: service.serviceType)
            guard service.action(request.action) != nil else { throw .invalidAction() }
        } catch {
            return fault(error, context: context)
        }
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let loop = context.eventLoop
        routes.control(request) { result in
            loop.execute {
                let (handler, context) = bound.value
                switch result {
                case .success(let arguments):
                    handler.send(.ok, UPnPSOAP.response(serviceType: request.serviceType, action: request.action, arguments: arguments),
                                 type: "text/xml; charset=\"utf-8\"", context: context)
                case .failure(let error):
                    handler.fault(error, context: context)
                }
            }
        }
    }

    private func fault(_ error: UPnPError, context: ChannelHandlerContext) {
        send(.internalServerError, UPnPSOAP.fault(error), type: "text/xml; charset=\"utf-8\"", context: context)
    }

    /// Sends one answer; `sent` runs once it is written.
    private func send(_ status: HTTPResponseStatus, _ text: String, type: String = "text/plain; charset=utf-8",
                      context: ChannelHandlerContext, extra: [(String, String)] = [], headOnly: Bool = false,
                      sent: (@Sendable () -> Void)? = nil) {
        let payload = ByteBuffer(string: text)
        var headers = HTTPHeaders([("Content-Length", String(payload.readableBytes)), ("Server", UPnPServer.header)])
        if !text.isEmpty { headers.add(name: "Content-Type", value: type) }
        for (name, value) in extra { headers.add(name: name, value: value) }
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        if !headOnly && payload.readableBytes > 0 { context.write(wrapOutboundOut(.body(.byteBuffer(payload))), promise: nil) }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
        if let sent { done.whenComplete { _ in sent() } }
    }
}

/// The SERVER header of every answer and announcement (UDA 1.1 §1.1.3).
enum UPnPServer {
    static let header = "Linux/1 UPnP/1.1 harmonia-play/\(HarmoniaVersion.string)"
}
