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
        let interface: String
        do {
            interface = try Self.announcedAddress(configuration.host)
        } catch {
            server.shutdown()
            throw error
        }
        let location = "http://\(interface.contains(":") ? "[\(interface)]" : interface):\(server.port)\(UPnPDescription.path)"
        announce("UPnP renderer \"\(configuration.friendlyName)\" on \(location)")
        if !Self.isLoopback(configuration.host) {
            announce("UPnP: anyone who reaches \(configuration.host):\(server.port) can make this player fetch and play http(s) URLs, pause, seek, stop and set the volume")
        }
        if let ssdpPort = configuration.ssdpPort {
            let ssdp = SSDPAnnouncer(interface: interface, port: ssdpPort, location: location, uuid: configuration.uuid,
                                     interval: configuration.announceInterval, group: server.group)
            do {
                try ssdp.start()
            } catch {
                server.shutdown()  // the run ends: the port is given back at once
                throw error
            }
            self.ssdp = ssdp
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

    /// The address put in LOCATION: the listen address, or for 0.0.0.0 the
    /// first IPv4 address of an interface that is not loopback.
    static func announcedAddress(_ host: String) throws(CoreError) -> String {
        guard host == "0.0.0.0" else { return host }
        let devices = (try? System.enumerateDevices()) ?? []
        guard let address = devices.compactMap({ $0.address?.ipAddress }).first(where: { !$0.contains(":") && !$0.hasPrefix("127.") }) else {
            throw .ioError("UPnP: --upnp-listen 0.0.0.0 but this machine has no IPv4 address beyond loopback to announce")
        }
        return address
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
