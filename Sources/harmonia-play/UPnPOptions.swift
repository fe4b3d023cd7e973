// --upnp, --upnp-listen, --upnp-name, --upnp-ssdp-port: the UPnP/DLNA
// renderer for `serve` — specs/upnp.md §Options
import ArgumentParser
import Foundation
import HarmoniaControl
import HarmoniaCore
#if canImport(HarmoniaUPnP)
import HarmoniaUPnP
#endif

struct UPnPOptions: ParsableArguments {
    @Flag(help: "Be a UPnP/DLNA media renderer: Home Assistant, Music Assistant, BubbleUPnP and other control points find it and play http(s) URLs on it.")
    var upnp = false

    @Option(name: .customLong("upnp-listen"), help: ArgumentHelp("The renderer's HTTP server (description, control, events); a control point on another machine needs an address it reaches, e.g. 0.0.0.0:49594.", valueName: "[ADDR:]PORT"))
    var listen = "127.0.0.1:49594"

    @Option(name: .customLong("upnp-name"), help: ArgumentHelp("The name control points show (default: Harmonia on HOSTNAME).", valueName: "NAME"))
    var name: String?

    @Option(name: .customLong("upnp-ssdp-port"), help: ArgumentHelp("SSDP discovery's port, or 'off' (control points then need the description URL).", valueName: "PORT|off"))
    var ssdpPort = "1900"

    func check() throws {
        guard upnp else { return }
        guard let address = ListenAddress(listen) else {
            throw ValidationError("--upnp-listen must be [ADDR:]PORT with a numeric address (127.0.0.1:49594, 0.0.0.0:49594, 49594); got '\(listen.prefix(80))'")
        }
        if ssdpPort != "off" {
            guard ssdpPort.count <= 5, let port = UInt16(ssdpPort), port > 0 else {
                throw ValidationError("--upnp-ssdp-port must be a port (1-65535) or 'off'; got '\(ssdpPort.prefix(20))'")
            }
            if address.host.contains(":") { throw ValidationError("--upnp-listen on IPv6: SSDP is announced on IPv4 only; add --upnp-ssdp-port off") }
        }
        if let name, name.isEmpty || name.utf8.count > 64 || name.contains(where: { $0.isNewline }) {
            throw ValidationError("--upnp-name must be 1 to 64 bytes on one line")
        }
        #if !canImport(HarmoniaUPnP)
        throw ValidationError("--upnp: this harmonia-play was built without swift-nio (HARMONIA_WITHOUT_WEB)")
        #endif
    }

    /// The renderer frontend, or nil without --upnp. Its UUID is kept in
    /// `stateFolder/upnp-uuid` (made on first start).
    func frontend(actions: PlayerActions, stateFolder: String) throws(CoreError) -> (any PlayerFrontend)? {
        #if canImport(HarmoniaUPnP)
        guard upnp, let address = ListenAddress(listen) else { return nil }
        try ServePaths.makeFolder(for: stateFolder + "/upnp-uuid")
        let uuid = try UPnPDeviceID.load(orCreateAt: stateFolder + "/upnp-uuid")
        var configuration = UPnPConfiguration(host: address.host, port: Int(address.port),
                                              friendlyName: name ?? "Harmonia on \(ProcessInfo.processInfo.hostName)", uuid: uuid)
        configuration.ssdpPort = ssdpPort == "off" ? nil : Int(ssdpPort)
        return UPnPFrontend(configuration: configuration, actions: actions, announce: { Console.err("harmonia-play: " + $0) })
        #else
        return nil
        #endif
    }
}
