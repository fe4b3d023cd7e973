// One NOTIFY to a subscriber's callback — specs/upnp.md §Eventing
import NIOCore
import NIOPosix

enum GENANotifier {
    /// Connects (at most 3 s), sends one NOTIFY and reads the status line
    /// (at most 5 s in all). Succeeds with true for a 2xx answer, false for
    /// anything else (refused, timed out, another status); never fails.
    /// The callback's host is a numeric address (the subscriber's own), so
    /// it is connected to as one: no name resolution, whose one serial
    /// queue per loop is the only path every subscriber would share (a slow
    /// resolver — an AAAA lookup of an IPv4 literal that goes to an
    /// unreachable DNS server — would delay everyone's notifications).
    /// Threads: any; runs on `loop`.
    static func send(body: String, sid: String, seq: UInt32, to callback: GENACallback, loop: any EventLoop) -> EventLoopFuture<Bool> {
        let outcome = NotifyOutcome(promise: loop.makePromise(of: Bool.self))
        guard let address = try? SocketAddress(ipAddress: callback.host, port: callback.port) else {
            loop.execute { outcome.finish(false) }
            return outcome.promise.futureResult
        }
        let host = callback.host.contains(":") ? "[\(callback.host)]" : callback.host
        let bodyBytes = Array(body.utf8)
        let request = "NOTIFY \(callback.path) HTTP/1.1\r\nHOST: \(host):\(callback.port)\r\n"
            + "CONTENT-TYPE: text/xml; charset=\"utf-8\"\r\nNT: upnp:event\r\nNTS: upnp:propchange\r\n"
            + "SID: \(sid)\r\nSEQ: \(seq)\r\nCONTENT-LENGTH: \(bodyBytes.count)\r\nCONNECTION: close\r\n\r\n"
        var buffer = ByteBuffer(string: request)
        buffer.writeBytes(bodyBytes)
        let payload = buffer
        ClientBootstrap(group: loop)
            .connectTimeout(.seconds(3))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(NotifyAnswerHandler(outcome: outcome))
                }
            }
            .connect(to: address)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    channel.writeAndFlush(payload, promise: nil)
                    loop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
                case .failure:
                    outcome.finish(false)
                }
            }
        return outcome.promise.futureResult
    }
}

/// Reads the answer's status line, then closes.
/// Threads: the channel's event loop.
private final class NotifyAnswerHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    private let outcome: NotifyOutcome
    private var seen: [UInt8] = []

    init(outcome: NotifyOutcome) {
        self.outcome = outcome
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var chunk = unwrapInboundIn(data)
        guard !outcome.done else { return }
        seen += chunk.readBytes(length: min(chunk.readableBytes, 512 - min(seen.count, 512))) ?? []
        guard let end = seen.firstIndex(of: UInt8(ascii: "\r")) ?? (seen.count >= 512 ? seen.count : nil) else { return }
        let line = String(decoding: seen[..<end], as: UTF8.self).split(separator: " ")
        outcome.finish(line.count >= 2 && line[0].hasPrefix("HTTP/1.") && line[1].hasPrefix("2") && line[1].count == 3)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        outcome.finish(false)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        outcome.finish(false)
        context.close(promise: nil)
    }
}

/// The NOTIFY's result, completed once by whichever comes first: the
/// answer, the close, or the failed connect. Threads: its event loop only.
private final class NotifyOutcome: @unchecked Sendable {
    let promise: EventLoopPromise<Bool>
    private(set) var done = false

    init(promise: EventLoopPromise<Bool>) {
        self.promise = promise
    }

    func finish(_ delivered: Bool) {
        guard !done else { return }
        done = true
        promise.succeed(delivered)
    }
}
