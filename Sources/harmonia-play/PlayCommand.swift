// harmonia-play [play]: plays files, URLs, folders and playlists in order,
// gapless. The default subcommand, so `harmonia-play song.flac` plays.
// Inputs and --start/--end: specs/inputs.md §Inputs (Ranges)
import ArgumentParser
import HarmoniaControl
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaLinux
import HarmoniaOfflineStore
import HarmoniaPulseAudio
import HarmoniaSnapcast
import Logging
#if canImport(Glibc)
import Glibc
#endif

/// Where `play` sends the sound (`--output`).
enum OutputChoice: ExpressibleByArgument, Equatable {
    /// The PulseAudio (or PipeWire-Pulse) server: $PULSE_SERVER or the default.
    case pulse
    /// Nowhere, consumed in real time as a device would.
    case null
    /// A file written as fast as decoding goes: float WAV for a `.wav` path,
    /// raw float32 little-endian otherwise.
    case file(String)
    /// Every room of a Snapcast server: snapcast://HOST[:PORT][/?sampleformat=R:B:C&buffer=MS].
    case snapcast(SnapcastEndpoint)

    init?(argument: String) {
        switch argument {
        case "pulse": self = .pulse
        case "null": self = .null
        case _ where argument.hasPrefix("file:") && argument.count > 5:
            self = .file(String(argument.dropFirst(5)))
        case _ where argument.lowercased().hasPrefix("snapcast://"):
            guard let endpoint = try? SnapcastEndpoint(url: argument) else { return nil }
            self = .snapcast(endpoint)
        default: return nil
        }
    }

    static var defaultValueDescription: String { "pulse" }

    /// What `outputs` (MPD) calls this output.
    var name: String {
        switch self {
        case .pulse: "pulse"
        case .null: "null"
        case .file: "file"
        case .snapcast: "snapcast"
        }
    }

    /// The factory's output. `pacedFile`: a file written in real time as a
    /// device plays (serve), else as fast as decoding goes (play).
    func factoryOutput(device: String?, latencyMilliseconds: Double? = nil, pacedFile: Bool = false) -> CoreFactory.Output {
        switch self {
        case .pulse:
            var options = PulseAudioOutputAdapter.Options()
            if let latencyMilliseconds { options.latency = latencyMilliseconds / 1000 }
            options.device = device
            options.applicationName = "harmonia-play"
            return .pulseAudio(options)
        case .null:
            return .null
        case .file(let path):
            return pacedFile ? .pacedFile(path: path) : .file(path: path)
        case .snapcast(let endpoint):
            return .snapcast(endpoint)
        }
    }
}

extension ReplayGainMode: ExpressibleByArgument {}
extension RepeatMode: ExpressibleByArgument {}
extension ControlTransport: ExpressibleByArgument {}

struct PlayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play files, URLs, folders and playlists in order, gapless (the default command).",
        discussion: """
            Each input starts where the previous one ends, without a gap when both have
            the same rate and channels. An input may be a file, an http(s) URL, a folder
            (its audio files and those of its subfolders, in natural order: track2 before
            track10; hidden files skipped) or a playlist: .m3u/.m3u8 (#EXTINF titles),
            .pls, or a .cue sheet (each of its tracks a range of its file). Relative
            playlist entries are relative to the playlist's folder.
            --start/--end play a range of the FIRST input only, which must then be a
            file or URL; the queue goes on after it. Times are \(TimeArgument.forms).

            A bad input (a playlist, sheet or folder that cannot be read too) is reported
            on stderr as 'harmonia-play: PATH: CATEGORY: message' and skipped; data the decoder had to skip inside a file (replaced by silence)
            is a 'harmonia-play: warning: ...' line and does not fail the input. Unless --quiet, each track started is announced on stdout.

            On a terminal (stdin and stdout), unless --quiet, a status line shows the
            track, progress, volume, state and queue position; keys control playback:
            \(TerminalSession.keyHelp.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            q stops as if the queue had ended. Without a terminal (a pipe, CI) nothing
            interactive is printed.

            Exit status: 0 everything played, 1 some input (or the output) failed,
            2 usage error, 130/143 stopped by SIGINT/SIGTERM.

            On a desktop (DBUS_SESSION_BUS_ADDRESS set) the player is an MPRIS 2 media
            player on the session bus, org.mpris.MediaPlayer2.harmonia_play: media keys,
            panels and playerctl control it (specs/mpris.md); --no-mpris turns it off. No
            bus is not an error. A Stop from the desktop keeps the player for its Play or Quit.

            --json writes the service's events on stdout as JSON lines and nothing else.
            --control takes JSON-line commands on stdin (replies and events on stdout) or
            on a Unix socket (mode 0600, any number of clients); see specs/control-protocol.md.
            With --control, inputs are optional (queue/add fills the queue), and the player
            stays at the end of the queue until the 'quit' command (exit 0); if stdin ends
            (--control stdin), it exits when playback ends.

            Examples:
              harmonia-play song.flac next.mp3 http://host/stream.ogg
              harmonia-play ~/Music/Album/ party.m3u8 concert.cue
              harmonia-play --start 1:30 --end 2:00 song.flac
              harmonia-play --volume 50 --replaygain album --preamp 3 *.flac
              harmonia-play --output file:out.f32 a.flac b.flac   # raw float32, as fast as decoding goes
              harmonia-play --output null --quiet song.opus       # real time, no sound
              harmonia-play --output snapcast://127.0.0.1 *.flac  # every Snapcast room, in sync
              harmonia-play --device alsa_output.usb --latency 20 song.wav
              harmonia-play --json --output null song.flac          # events as JSON lines
              harmonia-play --control unix:/tmp/hp.sock --repeat all *.flac
              harmonia-play --cache 2G --cache-key-drop 'X-Amz-*' 'https://host/t.flac?X-Amz-Signature=...'
              harmonia-play --key album/1 'https://host/rest/stream?id=1&t=...&s=...'   # the store entry named outright
              echo '{"message_id":1,"command":"status"}' | harmonia-play --control stdin a.flac
            """
    )

    @Option(help: ArgumentHelp(
        "Where the sound goes: 'pulse' (PulseAudio), 'null' (consumed in real time, no sound), 'file:PATH' (the source's rate and channels as raw float32 little-endian, or float WAV for a .wav PATH, written as fast as decoding goes; one format per file: a track of another format ends playback with an error), or 'snapcast://HOST[:PORT][/?sampleformat=R:B:C&buffer=MS]' (every room of a Snapcast server, through its TCP source in server mode; port 4953, 48000:16:2 and snapserver's buffer 1000 ms by default).",
        valueName: "pulse|null|file:PATH|snapcast://HOST[:PORT]"))
    var output: OutputChoice = .pulse

    @Option(help: ArgumentHelp("Start the first input at TIME.", valueName: "TIME"), transform: TimeArgument.parse)
    var start: Double?

    @Option(help: ArgumentHelp("End the first input at TIME (after --start).", valueName: "TIME"), transform: TimeArgument.parse)
    var end: Double?

    @Option(help: ArgumentHelp("Volume in percent, 0–100.", valueName: "0-100"))
    var volume: Double = 100

    @Option(help: "ReplayGain from the tags: off, track or album.")
    var replaygain: ReplayGainMode = .off

    @Option(help: ArgumentHelp("dB added to the ReplayGain (needs --replaygain track|album).", valueName: "DB"))
    var preamp: Double?

    @Option(help: ArgumentHelp("Seconds the end of each track overlaps the start of the next, 0 (gapless, the default) to 30; consecutive tracks of one album stay gapless (specs/services.md §Crossfade).", valueName: "SECONDS"))
    var crossfade: Double = 0

    @Flag(name: .customLong("crossfade-albums"), help: "With --crossfade: fade between consecutive tracks of one album too.")
    var crossfadeAlbums = false

    @Option(help: ArgumentHelp("PulseAudio target latency in milliseconds, 10–2000 (default 500: the server sleeps between refills; pause, seek and volume do not wait for the buffer).", valueName: "MS"))
    var latency: Double?

    @Option(help: ArgumentHelp("PulseAudio sink name (default: the server's default sink).", valueName: "SINK"))
    var device: String?

    @Flag(help: "No progress output (errors still go to stderr).")
    var quiet = false

    @Option(name: .customLong("repeat"), help: ArgumentHelp("Repeat nothing, the current track, or the whole queue.", valueName: "off|one|all"))
    var repeatMode: RepeatMode = .off

    @Flag(help: "Play the queue in a random order.")
    var shuffle = false

    @Flag(help: "The service's events as JSON lines on stdout (nothing else goes to stdout).")
    var json = false

    @Option(help: ArgumentHelp("Take commands (JSON lines) on stdin or on a Unix socket at PATH (specs/control-protocol.md).", valueName: "stdin|unix:PATH"))
    var control: ControlTransport?

    @Flag(name: .customLong("no-mpris"), help: "Do not appear on the desktop's session bus as an MPRIS media player (specs/mpris.md).")
    var noMPRIS = false

    @Option(help: ArgumentHelp("Milliseconds between position events, 0 for none (default 1000 with --json or --control, else none).", valueName: "MS"))
    var tick: Double?

    @Option(name: .customLong("log-level"), help: ArgumentHelp("Lowest level logged on stderr: trace, debug, info, notice, warning, error or critical.", valueName: "LEVEL"))
    var logLevel: Logger.Level = .warning

    @OptionGroup(title: "Network")
    var network: NetworkOptions

    @OptionGroup(title: "Stream cache")
    var cache: CacheOptions

    @Option(help: ArgumentHelp("The store's key for the one URL given (default: the URL as given, less --cache-key-drop's parameters).", valueName: "KEY"))
    var key: String?

    @OptionGroup(title: "Web remote")
    var web: WebRemoteOptions

    @OptionGroup(title: "UPnP/DLNA renderer")
    var upnp: UPnPOptions

    @OptionGroup(title: "Listens")
    var listens: ListenOptions

    /// Commands may come: a control channel, WebSocket clients or UPnP control points.
    private var remoteControlled: Bool { control != nil || web.address(defaultListen: nil) != nil || upnp.upnp }

    @Argument(help: ArgumentHelp("Audio files, URLs, folders or playlists (.m3u, .m3u8, .pls, .cue), played in order (optional with --control).", valueName: "INPUT"))
    var inputs: [String] = []

    func validate() throws {
        try web.check(defaultListen: nil)
        try upnp.check()
        if inputs.isEmpty && !remoteControlled {
            throw ValidationError("Missing expected argument '<INPUT> ...' (inputs may be left out only with --control, --listen or --upnp)")
        }
        if let tick, !(tick.isFinite && tick >= 0 && tick <= 3_600_000) {
            throw ValidationError("--tick must be a number of milliseconds, 0 or more; got \(Self.number(tick))")
        }
        if let tick, tick > 0, tick < 10 { throw ValidationError("--tick must be 0 (off) or at least 10 ms") }
        if let key {
            guard inputs.count == 1, InputExpander.kind(of: inputs[0]) == .plain,
                  inputs[0].lowercased().hasPrefix("http://") || inputs[0].lowercased().hasPrefix("https://") else {
                throw ValidationError("--key names the store entry of one http(s) URL: give exactly one URL")
            }
            if key.isEmpty { throw ValidationError("--key must not be empty") }
        }
        if (start != nil || end != nil) && inputs.isEmpty {
            throw ValidationError("--start and --end apply to the first input; none was given")
        }
        if case .unix(let path)? = control, path.utf8.count > 107 {
            throw ValidationError("--control unix:PATH: the path is longer than 107 bytes")
        }
        guard volume.isFinite, (0...100).contains(volume) else {
            throw ValidationError("--volume must be a percentage from 0 to 100; got \(Self.number(volume))")
        }
        if let end, end <= (start ?? 0) {
            throw ValidationError("--end (\(Self.number(end)) s) must be after --start (\(Self.number(start ?? 0)) s)")
        }
        if let preamp {
            guard preamp.isFinite else { throw ValidationError("--preamp must be a number of dB; got \(preamp)") }
            guard replaygain != .off else {
                throw ValidationError("--preamp applies only with --replaygain track or album")
            }
        }
        do {
            _ = try CrossfadeSettings(seconds: crossfade)
        } catch {
            throw ValidationError("--crossfade must be a number of seconds from 0 to \(Self.number(CrossfadeSettings.maximumSeconds)); got \(Self.number(crossfade))")
        }
        if let latency, !(latency.isFinite && (10...2000).contains(latency)) {
            throw ValidationError("--latency must be from 10 to 2000 ms; got \(Self.number(latency))")
        }
        if output != .pulse && (latency != nil || device != nil) {
            throw ValidationError("--latency and --device apply only to --output pulse")
        }
        if device?.isEmpty == true { throw ValidationError("--device needs a sink name (see 'pactl list short sinks')") }
    }

    func run() throws {
        StderrLogHandler.bootstrap()
        let machine = json || remoteControlled
        // The status line and keys: on a terminal (stdin and stdout,
        // foreground), unless --quiet or stdin/stdout carry JSON.
        let interactive = !quiet && !json && control != .stdin && Terminal.isInteractive
        var configuration = PlaybackConfiguration()
        // Positions: for the status line 4 times a second, for machines every --tick.
        configuration.positionInterval = tick.map { $0 / 1000 } ?? (interactive ? 0.25 : machine ? 1 : 0)
        configuration.replayGain = ReplayGainSettings(mode: replaygain, preampDB: preamp ?? 0)
        configuration.crossfade = try CrossfadeSettings(seconds: crossfade, fadeAlbums: crossfadeAlbums)
        // The history counts heard audio from position events (specs/listens.md §The rule).
        let listening = try listens.tracker()
        if listening != nil, configuration.positionInterval == 0 { configuration.positionInterval = 1 }
        // The decoder's warnings (data it skipped) are news to the user:
        // `harmonia-play: warning: PATH: ...`. The service's own warnings
        // repeat its error events (reported anyway), so its log starts at info.
        let serviceLogger: any LoggerPort = logLevel <= .info
            ? SwiftLogLoggerAdapter(label: "harmonia", level: logLevel) : NoopLoggerAdapter()
        var factory = CoreFactory(output: factoryOutput, configuration: configuration, logger: serviceLogger)
        // A client of the control channel may give fresh links for refused ones (`renew`).
        let renewals = remoteControlled ? LinkRenewals() : nil
        let keys = cache.keys
        if let key { try keys.name(url: inputs[0], key: key) }
        // A controlled player answers offline/*: the store's downloads, when it has a store.
        let offline = remoteControlled ? network.offlineCopies(keys: keys) : nil
        let decoder = network.decoder(logger: SwiftLogLoggerAdapter(label: "harmonia.ffmpeg", level: logLevel), renewals: renewals,
                                      cache: cache, keys: keys, opened: offline?.store)
        factory.decoder = decoder
        let service = factory.makePlaybackService()
        if volume != 100 { service.setVolume(Float(volume / 100)) }
        if repeatMode != .off { service.setRepeatMode(repeatMode) }
        if shuffle { service.setShuffle(true) }

        // A range is of one file: not of a folder or a playlist.
        if start != nil || end != nil, let first = inputs.first, InputExpander.kind(of: first) != .plain {
            throw ValidationError("--start/--end apply to a file or URL as the first input; '\(first)' is a folder or playlist")
        }
        let expansion = InputExpander(cueSheets: CueSheetFileAdapter(), report: Console.report).expand(inputs)
        var tracks = expansion.tracks
        // Every input was reported; with a control channel the queue may start empty.
        guard !tracks.isEmpty || remoteControlled else { throw ExitCode(1) }
        if !tracks.isEmpty, start != nil || end != nil {
            tracks[0].start = start
            tracks[0].end = end
        }

        // One PlayerActions per service: its remembered mute level is shared
        // by every way of asking (keys and control commands).
        let actions = PlayerActions(service: service, renewals: renewals)
        let terminal = interactive
            ? TerminalSession.start(service: service, actions: actions)
            : nil
        let player = PlayerApplication(service: service, actions: actions)
        player.interruptIO = { decoder.interruptAll() }
        player.reportError = ConsoleLines.report
        var controlServer: ControlServer?
        if machine {
            // A client that went away is a failed write, not a fatal signal.
            signal(SIGPIPE, SIG_IGN)
            // offline/* download into the store playback reads (none without one).
            let downloads = offline.map { OfflineDownloads(port: $0) }
            if let downloads { player.add(downloads) }
            let dispatcher = ControlDispatcher(service: service, actions: actions,
                                               readInfo: FFmpegTagReaderAdapter().readWithStreamInfo(url:), offline: downloads)
            let session = ControlSession(dispatcher: dispatcher, transport: control, json: json)
            controlServer = session.server
            player.add(session)
            // A counted listen is a `listen` event for the control clients; `listens/recent` reads the history.
            if let store = listening?.store { dispatcher.recentListens = { (limit) throws(CoreError) in try store.history(limit: limit) } }
            listening?.tracker.onListen = { [session, inbox = player.inbox] record in
                session.announce(EventJSON.listen(record), stamp: inbox.lastStamp)
            }
            do throws(CoreError) {
                if let remote = try web.frontend(dispatcher: dispatcher, stateFolder: WebRemoteOptions.defaultStateFolder, defaultListen: nil) {
                    player.add(remote)
                }
                if let renderer = try upnp.frontend(actions: actions, stateFolder: WebRemoteOptions.defaultStateFolder) { player.add(renderer) }
            } catch {
                ConsoleLines.report(error)
                throw ExitCode(1)
            }
        }
        player.add(ConsoleLines(service: service, quiet: quiet || json || control == .stdin,
                                fixedCount: control == nil ? tracks.count : nil))
        if let terminal { player.add(terminal) }
        if let listening { player.add(listening.tracker) }
        // Media keys and panels: MPRIS when a session bus is set (none: silently without).
        if !noMPRIS, let desktop = DesktopSession(actions: actions, logLevel: logLevel) { player.add(desktop) }
        player.abandon = { [controlServer] signo in
            // Still running after a signal: held up where no flag reaches. End
            // as the main loop would: terminal, socket file, 128 + signal.
            Terminal.restore(newline: true)
            controlServer?.shutdown(drainSeconds: 0)
            _exit(128 + signo)
        }
        let outcome = player.run(tracks)
        // Reporting gets at most 2 s at exit; what is left waits in the history.
        if case .interrupted = outcome { listening?.outbox?.stop() } else { listening?.outbox?.finish(within: 2) }
        switch outcome {
        case .finished(let failures):
            if failures + expansion.failures > 0 { throw ExitCode(1) }
        case .interrupted(let signo):
            throw ExitCode(128 + signo)
        case .quit:
            break
        }
    }

    /// 150.0 → "150", 12.5 → "12.5".
    private static func number(_ value: Double) -> String {
        value.isFinite && value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
    }

    private var factoryOutput: CoreFactory.Output {
        output.factoryOutput(device: device, latencyMilliseconds: latency)
    }
}
