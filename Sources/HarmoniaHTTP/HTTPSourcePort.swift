// HTTPSourcePort — specs/network.md §Policy
import HarmoniaCore

/// The numbers of the network policy. Every field has the default that
/// specs/network.md documents.
public struct HTTPSourceConfiguration: Sendable {
    /// Seconds without a byte of data after which a source gives up with `ioError`.
    public var networkTimeout: Double = 15
    /// Seconds an open connection (or a connection attempt) may bring nothing
    /// before it is dropped and the next attempt resumes at the same byte.
    public var stallTimeout: Double = 3
    /// Back-off before the first reconnect; it doubles up to `maxBackoff`.
    public var firstBackoff: Double = 0.1
    public var maxBackoff: Double = 2
    /// Extra request headers, `Name: value`, sent on every request (an
    /// `Authorization` header only to the URL's own host, not after a
    /// redirect to another).
    public var headers: [String] = []
    /// More headers for one URL (a track's own token, say), after `headers`;
    /// asked once per source, with the track's original URL, on the thread
    /// that opens it. Kept across reconnects and renewed links.
    public var headersForURL: (@Sendable (_ url: String) -> [String])?
    public var userAgent = "HarmoniaCore-Linux"
    /// Asked for a fresh link when the server refuses the current one (401,
    /// 403, 410: a signed URL that expired), with the track's original URL
    /// and the status; the stream then resumes at the same byte from the
    /// returned URL. Called on the source's transfer thread; it may block
    /// (ask a server, wait for a client) — the source waits. nil: the
    /// source fails with `ioError`. Without it, a refusal fails at once.
    public var renewLink: (@Sendable (_ url: String, _ status: Int) -> String?)?
    /// Verify https certificates against the system's trust store.
    public var verifyTLS = true
    public var maxRedirects = 8
    /// Bytes read ahead of the decoder at most.
    public var windowBytes = 2 << 20
    /// Bytes kept behind the decoder (a demuxer's small backward seeks).
    public var keepBehindBytes = 256 << 10
    /// The resource's first bytes kept for a demuxer's probing seeks.
    public var headBytes = 512 << 10
    /// A forward seek at most this far beyond what has arrived reads on
    /// instead of asking again.
    public var forwardSkipBytes: Int64 = 256 << 10

    public init() {}

    /// `networkTimeout` checked: a finite number of seconds above 0.
    public init(networkTimeout: Double, headers: [String] = [], verifyTLS: Bool = true) {
        if networkTimeout.isFinite, networkTimeout > 0 { self.networkTimeout = networkTimeout }
        self.stallTimeout = min(stallTimeout, self.networkTimeout)
        self.headers = headers
        self.verifyTLS = verifyTLS
    }
}

/// `ByteSourcePort` for http and https on libcurl, with the engine's own
/// reconnect policy (specs/network.md). HLS playlists (`.m3u8`) are not
/// handled: the decoder's demuxer opens their segments itself.
///
/// Threads: any; each source runs one transfer thread of its own.
public struct HTTPSourcePort: ByteSourcePort {
    public let configuration: HTTPSourceConfiguration

    public init(configuration: HTTPSourceConfiguration = HTTPSourceConfiguration()) {
        self.configuration = configuration
    }

    public func handles(url: String) -> Bool {
        let lower = url.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return false }
        let path = lower.split(separator: "?", maxSplits: 1).first ?? ""
        return !path.hasSuffix(".m3u8")
    }

    public func open(url: String, observer: (@Sendable (NetworkEvent) -> Void)?,
                     interrupted: @escaping @Sendable () -> Bool) throws(CoreError) -> any ByteSource {
        guard handles(url: url) else { throw .invalidArgument("\(url): not an http(s) URL this source opens") }
        let stream = HTTPStream(url: url, configuration: configuration, observer: observer, interrupted: interrupted)
        do {
            try stream.start()
        } catch {
            stream.cancel()
            throw error
        }
        return stream
    }
}
