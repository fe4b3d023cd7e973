// --listen, --token, --allow-host, --tls-cert/--tls-key: the control protocol
// over WebSocket and the web remote, for `play` and `serve`
// — specs/control-protocol.md §WebSocket
import ArgumentParser
import Foundation
import HarmoniaControl
import HarmoniaCore
#if canImport(HarmoniaWebSocket)
import HarmoniaWebSocket
#endif

struct WebRemoteOptions: ParsableArguments {
    @Option(help: ArgumentHelp("Serve the web remote and the control protocol over WebSocket (ws://ADDR:PORT/ws), or 'off'. An address beyond loopback needs a token: --token, or one made on first start and kept in the state folder. (serve: default 127.0.0.1:6680; play: off)", valueName: "[ADDR:]PORT|off"))
    var listen: String?

    @Option(help: ArgumentHelp("The token WebSocket clients must give (first message 'auth', or 'Authorization: Bearer'); then required on loopback too.", valueName: "TOKEN"))
    var token: String?

    @Option(name: .customLong("allow-host"), help: ArgumentHelp("A host name browsers may use to reach the web remote besides its address and localhost (a reverse proxy's name); repeatable.", valueName: "NAME"))
    var allowHosts: [String] = []

    @Option(name: .customLong("tls-cert"), help: ArgumentHelp("Serve the web remote over TLS (https, wss) with this PEM certificate chain (needs --tls-key).", valueName: "FILE"))
    var tlsCertificate: String?

    @Option(name: .customLong("tls-key"), help: ArgumentHelp("The PEM private key of --tls-cert.", valueName: "FILE"))
    var tlsKey: String?

    /// Where to listen: `listen`, else `defaultListen`; nil when off.
    func address(defaultListen: String?) -> ListenAddress? {
        guard let text = listen ?? defaultListen, text != "off" else { return nil }
        return ListenAddress(text)
    }

    func check(defaultListen: String?) throws {
        if let listen, listen != "off", ListenAddress(listen) == nil {
            throw ValidationError("--listen must be [ADDR:]PORT with a numeric address (127.0.0.1:6680, [::1]:6680, 6680) or 'off'; got '\(listen.prefix(80))'")
        }
        if let token {
            guard !token.isEmpty, token.count <= 256, !token.contains(where: { $0.isWhitespace || !$0.isASCII }) else {
                throw ValidationError("--token must be 1 to 256 printable ASCII characters without spaces")
            }
        }
        if (tlsCertificate == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
        #if !canImport(HarmoniaWebSocket)
        if address(defaultListen: defaultListen) != nil {
            throw ValidationError("--listen: this harmonia-play was built without the web remote (HARMONIA_WITHOUT_WEB); use --listen off")
        }
        #endif
    }

    /// The WebSocket frontend on `dispatcher`, or nil when off. Without
    /// --token, a listen address beyond loopback gets the token kept in
    /// `stateFolder` (made, and printed once, on first start).
    func frontend(dispatcher: ControlDispatcher, stateFolder: String, defaultListen: String?) throws(CoreError) -> (any PlayerFrontend)? {
        #if canImport(HarmoniaWebSocket)
        guard let address = address(defaultListen: defaultListen) else { return nil }
        var configuration = WebRemoteConfiguration(host: address.host, port: Int(address.port), token: token)
        configuration.allowedHosts = allowHosts
        configuration.tlsCertificate = tlsCertificate
        configuration.tlsKey = tlsKey
        if token == nil && !address.isLoopback {
            try ServePaths.makeFolder(for: stateFolder + "/web-token")
            let file = stateFolder + "/web-token"
            let (token, created) = try WebRemoteToken.load(orCreateAt: file)
            configuration.token = token
            if created { Console.err("harmonia-play: web remote token (kept in \(file)): \(token)") }
        }
        let server = WebRemoteServer(configuration: configuration, log: { Console.err($0) })
        return WebRemoteFrontend(server: server, dispatcher: dispatcher, announce: { Console.err("harmonia-play: " + $0) })
        #else
        return nil
        #endif
    }

    /// The state folder when no state file says otherwise: $XDG_STATE_HOME/harmonia-play.
    static var defaultStateFolder: String {
        ((ServePaths(musicDir: nil, database: nil, state: nil).state ?? "") as NSString).deletingLastPathComponent
    }
}
