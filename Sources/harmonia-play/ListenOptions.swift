// The listens' options of `play` and `serve`, and their wiring
// — specs/listens.md §Options
//
// Argument parsing and wiring only: the rule, the tracker and the outbox
// are HarmoniaControl's; the store and ListenBrainz are HarmoniaListens'.
import ArgumentParser
import HarmoniaControl
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaListens

/// `--listens-db`, `--no-history`, `--listenbrainz-url`, `--listenbrainz-token-file`, `--listenbrainz-token`.
struct ListenOptions: ParsableArguments {
    @Option(name: .customLong("listens-db"), help: ArgumentHelp("The play history (default: $XDG_DATA_HOME/harmonia-play/listens.sqlite).", valueName: "FILE"))
    var listensDB: String?

    @Flag(name: .customLong("no-history"), help: "Record no listens (and report none).")
    var noHistory = false

    @Option(name: .customLong("listenbrainz-url"), help: ArgumentHelp("The ListenBrainz API root (default https://api.listenbrainz.org; a self-hosted server's otherwise).", valueName: "URL"))
    var listenBrainzURL: String?

    @Option(name: .customLong("listenbrainz-token-file"), help: ArgumentHelp("A file holding your ListenBrainz token (or set HARMONIA_LISTENBRAINZ_TOKEN). Without a token, listens are only recorded.", valueName: "FILE"))
    var tokenFile: String?

    @Option(name: .customLong("listenbrainz-token"), help: ArgumentHelp("Your ListenBrainz token itself, for serve's config file: every user can see a command line (ps).", valueName: "SECRET"))
    var token: String?

    func validate() throws {
        try Self.validate(listensDB: listensDB, listenBrainzURL: listenBrainzURL)
        if token != nil && tokenFile != nil { throw ValidationError("--listenbrainz-token and --listenbrainz-token-file: give one") }
        if let token, token.isEmpty || !token.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) {
            throw ValidationError("--listenbrainz-token must be one word of printable ASCII (copy it from your ListenBrainz settings page)")
        }
    }

    /// The checks `play`, `serve` and `listens submit` make of the options they share.
    static func validate(listensDB: String?, listenBrainzURL: String?) throws {
        if let listenBrainzURL, !isAPIRoot(listenBrainzURL) {
            throw ValidationError("--listenbrainz-url must be an http(s) URL (the API root, e.g. https://api.listenbrainz.org)")
        }
        if listensDB?.isEmpty == true { throw ValidationError("--listens-db needs a file name") }
    }

    /// An http(s) URL without spaces.
    static func isAPIRoot(_ url: String) -> Bool {
        let lower = url.lowercased()
        return (lower.hasPrefix("http://") || lower.hasPrefix("https://")) && !url.contains(where: \.isWhitespace)
    }

    /// The store, or nil with --no-history. Errors are reported; a store
    /// that cannot open makes the player go on without a history.
    func openStore() -> SQLiteListenStore? {
        noHistory ? nil : Self.openStore(file: listensDB)
    }

    /// The store at `file` (nil: the default), or nil, said on stderr, when it cannot open.
    static func openStore(file: String?) -> SQLiteListenStore? {
        let file = file ?? SQLiteListenStore.defaultFile()
        do {
            return try SQLiteListenStore(file: file)
        } catch {
            Console.err("harmonia-play: listens: \(error.category.rawValue): \(error.message); playing without a history")
            return nil
        }
    }

    /// The outbox of `store` when a token is given; nil without one.
    /// - Throws: `ExitCode(2)` for a token file that cannot be read (said on stderr).
    func outbox(store: SQLiteListenStore) throws -> ListenOutbox? {
        try Self.outbox(store: store, url: listenBrainzURL, tokenFile: tokenFile, token: token)
    }

    /// The outbox of `store` to the API at `url` (nil: the public one), with
    /// `token`, else the token of `tokenFile` or the environment; nil without a token.
    static func outbox(store: SQLiteListenStore, url listenBrainzURL: String?, tokenFile: String?,
                       token given: String? = nil) throws -> ListenOutbox? {
        var token = given
        do throws(CoreError) {
            if token == nil { token = try ListenBrainzToken.read(file: tokenFile) }
        } catch {
            Console.err("harmonia-play: listens: \(error.category.rawValue): \(error.message)")
            throw ExitCode(2)
        }
        guard token != nil else { return nil }
        // Read again for each request: a token file replaced after a 401 is used at once.
        let reporter = ListenBrainzReporter(root: listenBrainzURL ?? ListenBrainzReporter.defaultURL,
                                            token: { given ?? (try? ListenBrainzToken.read(file: tokenFile)) })
        return ListenOutbox(store: store, reporter: reporter, report: { Console.err($0) })
    }

    /// The player's listens: a tracker frontend (nil with --no-history or
    /// no store) and its outbox, delivering in the background.
    func tracker() throws -> (tracker: ListenTracker, outbox: ListenOutbox?, store: SQLiteListenStore)? {
        guard let store = openStore() else { return nil }
        let outbox = try outbox(store: store)
        outbox?.start()
        let reader = FFmpegTagReaderAdapter()
        let tracker = ListenTracker(store: store, outbox: outbox, readTags: { try? reader.read(url: $0) },
                                    report: { Console.err($0) })
        return (tracker, outbox, store)
    }
}
