// The network options of `play`, `decode` and `serve` — specs/network.md §Options, specs/offline.md §Playback
import ArgumentParser
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaHTTP
import HarmoniaOfflineStore

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

    @Option(name: .long, help: ArgumentHelp("The offline store: a URL with a complete copy there plays from disk, with no request (default: $XDG_DATA_HOME/harmonia-play/offline, when it exists).", valueName: "DIR"))
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

    /// A decoder that reads http(s) with this policy, through `offline`'s
    /// store first (a complete copy plays from disk). With `renewals`, a
    /// refused link waits (up to the network timeout) for a control client's
    /// `renew`; without, it fails at once.
    func decoder(logger: any LoggerPort = NoopLoggerAdapter(), renewals: LinkRenewals? = nil,
                 offline: OfflineStoreCopies?) -> FFmpegDecoderAdapter {
        var configuration = self.configuration
        if let renewals {
            let timeout = configuration.networkTimeout
            configuration.renewLink = { url, _ in renewals.wait(for: url, seconds: timeout) }
        }
        var source: any ByteSourcePort = HTTPSourcePort(configuration: configuration)
        if let offline { source = offline.byteSourcePort(network: source) }
        return FFmpegDecoderAdapter(logger: logger, networkTimeout: configuration.networkTimeout,
                                    networkSource: source,
                                    verifyTLS: configuration.verifyTLS, httpHeaders: configuration.headers)
    }

    /// The offline store to play from and download into: `--store DIR` (made
    /// when missing), else the default folder — made when `createDefault`
    /// (`serve`), else only when it holds an index already (`play`, `decode`).
    /// A store that cannot be opened is reported in one line and the network used.
    /// Downloads (the control protocol's `offline/add`) use this policy.
    func offlineCopies(createDefault: Bool = false) -> OfflineStoreCopies? {
        let directory = store ?? OfflineStore.defaultDirectory()
        if store == nil, !createDefault, !FileManager.default.fileExists(atPath: directory + "/index.sqlite") { return nil }
        do {
            var options = OfflineDownloadOptions()
            options.http = configuration
            options.giveUpAfter = configuration.networkTimeout
            options.http.stallTimeout = min(options.http.stallTimeout, configuration.networkTimeout)
            return OfflineStoreCopies(store: try OfflineStore(directory: directory), options: options)
        } catch {
            Console.report(directory, error)
            return nil
        }
    }
}
