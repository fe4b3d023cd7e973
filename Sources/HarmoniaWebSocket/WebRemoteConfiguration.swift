// The web remote's settings and its request policy: which Host and Origin
// headers are let in — specs/control-protocol.md §WebSocket
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// How the web remote listens and whom it lets in. A value; any thread.
public struct WebRemoteConfiguration: Sendable {
    /// A numeric address ("127.0.0.1", "0.0.0.0", "::1") and a port (0: any free port).
    public var host: String
    public var port: Int
    /// Required from every client when set (`auth` or `Authorization: Bearer`).
    public var token: String?
    /// Host names besides the listen address and localhost that browsers may
    /// use to reach the page (a reverse proxy's name, "music.local").
    public var allowedHosts: [String] = []
    /// TLS: PEM files of the certificate chain and its private key.
    public var tlsCertificate: String?
    public var tlsKey: String?
    /// A message (all its fragments together) larger than this closes the
    /// connection with 1009.
    public var maxMessageBytes = 1 << 20
    /// Replies and events a client has not read, at most; a client whose
    /// backlog passes this is dropped.
    public var maxOutboxBytes = 1 << 20
    /// A ping goes out this often; a client that has not answered the
    /// previous one by then is closed (1001).
    public var pingInterval: TimeAmount = 30
    /// A client that has not authenticated this long after connecting is closed (4401).
    public var authTimeout: TimeAmount = 10
    /// A wrong token is answered this long after the previous wrong one at
    /// the earliest: guesses are held to one a second for the whole server.
    public var failedAuthDelay: TimeAmount = 1

    /// Seconds.
    public typealias TimeAmount = Double

    public init(host: String = "127.0.0.1", port: Int = 6680, token: String? = nil) {
        self.host = host
        self.port = port
        self.token = token
    }

    /// The Host/Origin rule for this listen address.
    public var policy: WebRequestPolicy { WebRequestPolicy(listenHost: host, allowedHosts: allowedHosts) }
}

/// Keeps other web sites from driving the player through the user's own
/// browser: cross-site WebSocket hijacking (a page elsewhere opening
/// `ws://127.0.0.1:6680/ws`) and DNS rebinding (a name of theirs made to
/// point at this machine).
///
/// - A request's `Host` names this server: localhost, a loopback address,
///   the listen address, any numeric address when listening on all of them
///   (0.0.0.0, ::), or a host given with `--allow-host`.
/// - No `Origin` (a program, not a browser) is let in; otherwise `Origin`
///   must be the same host and port as `Host` (the page served here).
public struct WebRequestPolicy: Sendable, Equatable {
    public let listenHost: String
    public let allowedHosts: [String]

    public init(listenHost: String, allowedHosts: [String] = []) {
        self.listenHost = listenHost
        self.allowedHosts = allowedHosts.map { $0.lowercased() }
    }

    /// Why the request is refused (a line for the 403 body), or nil when it may go on.
    public func refusal(host: String?, origin: String?) -> String? {
        guard let host, let authority = Authority(host) else { return "a Host header is required" }
        guard isAllowed(authority.name) else {
            return "Host '\(authority.name.prefix(100))' is not this server's (use the address it listens on, or start it with --allow-host NAME)"
        }
        guard let origin else { return nil }
        guard let originAuthority = Authority(origin: origin) else { return "Origin '\(origin.prefix(100))' is not a web origin" }
        guard originAuthority.name == authority.name,
              (originAuthority.port ?? originAuthority.defaultPort) == (authority.port ?? originAuthority.defaultPort) else {
            return "Origin '\(origin.prefix(100))' is another site: only the page served here may connect"
        }
        return nil
    }

    private func isAllowed(_ name: String) -> Bool {
        if name == "localhost" || allowedHosts.contains(name) { return true }
        guard let address = Self.numeric(name) else { return false }
        if Self.isLoopback(address) { return true }
        if let listen = Self.numeric(listenHost) {
            if Self.isWildcard(listen) { return true }  // any of this machine's addresses
            return address == listen
        }
        return false
    }

    /// A numeric address, normalised ("::0001" and "::1" are one), or nil for a name.
    static func numeric(_ text: String) -> [UInt8]? {
        var v4 = in_addr(), v6 = in6_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    static func isLoopback(_ address: [UInt8]) -> Bool {
        address.count == 4 ? address[0] == 127 : address == [UInt8](repeating: 0, count: 15) + [1]
    }

    static func isWildcard(_ address: [UInt8]) -> Bool { address.allSatisfy { $0 == 0 } }

    /// A Host header's or an origin's host (lowercased, IPv6 without
    /// brackets) and port.
    struct Authority: Equatable {
        var name: String
        var port: Int?
        var defaultPort = 80

        /// "example.org", "example.org:8080", "[::1]:6680".
        init?(_ text: String) {
            let text = text.lowercased()
            guard !text.isEmpty, text.utf8.count <= 300, !text.contains("/"), !text.contains("@"), !text.contains(" ") else { return nil }
            if text.hasPrefix("[") {
                guard let close = text.firstIndex(of: "]") else { return nil }
                name = String(text[text.index(after: text.startIndex)..<close])
                let rest = text[text.index(after: close)...]
                if rest.isEmpty { return }
                guard rest.hasPrefix(":"), let port = Self.port(rest.dropFirst()) else { return nil }
                self.port = port
            } else if let colon = text.lastIndex(of: ":") {
                name = String(text[..<colon])
                guard !name.contains(":"), let port = Self.port(text[text.index(after: colon)...]) else { return nil }
                self.port = port
            } else {
                name = text
            }
            guard !name.isEmpty else { return nil }
        }

        /// "http://example.org:8080" (an `Origin` header).
        init?(origin: String) {
            let lower = origin.lowercased()
            let (scheme, rest): (Int, Substring)
            if lower.hasPrefix("http://") { (scheme, rest) = (80, lower.dropFirst(7)) }
            else if lower.hasPrefix("https://") { (scheme, rest) = (443, lower.dropFirst(8)) }
            else { return nil }
            guard var authority = Authority(String(rest)) else { return nil }
            authority.defaultPort = scheme
            self = authority
        }

        private static func port(_ text: Substring) -> Int? {
            guard (1...5).contains(text.count), text.allSatisfy({ $0.isASCII && $0.isNumber }), let port = Int(text), port <= 65535 else { return nil }
            return port
        }
    }
}
