// harmonia-play: the headless player. Exit codes: 0 all inputs succeeded,
// 1 some input failed, 2 usage error.
import ArgumentParser
import HarmoniaControl
import HarmoniaCore
import HarmoniaOfflineStore
#if canImport(Glibc)
import Glibc
#endif

struct HarmoniaPlay: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "harmonia-play",
        abstract: "A headless audio player on HarmoniaCore (FFmpeg decoding).",
        usage: """
            harmonia-play [play] [OPTIONS] INPUT...
            harmonia-play serve [--config FILE] [--music-dir DIR] [--mpd-listen [ADDR:]PORT] [--password-file FILE] [OPTIONS]
            harmonia-play info [--json] [--artwork PATH] INPUT...
            harmonia-play decode INPUT -o OUTPUT [--start-frame N]
            harmonia-play history [--json] [--limit N]
            harmonia-play listens submit [--listenbrainz-token-file FILE]
            harmonia-play slimproto [--server HOST[:PORT]] [--name NAME] [--output pulse|null|file:PATH]
            HARMONIA_CONTROL=PATH harmonia-play snapcast-control  (started by snapserver)
            """,
        discussion: """
            Without a subcommand, plays: harmonia-play [OPTIONS] INPUT... (see 'harmonia-play play --help').

            Examples:
              harmonia-play song.flac next.mp3
              harmonia-play ~/Music/Album/ list.m3u8 album.cue
              harmonia-play --start 1:30 --end 2:00 --volume 50 song.flac
              harmonia-play --output file:out.f32 a.flac b.flac
              harmonia-play --output snapcast://127.0.0.1 ~/Music/Album/
              harmonia-play serve --music-dir ~/Music      # then: mpc add / && mpc play
              harmonia-play info song.flac
              harmonia-play info --json *.mp3
              harmonia-play info --artwork cover.jpg song.flac
              harmonia-play decode song.opus -o song.f32
              harmonia-play vectors specs/vectors/*.json
              harmonia-play --listenbrainz-token-file ~/.config/lb-token song.flac   # reported to ListenBrainz
              harmonia-play history --limit 10
            """,
        version: HarmoniaVersion.string,
        subcommands: [PlayCommand.self, ServeCommand.self, InfoCommand.self, DecodeCommand.self, VectorsCommand.self, SnapcastControlCommand.self, OfflineCommand.self, HistoryCommand.self, ListensCommand.self, SlimprotoCommand.self],
        defaultSubcommand: PlayCommand.self
    )
}

@main
enum Entry {
    static func main() {
        #if FUZZING
        if true { FuzzDriver.run() }  // the fuzz build is a libFuzzer binary (Fuzzing/FuzzDriver.swift)
        #endif
        do {
            var command = try ServeConfigFile.parseAsRoot(rawArguments)
            try command.run()
            finishBackgroundWork()
        } catch let error as ServeConfigError {
            Console.err("harmonia-play: " + error.message)  // a config file's error is a usage error
            exit(2)
        } catch {
            finishBackgroundWork()
            let code = HarmoniaPlay.exitCode(for: error)
            if code == .validationFailure {
                // Usage errors exit with 2, as command-line tools conventionally do.
                Console.err(HarmoniaPlay.fullMessage(for: error))
                Console.err("Run 'harmonia-play --help' for usage.")
                exit(2)
            }
            HarmoniaPlay.exit(withError: error)
        }
    }

    /// Before the process exits: cache downloads still running (a stream that
    /// failed, or ended before its download) stop and record what they hold.
    static func finishBackgroundWork() {
        StreamCacheDownloads.stopAll(waitingUpTo: 2)
    }

    /// The arguments as given, in PathBytes' lossless form: a file name
    /// holding bytes that are not UTF-8 (0xFF) still names that file.
    /// (`CommandLine.arguments` repairs such bytes to U+FFFD.)
    static var rawArguments: [String] {
        (1..<Int(CommandLine.argc)).compactMap { i in
            CommandLine.unsafeArgv[i].map { PathBytes.string(cString: $0) }
        }
    }
}
