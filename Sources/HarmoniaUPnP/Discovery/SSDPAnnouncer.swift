// SSDP discovery: NOTIFY alive/byebye and answers to M-SEARCH
// — specs/upnp.md §Discovery
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HarmoniaCore
import NIOCore
import NIOPosix

/// An IPv4 interface the renderer is announced on: the kernel's index for
/// it, its name and its address. Control points on it are given a LOCATION
/// with that address.
public struct SSDPInterface: Sendable, Equatable {
    public let index: Int
    public let name: String
    public let address: String

    public init(index: Int, name: String, address: String) {
        self.index = index
        self.name = name
        self.address = address
    }
}

/// Announces the renderer to 239.255.255.250:`port` on each of `interfaces`
/// and answers the searches that arrive on them, each with the LOCATION
/// that names the interface's own address (a machine on the LAN and one
/// behind a container bridge reach the description by different addresses).
///
/// - alive: at `start`, then every `interval` seconds (max-age 1800), on
///   every interface; byebye at `shutdown` (SIGTERM/SIGINT end the player
///   through it);
/// - M-SEARCH for `ssdp:all`, `upnp:rootdevice`, the device type, a service
///   type or the device's `uuid:` is answered to the sender after a random
///   wait of up to min(MX, 1) s, when it arrived on one of `interfaces`
///   that joined the group (so on loopback only, only loopback senders are
///   answered).
///
/// Threads: `start` and `shutdown` from one thread, never the event loop's
/// (they wait for it); the rest on its loop.
public final class SSDPAnnouncer: @unchecked Sendable {
    public static let multicastAddress = "239.255.255.250"
    let port: Int
    let uuid: String
    let interval: Double
    /// The interfaces asked for, and the description URL on each.
    let interfaces: [SSDPInterface]
    let location: @Sendable (SSDPInterface) -> String
    private let group: any EventLoopGroup
    /// The socket that receives searches (0.0.0.0:`port`, shared).
    private var receiver: (any Channel)?
    /// One socket per interface joined, sending its NOTIFYs out of it.
    private var senders: [(interface: SSDPInterface, channel: any Channel)] = []
    private var repeating: RepeatedTask?

    /// - Parameters:
    ///   - interfaces: numeric IPv4 addresses of this machine with their indexes.
    ///   - location: the description URL for an interface.
    public init(interfaces: [SSDPInterface], port: Int, uuid: String, interval: Double = 600, group: any EventLoopGroup,
                location: @escaping @Sendable (SSDPInterface) -> String) {
        self.interfaces = interfaces
        self.port = port
        self.uuid = uuid
        self.interval = interval
        self.group = group
        self.location = location
    }

    /// The interfaces announced on after `start`: those whose group join
    /// succeeded.
    public var announcedInterfaces: [SSDPInterface] { senders.map(\.interface) }

    /// The notification types and their USNs: root device, uuid, device type, each service.
    var targets: [(nt: String, usn: String)] {
        let udn = "uuid:" + uuid
        return [("upnp:rootdevice", udn + "::upnp:rootdevice"), (udn, udn),
                (UPnPDescription.deviceType, udn + "::" + UPnPDescription.deviceType)]
            + UPnPServiceSpec.all.map { ($0.serviceType, udn + "::" + $0.serviceType) }
    }

    /// Binds 0.0.0.0:`port` (shared: SO_REUSEADDR/SO_REUSEPORT) with the
    /// arrival interface of each datagram reported, joins the group on each
    /// interface (one that refuses is left out: see `announcedInterfaces`),
    /// opens a sending socket on each, sends alive and schedules the next.
    /// - Throws: `invalidArgument` for an address that is not IPv4;
    ///   `ioError` naming what failed when the port cannot be bound or no
    ///   interface could join the group.
    public func start() throws(CoreError) {
        var addresses: [in_addr] = []
        for interface in interfaces {
            var address = in_addr()
            guard inet_pton(AF_INET, interface.address, &address) == 1 else {
                throw .invalidArgument("SSDP: \(interface.address) is not an IPv4 address (SSDP is announced on IPv4 only)")
            }
            addresses.append(address)
        }
        var group = in_addr()
        _ = inet_pton(AF_INET, Self.multicastAddress, &group)
        let ip = NIOBSDSocket.OptionLevel(rawValue: CInt(IPPROTO_IP))
        // Searches are answered once the joins are known (the handler is
        // added below, for the interfaces that joined); until then a
        // datagram reaches no handler and is dropped.
        let bootstrap = DatagramBootstrap(group: self.group)
            .channelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .channelOption(ChannelOptions.socketOption(NIOBSDSocket.Option(rawValue: SO_REUSEPORT)), value: 1)
            .channelOption(ChannelOptions.receivePacketInfo, value: true)
        do {
            receiver = try bootstrap.bind(host: "0.0.0.0", port: port).wait()
        } catch {
            throw .ioError("SSDP: cannot listen on port \(port) (\(String(describing: error).prefix(160))): --upnp-ssdp-port off turns discovery off")
        }
        var failures: [String] = []
        for (interface, address) in zip(interfaces, addresses) {
            do {
                // The group joined and sent to on the interface by its
                // address (ip_mreq, in_addr): NIO's joinGroup(device:)
                // refuses an interface without IFF_MULTICAST, and lo has
                // none, though Linux delivers multicast on it.
                guard let options = receiver as? any SocketOptionProvider else { throw CoreError.ioError("no socket options") }
                try options.unsafeSetSocketOption(level: ip, name: NIOBSDSocket.Option(rawValue: IP_ADD_MEMBERSHIP),
                                                  value: ip_mreq(imr_multiaddr: group, imr_interface: address)).wait()
                let sender = try DatagramBootstrap(group: self.group).bind(host: interface.address, port: 0).wait()
                do {
                    guard let senderOptions = sender as? any SocketOptionProvider else { throw CoreError.ioError("no socket options") }
                    try senderOptions.unsafeSetSocketOption(level: ip, name: NIOBSDSocket.Option(rawValue: IP_MULTICAST_IF), value: address).wait()
                    try sender.setOption(ChannelOptions.ipOption(.ip_multicast_loop), value: 1).wait()
                    try sender.setOption(ChannelOptions.ipOption(.ip_multicast_ttl), value: 2).wait()
                } catch {
                    try? sender.close().wait()
                    throw error
                }
                senders.append((interface, sender))
            } catch {
                failures.append("\(interface.name) \(interface.address): \(String(describing: error).prefix(120))")
            }
        }
        let locations = Dictionary(senders.map { ($0.interface.index, location($0.interface)) }, uniquingKeysWith: { first, _ in first })
        let handlerTargets = targets
        do {
            guard !senders.isEmpty else {
                throw CoreError.ioError("SSDP: cannot join \(Self.multicastAddress) on any interface (\(failures.joined(separator: "; ")))")
            }
            guard let receiver else { throw CoreError.ioError("SSDP: no socket") }
            try receiver.eventLoop.submit {
                try receiver.pipeline.syncOperations.addHandler(SSDPSearchHandler(targets: handlerTargets, locations: locations))
            }.wait()
        } catch {
            for (_, channel) in senders { try? channel.close().wait() }
            senders = []
            try? receiver?.close().wait()
            receiver = nil
            let why = (error as? CoreError)?.message ?? "SSDP: \(String(describing: error).prefix(160))"
            throw .ioError("\(why): --upnp-ssdp-port off turns discovery off")
        }
        announce("ssdp:alive")
        let interval = TimeAmount.nanoseconds(Int64(self.interval * 1e9))
        repeating = receiver?.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { [self] _ in announce("ssdp:alive") }
    }

    /// Sends byebye for every target on every interface and closes the
    /// sockets (waits for the sends).
    public func shutdown() {
        // Cancelled on the loop and waited for: an announce running there
        // reads `senders`, which is emptied below.
        if let repeating, let loop = receiver?.eventLoop {
            let cancelled = loop.makePromise(of: Void.self)
            repeating.cancel(promise: cancelled)
            try? cancelled.futureResult.wait()
        }
        repeating = nil
        guard receiver != nil else { return }
        announce("ssdp:byebye")
        for (_, channel) in senders { try? channel.close().wait() }
        senders = []
        try? receiver?.close().wait()
        receiver = nil
    }

    /// One NOTIFY per target to the group, out of each interface.
    private func announce(_ nts: String) {
        guard let group = try? SocketAddress(ipAddress: Self.multicastAddress, port: port) else { return }
        for (interface, channel) in senders {
            for (nt, usn) in targets {
                var lines = ["NOTIFY * HTTP/1.1", "HOST: \(Self.multicastAddress):\(port)", "NT: \(nt)", "NTS: \(nts)", "USN: \(usn)",
                             "BOOTID.UPNP.ORG: 1", "CONFIGID.UPNP.ORG: 1"]
                if nts == "ssdp:alive" {
                    lines += ["CACHE-CONTROL: max-age=1800", "LOCATION: \(location(interface))", "SERVER: \(UPnPServer.header)"]
                }
                let text = lines.joined(separator: "\r\n") + "\r\n\r\n"
                channel.writeAndFlush(AddressedEnvelope(remoteAddress: group, data: ByteBuffer(string: text)), promise: nil)
            }
        }
    }
}

/// Answers M-SEARCH requests that arrive on an announced interface, with
/// that interface's LOCATION. Threads: the channel's event loop.
private final class SSDPSearchHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>
    let targets: [(nt: String, usn: String)]
    /// The description URL by the index of the interface a search arrived on.
    let locations: [Int: String]

    init(targets: [(nt: String, usn: String)], locations: [Int: String]) {
        self.targets = targets
        self.locations = locations
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        guard envelope.data.readableBytes <= 2048 else { return }
        // The socket hears the group on every interface any program joined
        // (IP_MULTICAST_ALL): a search from elsewhere is not ours to answer.
        guard let arrival = envelope.metadata?.packetInfo?.interfaceIndex, let location = locations[arrival] else { return }
        let sender = envelope.remoteAddress
        let text = String(decoding: envelope.data.readableBytesView, as: UTF8.self)
        guard let search = SSDPSearch(text) else { return }
        let answers = targets.filter { search.target == "ssdp:all" || search.target == $0.nt }
        guard !answers.isEmpty else { return }
        let date = Self.httpDate()
        let channel = context.channel
        let delay = Double.random(in: 0...min(Double(search.mx), 1))
        context.eventLoop.scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) {
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
