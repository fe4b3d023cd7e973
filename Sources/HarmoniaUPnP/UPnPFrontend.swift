// The UPnP/DLNA MediaRenderer as a frontend of the player
// — specs/upnp.md §Mapping to the application layer
import Foundation
import HarmoniaControl
import HarmoniaCore
import NIOCore
import NIOPosix

/// Where and as what the renderer is seen.
public struct UPnPConfiguration: Sendable {
    /// The HTTP server's numeric address and port (0: any free port).
    public var host: String
    public var port: Int
    /// friendlyName: what control points list.
    public var friendlyName: String
    /// The device's UUID (UDN without "uuid:"), kept across restarts.
    public var uuid: String
    /// SSDP's port (1900), or nil for no discovery (the description URL only).
    public var ssdpPort: Int? = 1900
    /// Seconds between alive announcements.
    public var announceInterval: Double = 600

    public init(host: String, port: Int, friendlyName: String, uuid: String) {
        self.host = host
        self.port = port
        self.friendlyName = friendlyName
        self.uuid = uuid
    }

    /// The port when none is given.
    public static let defaultPort = 49594
}

/// Takes the HTTP port and announces the device when the player opens; runs
/// each control request as a job on the main loop (so it is ordered with
/// every other frontend's commands and the events); after every event,
/// publishes the evented variables to the subscribers; says byebye and
/// closes at shutdown.
///
/// Threads: the `PlayerFrontend` methods on the main loop.
public final class UPnPFrontend: PlayerFrontend, @unchecked Sendable {
    public let configuration: UPnPConfiguration
    public let renderer: UPnPRenderer
    private let announce: (String) -> Void
    public private(set) var server: UPnPHTTPServer?
    private var ssdp: SSDPAnnouncer?

    /// - Parameter announce: lines for standard error once listening.
    public init(configuration: UPnPConfiguration, actions: PlayerActions, announce: @escaping (String) -> Void) {
        self.configuration = configuration
        self.renderer = UPnPRenderer(actions: actions)
        self.announce = announce
    }

    public var waitsForCommands: Bool { true }

    /// Takes the port and starts SSDP (a taken port ends the run).
    public func open(_ app: PlayerApplication) throws(CoreError) {
        let inbox = app.inbox, renderer = self.renderer
        let routes = UPnPHTTPRoutes(friendlyName: configuration.friendlyName, uuid: configuration.uuid) { request, reply in
            inbox.post(.job {
                do throws(UPnPError) {
                    reply(.success(try renderer.perform(request)))
                } catch {
                    reply(.failure(error))
                }
                return .continue
            })
        }
        let server = UPnPHTTPServer(host: configuration.host, port: configuration.port, routes: routes)
        try server.bind()
        self.server = server
        server.subscriptions.publish(service: UPnPServiceSpec.connectionManager.name, variables: [
            ("SourceProtocolInfo", ""), ("SinkProtocolInfo", renderer.sinkProtocolInfo), ("CurrentConnectionIDs", "0"),
        ])
        let interfaces: [SSDPInterface]
        do {
            interfaces = try Self.announcedInterfaces(configuration.host)
        } catch {
            server.shutdown()
            throw error
        }
        let port = server.port
        let location: @Sendable (SSDPInterface) -> String = {
            "http://\($0.address.contains(":") ? "[\($0.address)]" : $0.address):\(port)\(UPnPDescription.path)"
        }
        var announced = interfaces
        if let ssdpPort = configuration.ssdpPort {
            let ssdp = SSDPAnnouncer(interfaces: interfaces, port: ssdpPort, uuid: configuration.uuid,
                                     interval: configuration.announceInterval, group: server.group, location: location)
            do {
                try ssdp.start()
            } catch {
                server.shutdown()  // the run ends: the port is given back at once
                throw error
            }
            self.ssdp = ssdp
            announced = ssdp.announcedInterfaces
        }
        for interface in announced {
            announce("UPnP renderer \"\(configuration.friendlyName)\" on \(location(interface))")
        }
        let left = Set(interfaces.map(\.name)).subtracting(announced.map(\.name)).sorted()
        if !left.isEmpty {
            announce("UPnP: not announced on \(left.joined(separator: ", ")): the SSDP group could not be joined there")
        }
        if !Self.isLoopback(configuration.host) {
            announce("UPnP: anyone who reaches \(configuration.host):\(server.port) can make this player fetch and play http(s) URLs, pause, seek, stop and set the volume")
        }
    }

    public func start(_ app: PlayerApplication) {
        publish()
        server?.start()
    }

    public func show(_ event: PlaybackEvent) {
        if case .queueChanged = event { renderer.prune() }
        publish()
    }

    public func settled(at stamp: EventStamp) { publish() }

    /// The evented variables of AVTransport and RenderingControl, as now (main loop).
    private func publish() {
        guard let subscriptions = server?.subscriptions else { return }
        subscriptions.publish(service: UPnPServiceSpec.avTransport.name, variables: renderer.avTransportVariables())
        subscriptions.publish(service: UPnPServiceSpec.renderingControl.name, variables: renderer.renderingVariables())
    }

    public func shutdown() {
        ssdp?.shutdown()
        server?.shutdown()
    }

    /// The interfaces announced on: for 0.0.0.0 every interface with an
    /// IPv4 address that is not loopback and takes multicast (a LAN card, a
    /// Wi-Fi card, a container bridge: each is told its own LOCATION);
    /// otherwise the interface that holds the listen address.
    /// - Throws: `ioError` for 0.0.0.0 on a machine with no such interface.
    static func announcedInterfaces(_ host: String) throws(CoreError) -> [SSDPInterface] {
        let devices = (try? System.enumerateDevices()) ?? []
        let ipv4 = devices.compactMap { device -> (device: NIONetworkDevice, address: String)? in
            guard let address = device.address, address.protocol == .inet, let text = address.ipAddress else { return nil }
            return (device, text)
        }
        guard host == "0.0.0.0" else {
            guard let found = ipv4.first(where: { $0.address == host }) else {
                // Not an IPv4 address of an interface (an IPv6 listen
                // address): SSDPAnnouncer refuses it in one line.
                return [SSDPInterface(index: 0, name: host, address: host)]
            }
            return [SSDPInterface(index: found.device.interfaceIndex, name: found.device.name, address: host)]
        }
        var seen = Set<Int>()  // an interface's first address only
        let interfaces = ipv4.filter { !$0.address.hasPrefix("127.") && $0.device.multicastSupported }
            .filter { seen.insert($0.device.interfaceIndex).inserted }
            .map { SSDPInterface(index: $0.device.interfaceIndex, name: $0.device.name, address: $0.address) }
        guard !interfaces.isEmpty else {
            throw .ioError("UPnP: --upnp-listen 0.0.0.0 but this machine has no IPv4 interface beyond loopback that takes multicast to announce on")
        }
        return interfaces
    }

    static func isLoopback(_ host: String) -> Bool { host.hasPrefix("127.") || host == "::1" }
}

/// The device's UUID, kept in a file so control points know it again after a restart.
public enum UPnPDeviceID {
    /// The UUID in `file`, or a new one written there (mode 0600) when the
    /// file is missing or holds no UUID.
    /// - Throws: `ioError` when a new one cannot be written.
    public static func load(orCreateAt file: String) throws(CoreError) -> String {
        if let data = FileManager.default.contents(atPath: file), data.count <= 256,
           let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
           let uuid = UUID(uuidString: text) {
            return uuid.uuidString.lowercased()
        }
        let uuid = UUID().uuidString.lowercased()
        guard FileManager.default.createFile(atPath: file, contents: Data((uuid + "\n").utf8), attributes: [.posixPermissions: 0o600]) else {
            throw .ioError("\(file): cannot write the UPnP device's UUID")
        }
        return uuid
    }
}
