// harmonia-play slimproto: a Squeezebox player that Lyrion Music Server and
// Music Assistant drive — specs/slimproto.md
import ArgumentParser
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaHTTP
import HarmoniaLinux
import HarmoniaSlimproto
import Logging
#if canImport(Glibc)
import Glibc
#endif

struct SlimprotoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "slimproto",
        abstract: "Be a Squeezebox player (slimproto, as squeezelite): Lyrion Music Server and Music Assistant list it, play on it and group it.",
        discussion: """
            Connects to the server given by --server, or to the first that answers the
            discovery broadcast on UDP 3483, and connects again (within 5 s) whenever the
            connection ends. The server streams each track over HTTP; it plays through
            the same engine as 'play' (gapless, the position heard on the output). Runs
            until SIGINT or SIGTERM (exit 130 or 143). The MAC address (the server's
            player id) is made once from the machine and kept in
            $XDG_STATE_HOME/harmonia-play/slimproto-mac unless --mac gives one.

            Examples:
              harmonia-play slimproto --server 192.168.1.10 --name Kitchen
              harmonia-play slimproto                      # find the server by broadcast
              harmonia-play slimproto --server lms.local:3483 --output null --quiet
            """
    )

    @Option(help: ArgumentHelp("The server (Lyrion Music Server, Music Assistant): a name or IPv4 address, port 3483 unless given. Default: discovery by UDP broadcast.", valueName: "HOST[:PORT]"))
    var server: String?

    @Option(help: ArgumentHelp("The player's name on the server (default: Harmonia on HOSTNAME; the server may rename it).", valueName: "NAME"))
    var name: String?

    @Option(help: ArgumentHelp("The MAC address the server knows the player by (default: made from the machine and kept).", valueName: "XX:XX:XX:XX:XX:XX"))
    var mac: String?

    @Option(help: ArgumentHelp("Where the sound goes: 'pulse', 'null' (paced in real time, no sound) or 'file:PATH' (raw float32 little-endian at the source's rate, after the volume, written in real time).", valueName: "pulse|null|file:PATH"))
    var output: OutputChoice = .pulse

    @Option(help: ArgumentHelp("PulseAudio sink name.", valueName: "SINK"))
    var device: String?

    @Option(help: ArgumentHelp("Also take JSON-line commands on a Unix socket at PATH (specs/control-protocol.md).", valueName: "unix:PATH"))
    var control: ControlTransport?

    @Flag(help: "No line per track started (errors still go to stderr).")
    var quiet = false

    @Option(name: .customLong("log-level"), help: ArgumentHelp("Lowest level logged on stderr.", valueName: "LEVEL"))
    var logLevel: Logger.Level = .warning

    func validate() throws {
        if let server { _ = try Self.endpoint(server) }
        if let mac, SlimprotoMAC.parse(mac) == nil {
            throw ValidationError("--mac must be six hexadecimal pairs, XX:XX:XX:XX:XX:XX; got '\(mac.prefix(40))'")
        }
        if let name, name.isEmpty || name.utf8.count > 64 || name.contains(where: { $0.isNewline }) {
            throw ValidationError("--name must be 1 to 64 bytes on one line")
        }
        if case .snapcast = output { throw ValidationError("--output: slimproto plays to pulse, null or file:PATH") }
        if output != .pulse && device != nil { throw ValidationError("--device applies only to --output pulse") }
        if control == .stdin { throw ValidationError("--control: slimproto takes unix:PATH only") }
        if case .unix(let path)? = control, path.utf8.count > 107 {
            throw ValidationError("--control unix:PATH: the path is longer than 107 bytes")
        }
    }

    /// HOST or HOST:PORT.
    static func endpoint(_ text: String) throws -> (host: String, port: UInt16) {
        var host = Substring(text), port = SlimprotoConfiguration.defaultPort
        if let colon = text.lastIndex(of: ":") {
            let portText = text[text.index(after: colon)...]
            guard portText.count <= 5, let value = UInt16(portText), value > 0 else {
                throw ValidationError("--server must be HOST or HOST:PORT (port 1-65535); got '\(text.prefix(80))'")
            }
            host = text[..<colon]
            port = value
        }
        guard !host.isEmpty, host.utf8.count <= 253, host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "-") }) else {
            throw ValidationError("--server must be a host name or IPv4 address; got '\(text.prefix(80))'")
        }
        return (String(host), port)
    }

    func run() throws {
        StderrLogHandler.bootstrap()
        signal(SIGPIPE, SIG_IGN)
        var configuration = PlaybackConfiguration()
        configuration.positionInterval = 0.5  // STMd is decided on heard positions
        let serviceLogger: any LoggerPort = logLevel <= .info
            ? SwiftLogLoggerAdapter(label: "harmonia", level: logLevel) : NoopLoggerAdapter()
        var factory = CoreFactory(output: output.factoryOutput(device: device, pacedFile: true),
                                  configuration: configuration, logger: serviceLogger)
        // The server's streams through the engine's HTTP input, watched for STAT, RESP and DSCO.
        let streams = SlimprotoStreams(HTTPSourcePort())
        let decoder = FFmpegDecoderAdapter(logger: SwiftLogLoggerAdapter(label: "harmonia.ffmpeg", level: logLevel),
                                           networkSource: streams)
        factory.decoder = decoder
        let service = factory.makePlaybackService()
        let actions = PlayerActions(service: service)
        let player = PlayerApplication(service: service, actions: actions)
        player.interruptIO = { decoder.interruptAll() }
        player.reportError = ConsoleLines.report

        let macAddress: [UInt8]
        if let mac, let parsed = SlimprotoMAC.parse(mac) {
            macAddress = parsed
        } else {
            let file = WebRemoteOptions.defaultStateFolder + "/slimproto-mac"
            do throws(CoreError) {
                try ServePaths.makeFolder(for: file)
                macAddress = try SlimprotoMAC.load(orCreateAt: file)
            } catch {
                ConsoleLines.report(error)
                throw ExitCode(1)
            }
        }
        let endpoint = try server.map(Self.endpoint)
        let slim = SlimprotoConfiguration(host: endpoint?.host, port: endpoint?.port ?? SlimprotoConfiguration.defaultPort,
                                          name: name ?? "Harmonia on \(ProcessInfo.processInfo.hostName)", nameGiven: name != nil,
                                          mac: macAddress, firmware: HarmoniaVersion.string)
        if !quiet {
            Console.err("harmonia-play: slimproto player \(SlimprotoMAC.text(macAddress)) "
                        + (endpoint.map { "for \($0.host):\($0.port)" } ?? "looking for a server on UDP 3483"))
        }
        let line: @Sendable (String) -> Void = { Console.err("harmonia-play: " + $0) }
        player.add(SlimprotoFrontend(configuration: slim, streams: streams, log: line, timeline: logLevel <= .debug ? line : nil))
        var controlServer: ControlServer?
        if let control {
            let dispatcher = ControlDispatcher(service: service, actions: actions, readInfo: FFmpegTagReaderAdapter().readWithStreamInfo(url:))
            let session = ControlSession(dispatcher: dispatcher, transport: control, json: false)
            controlServer = session.server
            player.add(session)
        }
        player.add(ConsoleLines(service: service, quiet: quiet, fixedCount: nil))
        player.abandon = { [controlServer] signo in
            controlServer?.shutdown(drainSeconds: 0)
            _exit(128 + signo)
        }
        switch player.run([]) {
        case .finished(let failures):
            if failures > 0 { throw ExitCode(1) }
        case .interrupted(let signo):
            throw ExitCode(128 + signo)
        case .quit:
            break
        }
    }
}
