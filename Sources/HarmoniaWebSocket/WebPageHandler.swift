// The web remote's page over plain HTTP, and the refusals (403, 404, 405)
// — specs/control-protocol.md §WebSocket
import NIOCore
import NIOHTTP1

/// Serves the page's three files, compiled into the binary (Web/), to
/// requests that pass the Host/Origin policy. Requests for `/ws` that were
/// not upgraded (refused by the policy, or not a WebSocket handshake) end
/// here too. Threads: the channel's event loop.
final class WebPageHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let policy: WebRequestPolicy
    private var head: HTTPRequestHead?

    init(policy: WebRequestPolicy) {
        self.policy = policy
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head): self.head = head
        case .body: break  // nothing here takes a body
        case .end:
            if let head { respond(to: head, context: context) }
            head = nil
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        if let refusal = policy.refusal(host: head.headers.first(name: "host"), origin: head.headers.first(name: "origin")) {
            return send(.forbidden, "harmonia-play: forbidden: \(refusal)\n", type: "text/plain; charset=utf-8", head: head, context: context)
        }
        guard head.method == .GET || head.method == .HEAD else {
            return send(.methodNotAllowed, "harmonia-play: only GET and HEAD are served here\n", type: "text/plain; charset=utf-8",
                        head: head, context: context, extra: [("Allow", "GET, HEAD")])
        }
        let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? head.uri
        if path == "/ws" {
            return send(.badRequest, "harmonia-play: /ws takes a WebSocket handshake (Upgrade: websocket)\n", type: "text/plain; charset=utf-8",
                        head: head, context: context)
        }
        guard let file = WebPageFiles.file(at: path) else {
            return send(.notFound, "harmonia-play: not found\n", type: "text/plain; charset=utf-8", head: head, context: context)
        }
        send(.ok, file.bytes, type: file.type, head: head, context: context)
    }

    private func send(_ status: HTTPResponseStatus, _ text: String, type: String, head: HTTPRequestHead,
                      context: ChannelHandlerContext, extra: [(String, String)] = []) {
        send(status, ByteBuffer(string: text), type: type, head: head, context: context, extra: extra)
    }

    private func send(_ status: HTTPResponseStatus, _ body: ByteBuffer, type: String, head: HTTPRequestHead,
                      context: ChannelHandlerContext, extra: [(String, String)] = []) {
        var headers = HTTPHeaders([
            ("Content-Type", type),
            ("Content-Length", String(body.readableBytes)),
            ("Cache-Control", "no-cache"),
            ("X-Content-Type-Options", "nosniff"),
            ("X-Frame-Options", "DENY"),
            ("Referrer-Policy", "no-referrer"),
            ("Content-Security-Policy", WebPageFiles.contentSecurityPolicy),
        ] + extra)
        let keepAlive = head.isKeepAlive && status == .ok
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD { context.write(wrapOutboundOut(.body(.byteBuffer(body))), promise: nil) }
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }
}

/// The page's files (Sources/HarmoniaWebSocket/Web), compiled in.
enum WebPageFiles {
    struct File {
        let bytes: ByteBuffer
        let type: String
    }

    /// Scripts and styles from the page's own files only; embedded covers
    /// arrive as data: URLs, a cover given by URL (a UPnP control point's
    /// albumArtURI) is an image from http(s), loaded with no referrer.
    static let contentSecurityPolicy =
        "default-src 'self'; img-src 'self' data: http: https:; connect-src 'self' ws: wss:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

    private static let files: [String: File] = [
        "/": File(bytes: ByteBuffer(bytes: PackageResources.index_html), type: "text/html; charset=utf-8"),
        "/index.html": File(bytes: ByteBuffer(bytes: PackageResources.index_html), type: "text/html; charset=utf-8"),
        "/remote.css": File(bytes: ByteBuffer(bytes: PackageResources.remote_css), type: "text/css; charset=utf-8"),
        "/remote.js": File(bytes: ByteBuffer(bytes: PackageResources.remote_js), type: "text/javascript; charset=utf-8"),
    ]

    static func file(at path: String) -> File? { files[path] }
}
