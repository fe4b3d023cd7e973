// The web remote's listening socket: HTTP/1.1 for the page, upgraded to
// WebSocket at /ws, optionally over TLS — specs/control-protocol.md §WebSocket
import Foundation
import HarmoniaCore
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOWebSocket

/// Listens for the page and its WebSocket clients on one event-loop thread.
///
/// `bind` takes the port (SO_REUSEADDR: a restarted player binds it again at
/// once) but accepts nobody until `start`; `shutdown` closes every client
/// with 1001 and stops the thread. Threads: call `bind`, `start` and
/// `shutdown` from one thread (the main loop).
public final class WebRemoteServer: @unchecked Sendable {
    public let hub: WebRemoteHub
    private let configuration: WebRemoteConfiguration
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private var listener: (any Channel)?
    private let log: @Sendable (String) -> Void

    /// - Parameter log: one line for standard error (a dropped client).
    public init(configuration: WebRemoteConfiguration, log: @escaping @Sendable (String) -> Void) {
        self.configuration = configuration
        self.hub = WebRemoteHub(configuration: configuration)
        self.log = log
    }

    /// The port bound (the one asked for, or the one chosen for port 0).
    public private(set) var port = 0

    /// "http://127.0.0.1:6680/" or "https://…".
    public var url: String {
        let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
        return "\(configuration.tlsCertificate == nil ? "http" : "https")://\(host):\(port)/"
    }

    /// Takes the port.
    /// - Throws: `ioError` when the address is taken or not this machine's,
    ///   or the TLS files cannot be read.
    public func bind() throws(CoreError) {
        let tls = try makeTLSContext()
        let hub = self.hub, configuration = self.configuration, log = self.log
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(ChannelOptions.autoRead, value: false)  // until `start`
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            // One event loop serves every client: one read of at most 16 KiB
            // per turn, so a client sending without pause has its frames
            // decoded a little at a time, between the other clients' turns.
            .childChannelOption(ChannelOptions.maxMessagesPerRead, value: 1)
            .childChannelOption(ChannelOptions.recvAllocator,
                                value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 2048, maximum: 16 << 10))
            .childChannelOption(ChannelOptions.writeBufferWaterMark,
                                value: ChannelOptions.Types.WriteBufferWaterMark(low: configuration.maxOutboxBytes / 2, high: configuration.maxOutboxBytes))
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try Self.configure(channel, tls: tls, hub: hub, configuration: configuration, log: log)
                }
            }
        do {
            let channel = try bootstrap.bind(host: configuration.host, port: configuration.port).wait()
            listener = channel
            port = channel.localAddress?.port ?? configuration.port
        } catch {
            try? group.syncShutdownGracefully()
            throw .ioError("web remote: cannot listen on \(configuration.host):\(configuration.port) (\(Self.describe(error))): is another player running? Choose another port with --listen")
        }
    }

    /// Accepts clients from now on.
    public func start() {
        listener?.setOption(ChannelOptions.autoRead, value: true).whenFailure { _ in }
    }

    /// Closes every client (1001) and the port, and stops the thread.
    public func shutdown() {
        hub.closeAll()
        if let listener { try? listener.close().wait() }
        listener = nil
        try? group.syncShutdownGracefully()
    }

    /// One connection's pipeline: [TLS] → HTTP/1.1 → the page, or after an
    /// upgrade at /ws: frames → aggregator → `WebSocketPeer`.
    private static func configure(_ channel: any Channel, tls: NIOSSLContext?, hub: WebRemoteHub,
                                  configuration: WebRemoteConfiguration, log: @escaping @Sendable (String) -> Void) throws {
        let pipeline = channel.pipeline.syncOperations
        if let tls { try pipeline.addHandler(NIOSSLServerHandler(context: tls)) }
        let policy = configuration.policy
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: configuration.maxMessageBytes,
            automaticErrorHandling: false,  // WebSocketPeer closes with the code (1009, 1002) and a handshake
            shouldUpgrade: { channel, head in
                // Refused here, the request goes on to the page handler, which answers 403 or 400.
                let path = head.uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
                guard path == "/ws",
                      policy.refusal(host: head.headers.first(name: "host"), origin: head.headers.first(name: "origin")) == nil else {
                    return channel.eventLoop.makeSucceededFuture(nil)
                }
                return channel.eventLoop.makeSucceededFuture(HTTPHeaders())
            },
            upgradePipelineHandler: { channel, head in
                channel.eventLoop.makeCompletedFuture {
                    let token = Self.bearerToken(head.headers.first(name: "authorization"))
                    let client = WebClient(channel: channel, authenticated: configuration.token == nil)
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(NIOWebSocketFrameAggregator(
                        minNonFinalFragmentSize: 1, maxAccumulatedFrameCount: 4096,
                        maxAccumulatedFrameSize: configuration.maxMessageBytes))
                    try pipeline.addHandler(WebSocketPeer(hub: hub, client: client, headerToken: token, log: log))
                }
            })
        try pipeline.configureHTTPServerPipeline(
            withServerUpgrade: (upgraders: [upgrader], completionHandler: { context in
                context.pipeline.removeHandler(name: "page", promise: nil)
            }))
        try pipeline.addHandler(WebPageHandler(policy: policy), name: "page")
    }

    /// The token of `Authorization: Bearer TOKEN`.
    static func bearerToken(_ header: String?) -> String? {
        guard let header, header.count > 7, header.prefix(7).lowercased() == "bearer " else { return nil }
        return String(header.dropFirst(7)).trimmingCharacters(in: .whitespaces)
    }

    private func makeTLSContext() throws(CoreError) -> NIOSSLContext? {
        guard let certificate = configuration.tlsCertificate, let key = configuration.tlsKey else { return nil }
        do {
            let chain = try NIOSSLCertificate.fromPEMFile(certificate).map { NIOSSLCertificateSource.certificate($0) }
            let configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain, privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw .ioError("web remote: cannot use the TLS certificate '\(certificate)' and key '\(key)' (\(Self.describe(error))): give PEM files")
        }
    }

    private static func describe(_ error: any Error) -> String {
        if let error = error as? IOError { return String(cString: strerror(error.errnoCode)) }
        return String(describing: error).prefix(200).replacingOccurrences(of: "\n", with: " ")
    }
}
