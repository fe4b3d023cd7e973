// harmonia-play [play]: plays files and URLs in order, gapless. The default
// subcommand, so `harmonia-play song.flac` plays.
import ArgumentParser
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaLinux
import HarmoniaPulseAudio

/// Where `play` sends the sound (`--output`).
enum OutputChoice: ExpressibleByArgument, Equatable {
    /// The PulseAudio (or PipeWire-Pulse) server: $PULSE_SERVER or the default.
    case pulse
    /// Nowhere, consumed in real time as a device would.
    case null
    /// A file written as fast as decoding goes: float WAV for a `.wav` path,
    /// raw float32 little-endian otherwise.
    case file(String)

    init?(argument: String) {
        switch argument {
        case "pulse": self = .pulse
        case "null": self = .null
        case _ where argument.hasPrefix("file:") && argument.count > 5:
            self = .file(String(argument.dropFirst(5)))
        default: return nil
        }
    }

    static var defaultValueDescription: String { "pulse" }
}

extension ReplayGainMode: ExpressibleByArgument {}

struct PlayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "play",
        abstract: "Play files and URLs in order, gapless (the default command).",
        discussion: """
            Each input starts where the previous one ends, without a gap when both have
            the same rate and channels. --start/--end play a range of the FIRST input
            only; the queue goes on after it. Times are \(TimeArgument.forms).

            A bad input is reported on stderr as 'harmonia-play: PATH: CATEGORY: message'
            and skipped; data the decoder had to skip inside a file (replaced by silence)
            is a 'harmonia-play: warning: ...' line and does not fail the input. Unless --quiet, each track started is announced on stdout.

            On a terminal (stdin and stdout), unless --quiet, a status line shows the
            track, progress, volume, state and queue position; keys control playback:
            \(TerminalSession.keyHelp.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            q stops as if the queue had ended. Without a terminal (a pipe, CI) nothing
            interactive is printed.

            Exit status: 0 everything played, 1 some input (or the output) failed,
            2 usage error, 130/143 stopped by SIGINT/SIGTERM.

            Examples:
              harmonia-play song.flac next.mp3 http://host/stream.ogg
              harmonia-play --start 1:30 --end 2:00 song.flac
              harmonia-play --volume 50 --replaygain album --preamp 3 *.flac
              harmonia-play --output file:out.f32 a.flac b.flac   # raw float32, as fast as decoding goes
              harmonia-play --output null --quiet song.opus       # real time, no sound
              harmonia-play --device alsa_output.usb --latency 20 song.wav
            """
    )

    @Option(help: ArgumentHelp(
        "Where the sound goes: 'pulse' (PulseAudio), 'null' (consumed in real time, no sound), or 'file:PATH' (the source's rate and channels as raw float32 little-endian, or float WAV for a .wav PATH, written as fast as decoding goes; one format per file: a track of another format ends playback with an error).",
        valueName: "pulse|null|file:PATH"))
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

    @Option(help: ArgumentHelp("PulseAudio target latency in milliseconds, 10–2000 (default 50).", valueName: "MS"))
    var latency: Double?

    @Option(help: ArgumentHelp("PulseAudio sink name (default: the server's default sink).", valueName: "SINK"))
    var device: String?

    @Flag(help: "No progress output (errors still go to stderr).")
    var quiet = false

    @Argument(help: ArgumentHelp("Audio files or URLs, played in order.", valueName: "INPUT"))
    var inputs: [String]

    func validate() throws {
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
        if let latency, !(latency.isFinite && (10...2000).contains(latency)) {
            throw ValidationError("--latency must be from 10 to 2000 ms; got \(Self.number(latency))")
        }
        if output != .pulse && (latency != nil || device != nil) {
            throw ValidationError("--latency and --device apply only to --output pulse")
        }
        if device?.isEmpty == true { throw ValidationError("--device needs a sink name (see 'pactl list short sinks')") }
    }

    func run() throws {
        // On a terminal (stdin and stdout, foreground), not --quiet: the
        // status line, redrawn on position events 4 times a second, and keys.
        let interactive = !quiet && Terminal.isInteractive
        var configuration = PlaybackConfiguration()
        configuration.positionInterval = interactive ? 0.25 : 0  // only the status line shows positions
        configuration.replayGain = ReplayGainSettings(mode: replaygain, preampDB: preamp ?? 0)
        // The service's own log repeats what its events say; the decoder's
        // warnings (data it skipped) are news to the user.
        var factory = CoreFactory(output: factoryOutput, configuration: configuration, logger: NoopLoggerAdapter())
        factory.decoder = FFmpegDecoderAdapter(logger: WarningLogger())
        let service = factory.makePlaybackService()
        if volume != 100 { service.setVolume(Float(volume / 100)) }

        var tracks = inputs.map { Track(url: $0) }
        tracks[0].start = start
        tracks[0].end = end

        // One PlayerActions per service: its remembered mute level is shared
        // by every way of asking (keys here).
        let actions = PlayerActions(service: service)
        let terminal = interactive
            ? TerminalSession.start(service: service, actions: actions)
            : nil
        switch QueuePlayer(service: service, quiet: quiet, terminal: terminal).run(tracks) {
        case .finished(let failures):
            if failures > 0 { throw ExitCode(1) }
        case .interrupted(let signo):
            throw ExitCode(128 + signo)
        }
    }

    /// 150.0 → "150", 12.5 → "12.5".
    private static func number(_ value: Double) -> String {
        value.isFinite && value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : "\(value)"
    }

    private var factoryOutput: CoreFactory.Output {
        switch output {
        case .pulse:
            var options = PulseAudioOutputAdapter.Options()
            if let latency { options.latency = latency / 1000 }
            options.device = device
            options.applicationName = "harmonia-play"
            return .pulseAudio(options)
        case .null:
            return .null
        case .file(let path):
            return .file(path: path)
        }
    }
}
