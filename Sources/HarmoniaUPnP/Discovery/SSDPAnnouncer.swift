// SSDP discovery: NOTIFY alive/byebye and answers to M-SEARCH
// — specs/upnp.md §Discovery
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HarmoniaCore
import NIOCore
import NIOPosix

/// Announces the renderer on one IPv4 interface (`interface`, the address
/// the HTTP server listens on) to 239.255.255.250:`port`, and answers
/// searches that reach it.
///
/// - alive: at `start`, then every `interval` seconds (max-age 1800);
///   byebye at `shutdown` (SIGTERM/SIGINT end the player through it);
/// - M-SEARCH for `ssdp:all`, `upnp:rootdevice`, the device type, a service
///   type or the device's `uuid:` is answered to the sender after a random
///   wait of up to min(MX, 1) s; on a loopback interface, only loopback
///   senders are answered.
///
/// Threads: `start` and `shutdown` from one thread; the rest on its loop.
public final class SSDPAnnouncer: @unchecked Sendable {
    public static let multicastAddress = "239.255.255.250"
    let interface: String
    let port: Int
    let location: String
    let uuid: String
    let interval: Double
    private let group: any EventLoopGroup
    private var channel: (any Channel)?
    private var repeating: RepeatedTask?

    /// - Parameter interface: a numeric IPv4 address of this machine.
    public init(interface: String, port: Int, location: String, uuid: String, interval: Double = 600, group: any EventLoopGroup) {
        self.interface = interface
        self.port = port
        self.location = location
        self.uuid = uuid
        self.interval = interval
        self.group = group
    }

    /// The notification types and their USNs: root device, uuid, device type, each service.
    var targets: [(nt: String, usn: String)] {
        let udn = "uuid:" + uuid
        return [("upnp:rootdevice", udn + "::upnp:rootdevice"), (udn, udn),
                (UPnPDescription.deviceType, udn + "::" + UPnPDescription.deviceType)]
            + UPnPServiceSpec.all.map { ($0.serviceType, udn + "::" + $0.serviceType) }
    }

    /// Binds 0.0.0.0:`port` (shared: SO_REUSEADDR/SO_REUSEPORT), joins the
    /// group on `interface`, sends alive and schedules the next.
    /// - Throws: `ioError` naming what failed (the port, the group).
    public func start() throws(CoreError) {
        var address = in_addr()
        guard inet_pton(AF_INET, interface, &address) == 1 else {
            throw .invalidArgument("SSDP: \(interface) is not an IPv4 address (SSDP is announced on IPv4 only)")
        }
        let loopbackOnly = UInt32(bigEndian: address.s_addr) >> 24 == 127
        let handlerTargets = targets, location = self.location
        let bootstrap = DatagramBootstrap(group: group)
            .channelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .channelOption(ChannelOptions.socketOption(NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(
                        SSDPSearchHandler(targets: handlerTargets, location: location, loopbackOnly: loopbackOnly))
                }
            }
        do {
            let channel = try bootstrap.bind(host: "0.0.0.0", port: port).wait()
            self.channel = channel
            // The group joined and sent to on the interface by its address
            // (ip_mreq, in_addr): NIO's joinGroup(device:) refuses an
            // interface without IFF_MULTICAST, and lo has none, though
            // Linux delivers multicast on it.
            guard let options = channel as? any SocketOptionProvider else { throw CoreError.ioError("no socket options") }
            var group = in_addr()
            _ = inet_pton(AF_INET, Self.multicastAddress, &group)
            let ip = NIOBSDSocket.OptionLevel(rawValue: CInt(IPPROTO_IP))
            try options.unsafeSetSocketOption(level: ip, name: NIOBSDSocket.Option(rawValue: IP_ADD_MEMBERSHIP),
                                              value: ip_mreq(imr_multiaddr: group, imr_interface: address)).wait()
            try options.unsafeSetSocketOption(level: ip, name: NIOBSDSocket.Option(rawValue: IP_MULTICAST_IF), value: address).wait()
            try channel.setOption(ChannelOptions.ipOption(.ip_multicast_loop), value: 1).wait()
            try channel.setOption(ChannelOptions.ipOption(.ip_multicast_ttl), value: 2).wait()
        } catch {
            try? channel?.close().wait()
            channel = nil
            throw .ioError("SSDP: cannot listen on port \(port) on \(interface) (\(String(describing: error).prefix(160))): --upnp-ssdp-port off turns discovery off")
        }
        announce("ssdp:alive")
        let interval = TimeAmount.nanoseconds(Int64(self.interval * 1e9))
        repeating = channel?.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [self] _ in announce("ssdp:alive") }
    }

    /// Sends byebye for every target and closes the socket (waits for the sends).
    public func shutdown() {
        repeating?.cancel()
        guard let channel else { return }
        announce("ssdp:byebye")
        try? channel.close().wait()
        self.channel = nil
    }

    /// One NOTIFY per target to the group.
    private func announce(_ nts: String) {
        guard let channel, let group = try? SocketAddress(ipAddress: Self.multicastAddress, port: port) else { return }
        for (nt, usn) in targets {
            var lines = ["NOTIFY * HTTP/1.1", "HOST: \(Self.multicastAddress):\(port)", "NT: \(nt)", "NTS: \(nts)", "USN: \(usn)",
                         "BOOTID.UPNP.ORG: 1", "CONFIGID.UPNP.ORG: 1"]
            if nts == "ssdp:alive" {
                lines += ["CACHE-CONTROL: max-age=1800", "LOCATION: \(location)", "SERVER: \(UPnPServer.header)"]
            }
            let text = lines.joined(separator: "\r\n") + "\r\n\r\n"
            channel.writeAndFlush(AddressedEnvelope(remoteAddress: group, data: ByteBuffer(string: text)), promise: nil)
        }
    }
}

/// Answers M-SEARCH requests. Threads: the channel's event loop.
private final class SSDPSearchHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>
    let targets: [(nt: String, usn: String)]
    let location: String
    let loopbackOnly: Bool

    init(targets: [(nt: String, usn: String)], location: String, loopbackOnly: Bool) {
        self.targets = targets
        self.location = location
        self.loopbackOnly = loopbackOnly
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard envelope.data.readableBytes <= 2048 else { return }
        let sender = envelope.remoteAddress
        if loopbackOnly, !(sender.ipAddress?.hasPrefix("127.") ?? false) { return }
        let text = String(decoding: envelope.data.readableBytesView, as: UTF8.self)
        guard let search = SSDPSearch(text) else { return }
        let answers = targets.filter { search.target == "ssdp:all" || search.target == $0.nt }
        guard !answers.isEmpty else { return }
        let date = Self.httpDate()
        let channel = context.channel
        let delay = Double.random(in: 0...min(Double(search.mx), 1))
        context.eventLoop.scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) { [location] in
            for (nt, usn) in answers {
                let text = ["HTTP/1.1 200 OK", "CACHE-CONTROL: max-age=1800", "DATE: \(date)", "EXT:", "LOCATION: \(location)",
                            "SERVER: \(UPnPServer.header)", "ST: \(nt)", "USN: \(usn)", "BOOTID.UPNP.ORG: 1", "CONFIGID.UPNP.ORG: 1"]
                    .joined(separator: "\r\n") + "\r\n\r\n"
                channel.writeAndFlush(AddressedEnvelope(remoteAddress: sender, data: ByteBuffer(string: text)), promise: nil)
            }
        }
    }

    static func httpDate() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date())
    }
}

/// An M-SEARCH request: `ssdp:discover` with its ST and MX (1…5 as UDA says; else 1).
struct SSDPSearch: Equatable {
    let target: String
    let mx: Int

    init?(_ text: String) {
        let lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        guard lines.first?.uppercased() == "M-SEARCH * HTTP/1.1" else { return nil }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].uppercased().trimmingSpaces()] = String(line[line.index(after: colon)...]).trimmingSpaces()
        }
        guard headers["MAN"] == "\"ssdp:discover\"", let target = headers["ST"], !target.isEmpty else { return nil }
        self.target = target
        let mx = headers["MX"].flatMap { $0.count <= 3 ? Int($0) : nil } ?? 1
        self.mx = min(max(mx, 1), 5)
    }
}
