// harmonia-play serve: a music server on a library, driven by MPD's clients
// (and the JSON-lines control socket) — specs/application.md §serve
import ArgumentParser
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaLibrary
import HarmoniaLinux
import HarmoniaMPD
import HarmoniaOfflineStore
import HarmoniaPulseAudio
import HarmoniaSQLite
import HarmoniaSnapcast
import Logging
#if canImport(Glibc)
import Glibc
#endif

struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run as a music server: a library of a music folder, played through one queue that MPD clients (mpc, ncmpcpp, phone apps) drive.",
        discussion: """
            Runs in the foreground until SIGINT or SIGTERM (exit 130 or 143). The library
            is scanned when the database is new, on MPD's update/rescan and on SIGHUP.
            With a state file (by default under $XDG_STATE_HOME), the queue, current track,
            position, volume and modes come back after a restart. Other exit codes: 1 the
            server could not start (the music folder, the database, a port), 2 a usage or
            config file error. Lines go to stdout and stderr as they come (no status
            line), so a service manager's journal keeps them.

            Config file: --config FILE, else $XDG_CONFIG_HOME/harmonia-play/harmonia-play.conf
            when it exists (the system service: /etc/harmonia-play.conf). One setting a line,
            'option = value' with serve's long option names without '--' (music-dir =
            /srv/music); a flag is 'name', 'name = yes' or 'name = no'; lines starting with
            '#' are comments; a value may be quoted. Options on the command line override the
            file (password-file overrides password, and the reverse). An unknown option or a
            bad value is an error naming FILE:LINE (exit 2). A file that holds a secret
            (password, token, listenbrainz-token) and that every user can read gets a
            warning. Options are read at start: SIGHUP rescans the music folder and re-reads
            no option; restart to apply a changed file.

            Security: the MPD port listens on 127.0.0.1 unless told otherwise; any other
            address needs a password (--password-file, or 'password' in the config file:
            a command line is visible to every user). Paths that clients name stay inside
            --music-dir.

            Examples:
              harmonia-play serve --music-dir ~/Music
              harmonia-play serve --music-dir /srv/music --mpd-listen 0.0.0.0:6600 --password-file /etc/harmonia-play.password
              harmonia-play serve --config ~/harmonia-play.conf
              mpc -p 6600 update && mpc -p 6600 add / && mpc -p 6600 play
              harmonia-play serve --upnp --upnp-listen 0.0.0.0:49594   # cast to it (Home Assistant, Music Assistant)
            """
    )

    @Option(help: ArgumentHelp("Read options from FILE before the command line: 'option = value' lines (see the description). Default: $XDG_CONFIG_HOME/harmonia-play/harmonia-play.conf when it exists.", valueName: "FILE"))
    var config: String?

    @Option(name: .customLong("music-dir"), help: ArgumentHelp("The music folder (default: ~/Music).", valueName: "DIR"))
    var musicDir: String?

    @Option(help: ArgumentHelp("The library database (default: $XDG_DATA_HOME/harmonia-play/library.sqlite).", valueName: "FILE"))
    var database: String?

    @Option(help: ArgumentHelp("The state file, or 'off' (default: $XDG_STATE_HOME/harmonia-play/state.json).", valueName: "FILE|off"))
    var state: String?

    @Option(name: .customLong("playlist-dir"), help: ArgumentHelp("Where MPD's stored playlists are kept, as NAME.m3u; created on the first save (default: $XDG_DATA_HOME/harmonia-play/playlists).", valueName: "DIR"))
    var playlistDir: String?

    @Option(name: .customLong("mpd-listen"), help: ArgumentHelp("Where MPD clients connect, or 'off' (default 127.0.0.1:6600; an address beyond loopback needs a password).", valueName: "[ADDR:]PORT|off"))
    var mpdListen: String = "127.0.0.1:6600"

    @Option(help: ArgumentHelp("The password MPD clients must give (MPD's 'password' command) before anything else. Every user can see a command line (ps): give it in the config file or with --password-file.", valueName: "SECRET"))
    var password: String?

    @Option(name: .customLong("password-file"), help: ArgumentHelp("A file whose first line is the password (instead of --password).", valueName: "FILE"))
    var passwordFile: String?

    @Option(help: ArgumentHelp("Where the sound goes: 'pulse', 'null' (no sound), 'file:PATH' (float32, written in real time as heard) or 'snapcast://HOST[:PORT][/?sampleformat=R:B:C&buffer=MS]' (every room of a Snapcast server).", valueName: "pulse|null|file:PATH|snapcast://HOST[:PORT]"))
    var output: OutputChoice = .pulse

    @Option(help: ArgumentHelp("PulseAudio sink name.", valueName: "SINK"))
    var device: String?

    @Option(help: ArgumentHelp("Also take JSON-line commands on a Unix socket at PATH (specs/control-protocol.md).", valueName: "unix:PATH"))
    var control: ControlTransport?

    @OptionGroup(title: "Listens")
    var listens: ListenOptions

    @OptionGroup(title: "Web remote")
    var web: WebRemoteOptions

    @OptionGroup(title: "Network and offline copies")
    var network: NetworkOptions

    @OptionGroup(title: "Stream cache")
    var cache: CacheOptions

    @OptionGroup(title: "UPnP/DLNA renderer")
    var upnp: UPnPOptions

    /// Where the web remote listens unless --listen says otherwise.
    static let defaultListen = "127.0.0.1:6680"

    @Flag(help: "No line per track started (errors still go to stderr).")
    var quiet = false

    @Option(name: .customLong("log-level"), help: ArgumentHelp("Lowest level logged on stderr.", valueName: "LEVEL"))
    var logLevel: Logger.Level = .warning

    func validate() throws {
        if control == .stdin { throw ValidationError("--control: serve takes unix:PATH only (stdin is not a server's)") }
        if case .unix(let path)? = control, path.utf8.count > 107 {
            throw ValidationError("--control unix:PATH: the path is longer than 107 bytes")
        }
        if mpdListen != "off" {
            guard let endpoint = ListenAddress(mpdListen) else {
                throw ValidationError("--mpd-listen must be [ADDR:]PORT with a numeric address (127.0.0.1:6600, [::1]:6600, 6600) or 'off'; got '\(mpdListen.prefix(80))'")
            }
            if !endpoint.isLoopback && (password ?? "").isEmpty && passwordFile == nil {
                throw ValidationError("--mpd-listen \(mpdListen) reaches beyond this machine: anyone on the network could control the player. Give a password (--password-file FILE, or 'password' in the config file), or listen on 127.0.0.1")
            }
        }
        if password?.isEmpty == true { throw ValidationError("--password must not be empty") }
        if password != nil && passwordFile != nil { throw ValidationError("--password and --password-file: give one") }
        if passwordFile?.isEmpty == true { throw ValidationError("--password-file needs a file name") }
        try web.check(defaultListen: Self.defaultListen)
        try upnp.check()
    }

    func run() throws {
        StderrLogHandler.bootstrap()
        var password = self.password
        do throws(CoreError) {
            if let passwordFile { password = try SecretFile.firstLine(passwordFile) }
        } catch {
            Console.err("harmonia-play: --password-file: \(error.category.rawValue): \(Console.oneLine(error.message))")
            throw ExitCode(2)
        }
        if let passwordFile { SecretFile.warnIfReadableByOthers(passwordFile, holding: "the MPD password") }
        let paths = ServePaths(musicDir: musicDir, database: database, state: state, playlists: playlistDir)
        let musicDirectory: MusicDirectory
        let store: SQLiteLibraryStore
        do throws(CoreError) {
            musicDirectory = try MusicDirectory(root: paths.musicDir)
            try ServePaths.makeFolder(for: paths.database)
            if let state = paths.state { try ServePaths.makeFolder(for: state) }
            store = try SQLiteLibraryStore(file: paths.database)
        } catch {
            ConsoleLines.report(error)
            throw ExitCode(1)
        }
        defer { store.close() }
        let tagReader = FFmpegTagReaderAdapter()
        let scanner = LibraryScanner(musicDirectory: musicDirectory, store: store, readTags: tagReader.readHeaders(url:),
                                     warn: { Console.err("harmonia-play: library: " + Console.oneLine($0)) })
        let updater = LibraryUpdater(scanner: scanner)
        defer { updater.close() }
        let hangUp = Self.rescanOnHangUp(updater)
        defer { hangUp.cancel() }

        var configuration = PlaybackConfiguration()
        configuration.positionInterval = 1
        let serviceLogger: any LoggerPort = logLevel <= .info
            ? SwiftLogLoggerAdapter(label: "harmonia", level: logLevel) : NoopLoggerAdapter()
        var factory = CoreFactory(output: factoryOutput, configuration: configuration, logger: serviceLogger)
        // A URL whose offline copy is complete plays from the store (made at
        // the default folder when missing), which offline/* downloads into.
        let keys = cache.keys
        let offline = network.offlineCopies(createDefault: true, keys: keys)
        let decoder = network.decoder(logger: SwiftLogLoggerAdapter(label: "harmonia.ffmpeg", level: logLevel),
                                      cache: cache, keys: keys, opened: offline?.store)
        factory.decoder = decoder
        let service = factory.makePlaybackService()
        let actions = PlayerActions(service: service)
        let player = PlayerApplication(service: service, actions: actions)
        player.interruptIO = { decoder.interruptAll() }
        player.reportError = ConsoleLines.report
        // A client that went away is a failed write, not a fatal signal.
        signal(SIGPIPE, SIG_IGN)

        // One dispatcher for the Unix socket and WebSocket clients: `uri`s
        // relative to the music directory and confined to it, and the library.
        let library = ControlLibrary(store: store, musicDirectory: musicDirectory, requestUpdate: { updater.requestUpdate() })
        let downloads = offline.map { OfflineDownloads(port: $0) }  // offline/*, off the main loop
        if let downloads { player.add(downloads) }
        let dispatcher = ControlDispatcher(service: service, actions: actions, readInfo: tagReader.readWithStreamInfo(url:),
                                           library: library, offline: downloads)
        let listening = try listens.tracker()
        // `listens/recent` reads the history (socket and WebSocket clients, the web remote).
        if let store = listening?.store { dispatcher.recentListens = { (limit) throws(CoreError) in try store.history(limit: limit) } }
        var controlServer: ControlServer?
        if let control {
            let session = ControlSession(dispatcher: dispatcher, transport: control, json: false)
            controlServer = session.server
            player.add(session)
            // A counted listen is a `listen` event for the control clients.
            listening?.tracker.onListen = { [session, inbox = player.inbox] record in
                session.announce(EventJSON.listen(record), stamp: inbox.lastStamp)
            }
        }
        do throws(CoreError) {
            let stateFolder = paths.state.map { ($0 as NSString).deletingLastPathComponent } ?? WebRemoteOptions.defaultStateFolder
            if let remote = try web.frontend(dispatcher: dispatcher, stateFolder: stateFolder, defaultListen: Self.defaultListen) {
                player.add(remote)
            }
            if let renderer = try upnp.frontend(actions: actions, stateFolder: stateFolder) { player.add(renderer) }
        } catch {
            ConsoleLines.report(error)
            throw ExitCode(1)
        }
        player.add(ConsoleLines(service: service, quiet: quiet, fixedCount: nil))
        player.add(ServerLifetime())
        if let listening { player.add(listening.tracker) }
        defer { listening?.outbox?.stop() }
        if let statePath = paths.state {
            let file = PlayerStateFile(path: statePath)
            do throws(CoreError) {
                if let saved = try file.load() {
                    StateKeeper.restore(saved, on: service, track: library.restoredTrack(forURL:),
                                        useKey: { key, url in try? keys.name(url: url, key: key) })
                }
            } catch {
                ConsoleLines.report(error)  // a damaged state file: start empty, say so
            }
            player.add(StateKeeper(file: file, service: service, namedKey: keys.namedKey(for:)))
        }
        if mpdListen != "off", let endpoint = ListenAddress(mpdListen) {
            var server = MPDServerConfiguration(host: endpoint.host, port: endpoint.port)
            if let password { server.passwords = [password: .all] }  // then nothing without it
            server.tagTypes.remove(.comment)  // as MPD's default metadata_to_use
            let mpd = MPDPlayer.make(app: player, ledger: QueueLedger(), store: store, musicDirectory: musicDirectory,
                                     requestUpdate: { updater.requestUpdate() }, updateJob: { updater.currentJob },
                                     outputName: output.name)
            let pictures = FFmpegTagReaderAdapter()
            let storedPlaylists = StoredPlaylists(directory: paths.playlists)
            let database = MPDDatabaseCommands(library: mpd.library, storedPlaylists: storedPlaylists) { path throws(CoreError) in
                // readpicture: the song's embedded cover, as FFmpeg reads it.
                guard let data = try pictures.read(url: path).artworkData else { return nil }
                let bytes = Array(data)
                let type: String? = bytes.starts(with: [0xFF, 0xD8, 0xFF]) ? "image/jpeg"
                    : bytes.starts(with: [0x89, 0x50, 0x4E, 0x47]) ? "image/png" : nil
                return (bytes, type)
            }
            let handler = MPDPlayerHandler.player(mpd, database: database, storedPlaylists: storedPlaylists)
            player.add(MPDFrontend(server: MPDServer(configuration: server, handler: handler), player: mpd, updater: updater,
                                     announce: { Console.err("harmonia-play: " + $0) }))
        }
        player.abandon = { [controlServer] signo in
            controlServer?.shutdown(drainSeconds: 0)
            _exit(128 + signo)
        }
        if (try? store.stats().lastUpdate) == nil { updater.requestUpdate() }  // a new database
        switch player.run([]) {
        case .finished(let failures):
            if failures > 0 { throw ExitCode(1) }
        case .interrupted(let signo):
            throw ExitCode(128 + signo)
        case .quit:
            break
        }
    }

    /// SIGHUP (`systemctl reload`) rescans the music folder, as MPD's
    /// `update` does; options are read at start only. Cancel the source to stop.
    static func rescanOnHangUp(_ updater: LibraryUpdater) -> DispatchSourceSignal {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        source.setEventHandler {
            Console.err("harmonia-play: SIGHUP: rescanning the music folder (options are read at start only)")
            updater.requestUpdate()
        }
        source.resume()
        return source
    }

    private var factoryOutput: CoreFactory.Output {
        output.factoryOutput(device: device, pacedFile: true)  // positions are heard positions on every output
    }
}

/// Keeps a server running at the end of its queue: only a signal ends it.
final class ServerLifetime: PlayerFrontend {
    var waitsForCommands: Bool { true }
}

/// Where `serve` keeps its files: the flags, else the XDG base directories.
struct ServePaths {
    let musicDir: String
    let database: String
    /// nil: no state file (`--state off`).
    let state: String?
    /// MPD's stored playlists' folder (created on the first save).
    let playlists: String

    init(musicDir: String?, database: String?, state: String?, playlists: String? = nil,
         environment: [String: String] = ProcessInfo.processInfo.environment) {
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        func base(_ variable: String, _ fallback: String) -> String {
            // XDG: a relative value is invalid and ignored.
            if let value = environment[variable], value.hasPrefix("/") { return value }
            return home + "/" + fallback
        }
        self.musicDir = musicDir ?? home + "/Music"
        self.database = database ?? base("XDG_DATA_HOME", ".local/share") + "/harmonia-play/library.sqlite"
        self.state = state == "off" ? nil : (state ?? base("XDG_STATE_HOME", ".local/state") + "/harmonia-play/state.json")
        self.playlists = playlists ?? base("XDG_DATA_HOME", ".local/share") + "/harmonia-play/playlists"
    }

    /// Creates the folder holding `file` (mode 0700 for what it creates).
    static func makeFolder(for file: String) throws(CoreError) {
        let folder = (file as NSString).deletingLastPathComponent
        guard !folder.isEmpty else { return }
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                    attributes: [.posixPermissions: 0o700])
        } catch {
            throw .ioError("\(folder): cannot create the folder (\(error.localizedDescription))")
        }
    }
}

/// `[ADDR:]PORT` with a numeric address: "6600", "127.0.0.1:6600", "[::1]:6600", "0.0.0.0:6600".
struct ListenAddress: Equatable {
    let host: String
    let port: UInt16

    init?(_ text: String, defaultHost: String = "127.0.0.1") {
        var host = defaultHost
        var portText = Substring(text)
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
            host = String(text[text.index(after: text.startIndex)..<close])
            portText = text[text.index(close, offsetBy: 2)...]
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = text[text.index(after: colon)...]
        }
        // Port 0: any free port (said on stderr once listening).
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy(\.isASCII), let port = UInt16(portText) else { return nil }
        guard Self.isNumeric(host) else { return nil }
        self.host = host
        self.port = port
    }

    /// 127.0.0.0/8 or ::1.
    var isLoopback: Bool {
        var v4 = in_addr()
        if inet_pton(AF_INET, host, &v4) == 1 { return UInt32(bigEndian: v4.s_addr) >> 24 == 127 }
        return host == "::1"
    }

    private static func isNumeric(_ host: String) -> Bool {
        var v4 = in_addr(), v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
