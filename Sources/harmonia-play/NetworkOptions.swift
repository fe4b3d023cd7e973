// The network options of `play`, `decode` and `serve`, and the stream
// cache's — specs/network.md §Options, specs/offline.md §Playback, §Cache
import ArgumentParser
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaHTTP
import HarmoniaOfflineStore
import Synchronization

/// `--network-timeout`, `--http-header`, `--user-agent`, `--insecure`.
struct NetworkOptions: ParsableArguments {
    @Option(name: .customLong("network-timeout"),
            help: ArgumentHelp("Seconds an http(s) source may send no data before it fails (default 15); until then it reconnects.", valueName: "SECONDS"))
    var timeout: Double?

    @Option(name: .customLong("http-header"),
            help: ArgumentHelp("An extra HTTP request header, 'Name: value' (repeatable). An Authorization header goes to the URL's own host only, never after a redirect to another.", valueName: "HEADER"))
    var headers: [String] = []

    @Option(name: .customLong("user-agent"), help: ArgumentHelp("The User-Agent sent to http(s) servers.", valueName: "TEXT"))
    var userAgent: String?

    @Flag(help: "Do not verify https certificates (a self-signed server). Without it, a certificate the system does not trust is an error.")
    var insecure = false

    @Option(name: .long, help: ArgumentHelp("The offline store and stream cache: a URL with a complete copy there plays from disk, with no request (default: $XDG_DATA_HOME/harmonia-play/offline; made only when the cache is on).", valueName: "DIR"))
    var store: String?

    func validate() throws {
        if let timeout, !(timeout.isFinite && timeout > 0 && timeout <= 86_400) {
            throw ValidationError("--network-timeout must be a number of seconds above 0 (at most a day)")
        }
        for header in headers {
            guard let colon = header.firstIndex(of: ":"), colon != header.startIndex,
                  !header.contains(where: { $0 == "\r" || $0 == "\n" }) else {
                throw ValidationError("--http-header must be 'Name: value' on one line; got '\(header)'")
            }
        }
        if let userAgent, userAgent.contains(where: { $0 == "\r" || $0 == "\n" }) {
            throw ValidationError("--user-agent must be one line")
        }
    }

    /// The policy these options set.
    var configuration: HTTPSourceConfiguration {
        var configuration = HTTPSourceConfiguration(networkTimeout: timeout ?? HTTPSourceConfiguration().networkTimeout,
                                                    headers: headers, verifyTLS: !insecure)
        if let userAgent { configuration.userAgent = userAgent }
        return configuration
    }

    /// A decoder that reads http(s) with this policy, through the store
    /// (and, with `cache` on, keeping what it streams): `opened` when given
    /// (`serve`'s, which downloads into it too), else `--store`'s or the
    /// default one, opened when the first stream opens. With `renewals`, a
    /// refused link waits (up to the network timeout) for a control client's
    /// `renew`; without, it fails at once.
    func decoder(logger: any LoggerPort = NoopLoggerAdapter(), renewals: LinkRenewals? = nil,
                 cache: CacheOptions? = nil, keys: OfflineKeyPolicy = OfflineKeyPolicy(),
                 opened: OfflineStore? = nil) -> FFmpegDecoderAdapter {
        var configuration = self.configuration
        if let renewals {
            let timeout = configuration.networkTimeout
            configuration.renewLink = { url, _ in renewals.wait(for: url, seconds: timeout) }
        }
        let network = HTTPSourcePort(configuration: configuration)
        let settings = OfflineCacheSettings(limit: cache?.limit ?? 0, http: configuration)
        let store = self.store
        // The store is opened (and made) when the first stream opens, not for a play of local files.
        let source = DeferredByteSourcePort(handling: network) { () -> any ByteSourcePort in
            guard let offline = opened ?? Self.openStore(store, create: settings.limit > 0) else { return network }
            return OfflineByteSourcePort(store: offline, network: network, keys: keys, cache: settings)
        }
        return FFmpegDecoderAdapter(logger: logger, networkTimeout: configuration.networkTimeout,
                                    networkSource: source,
                                    verifyTLS: configuration.verifyTLS, httpHeaders: configuration.headers)
    }

    /// The offline store to play from: `--store DIR` (made when missing; a
    /// store that cannot be opened is reported in one line and the network
    /// used), else the default folder when it holds an index (made only
    /// when `create`: the cache is on, or `serve`).
    static func openStore(_ store: String?, create: Bool) -> OfflineStore? {
        let directory = store ?? OfflineStore.defaultDirectory()
        if store == nil, !create, !FileManager.default.fileExists(atPath: directory + "/index.sqlite") { return nil }
        do {
            return try OfflineStore(directory: directory)
        } catch {
            Console.report(directory, error)
            return nil
        }
    }

    /// The store's downloads (the control protocol's `offline/add`) under
    /// this network policy and `keys`: the store `openStore` gives, made at
    /// the default folder when `createDefault` (`serve`).
    func offlineCopies(createDefault: Bool = false, keys: OfflineKeyPolicy) -> OfflineStoreCopies? {
        guard let opened = Self.openStore(store, create: createDefault) else { return nil }
        var options = OfflineDownloadOptions()
        options.http = configuration
        options.giveUpAfter = configuration.networkTimeout
        options.http.stallTimeout = min(options.http.stallTimeout, configuration.networkTimeout)
        options.probe = probeAudio
        return OfflineStoreCopies(store: opened, options: options, keys: keys)
    }
}

/// A downloaded copy's check before it is recorded complete
/// (`OfflineDownloadOptions.probe`): FFmpeg opens the file and decodes its
/// first frames. Throws what the decoder says (a page, not audio).
@Sendable func probeAudio(path: String) throws(CoreError) {
    let decoder = FFmpegDecoderAdapter()
    let handle = try decoder.open(url: path)
    defer { decoder.close(handle) }
    let channels = try decoder.info(handle).channels
    let frames = 1024
    let samples = UnsafeMutablePointer<Float>.allocate(capacity: frames * max(1, channels))
    defer { samples.deallocate() }
    let got = try decoder.read(handle, into: samples, maxFrames: frames)
    guard got > 0 else { throw .unsupported("\(path): no audio frames could be decoded") }
}

/// `--cache`, `--cache-key-drop` (play and serve) — specs/offline.md §Cache, §Keys.
struct CacheOptions: ParsableArguments {
    @Option(name: .customLong("cache"), help: ArgumentHelp("The stream cache: every http(s) stream is kept in the store as it plays, up to SIZE bytes in all (500M, 2G, 100K; 'off' disables); the least recently played go first. Default 1G, or $HARMONIA_PLAY_CACHE.", valueName: "SIZE|off"))
    var cache: String?

    @Option(name: .customLong("cache-key-drop"), help: ArgumentHelp("A query parameter left out of the store's key, so a signed URL finds the same entry each time (repeatable; * is a wildcard: --cache-key-drop 'X-Amz-*').", valueName: "PARAM"))
    var keyDrop: [String] = []

    func validate() throws {
        _ = try limitOrThrow()
        if keyDrop.contains(where: \.isEmpty) { throw ValidationError("--cache-key-drop needs a parameter name (or a pattern with *)") }
    }

    /// Bytes the cache may hold; 0 when off.
    var limit: Int64 { (try? limitOrThrow()) ?? 0 }

    /// The key rules these options set.
    var keys: OfflineKeyPolicy { OfflineKeyPolicy(dropping: keyDrop) }

    private func limitOrThrow() throws -> Int64 {
        if let cache {
            guard let limit = ByteSize.parse(cache) else {
                throw ValidationError("--cache must be a size (500M, 2G, 100K, a number of bytes) or 'off'; got '\(cache.prefix(40))'")
            }
            return limit
        }
        // The environment's default; one that does not parse is the built-in default.
        return ProcessInfo.processInfo.environment["HARMONIA_PLAY_CACHE"].flatMap(ByteSize.parse) ?? OfflineCacheSettings.defaultLimit
    }
}

/// Sizes as the command line writes them.
enum ByteSize {
    /// `off` → 0; digits with an optional K, M, G or T (powers of 1024, an
    /// optional trailing B or iB) → bytes; nil for anything else or a size past Int64.
    static func parse(_ text: String) -> Int64? {
        var text = text.trimmingCharacters(in: .whitespaces).uppercased()
        if text == "OFF" { return 0 }
        if text.hasSuffix("IB") { text.removeLast(2) } else if text.hasSuffix("B") { text.removeLast() }
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40]
        var unit: Int64 = 1
        if let last = text.last, let scale = units[last] {
            unit = scale
            text.removeLast()
        }
        guard !text.isEmpty, text.allSatisfy(\.isASCII), text.allSatisfy(\.isNumber), let number = Int64(text) else { return nil }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: unit)
        return overflow ? nil : bytes
    }
}

/// A `ByteSourcePort` made on its first `open` (`make` runs once, under a
/// lock); `handles` asks `handling`, which answers as the made port will.
/// Threads: any.
final class DeferredByteSourcePort: ByteSourcePort {
    private let handling: any ByteSourcePort
    private let make: @Sendable () -> any ByteSourcePort
    private let made = Mutex<(any ByteSourcePort)?>(nil)

    init(handling: any ByteSourcePort, make: @escaping @Sendable () -> any ByteSourcePort) {
        self.handling = handling
        self.make = make
    }

    func handles(url: String) -> Bool { handling.handles(url: url) }

    func open(url: String, observer: (@Sendable (NetworkEvent) -> Void)?,
              interrupted: @escaping @Sendable () -> Bool) throws(CoreError) -> any ByteSource {
        let port = made.withLock { made in
            if made == nil { made = make() }
            return made!
        }
        return try port.open(url: url, observer: observer, interrupted: interrupted)
    }
}
