// A Squeezebox player (slimproto) as a frontend of the player: Lyrion Music
// Server and Music Assistant drive it — specs/slimproto.md
import Foundation
import HarmoniaControl
import HarmoniaCore

/// Who the player is and where it connects.
public struct SlimprotoConfiguration: Sendable {
    /// The server's host (name or IPv4 address); nil: discovery by UDP broadcast.
    public var host: String?
    public var port: UInt16
    /// The name sent with SETD and answered to the server's `setd`.
    public var name: String
    /// Whether the name was given (`--name`): then it is sent on every connection.
    public var nameGiven: Bool
    /// The MAC address the server knows the player by (its player id).
    public var mac: [UInt8]
    /// Firmware text in the capabilities (our version).
    public var firmware: String

    public init(host: String?, port: UInt16 = SlimprotoConfiguration.defaultPort, name: String, nameGiven: Bool,
                mac: [UInt8], firmware: String) {
        self.host = host
        self.port = port
        self.name = name
        self.nameGiven = nameGiven
        self.mac = mac
        self.firmware = firmware
    }

    /// slimproto's TCP port, and the discovery's UDP port.
    public static let defaultPort: UInt16 = 3483

    /// HELO's capabilities, as squeezelite writes them (the codec list is what FFmpeg decodes here).
    var capabilities: String {
        "Model=squeezelite,ModelName=Harmonia,Firmware=\(firmware),AccuratePlayPoints=1,HasDigitalOut=1,CanHTTPS=1,"
            + "MaxSampleRate=384000,flc,mp3,ogg,ops,aac,alc,pcm"
    }
}

/// Connects to the server when the player starts and keeps connecting;
/// each command runs as a job on the main loop (ordered with every other
/// frontend's commands and with the events), except `strm t`, which is
/// answered on the connection's thread so that a slow stream open never
/// delays the heartbeat; every event the server must hear of is a STAT.
///
/// Threads: the `PlayerFrontend` methods on the main loop.
public final class SlimprotoFrontend: PlayerFrontend, @unchecked Sendable {
    public let configuration: SlimprotoConfiguration
    /// The port the decoder opens the server's streams through (nil: their
    /// transfers are not seen; STAT's stream fields stay 0, RESP is plain, no DSCO).
    private let streams: SlimprotoStreams?
    private let log: @Sendable (String) -> Void
    /// Debug lines: when each step of a start happened (`SlimprotoPlayer.mark`).
    private let timeline: (@Sendable (String) -> Void)?
    private var connection: SlimprotoConnection?
    private var player: SlimprotoPlayer?

    /// - Parameters:
    ///   - streams: the port the service's decoder opens http(s) through.
    ///   - log: lines for standard error (connections, refused streams, malformed frames).
    public init(configuration: SlimprotoConfiguration, streams: SlimprotoStreams?, log: @escaping @Sendable (String) -> Void,
                timeline: (@Sendable (String) -> Void)? = nil) {
        self.configuration = configuration
        self.streams = streams
        self.log = log
        self.timeline = timeline
    }

    public var waitsForCommands: Bool { true }

    public func open(_ app: PlayerApplication) throws(CoreError) {
        let configuration = self.configuration, log = self.log
        let inbox = app.inbox
        let box = ConnectionBox()
        let player = SlimprotoPlayer(service: app.service, streamInput: streams, name: configuration.name,
                                     serverAddress: { box.connection?.serverAddressText },
                                     lastStamp: { inbox.lastStamp },
                                     post: { work in inbox.post(.job { work(); return .continue }) },
                                     send: { box.connection?.send($0) }, log: log, timeline: timeline)
        let connection = SlimprotoConnection(
            target: .init(host: configuration.host, port: configuration.port),
            hello: { reconnect in
                var frames = [SlimprotoFrames.helo(mac: configuration.mac, reconnect: reconnect, bytesReceived: 0,
                                                   capabilities: configuration.capabilities)]
                if configuration.nameGiven { frames.append(SlimprotoFrames.setdName(configuration.name)) }
                return frames
            },
            onCommand: { command in
                switch command {
                case .stream(let request) where request.command == UInt8(ascii: "t"):
                    box.connection?.send(player.status("STMt", serverTimestamp: request.replayGain))
                case .switchServer(let address):
                    log("slimproto: the server sends this player to \(address)")
                    box.connection?.switchServer(to: address)
                default:
                    inbox.post(.job {
                        player.handle(command)
                        return .continue
                    })
                }
            },
            onConnection: { _ in },
            log: log)
        box.connection = connection
        streams?.onOpen = { url, transfer in
            inbox.post(.job {
                player.streamOpened(url, head: transfer?.responseHead)
                return .continue
            })
        }
        streams?.onEnd = { url, reason in
            inbox.post(.job {
                player.streamEnded(url, reason: reason)
                return .continue
            })
        }
        self.connection = connection
        self.player = player
    }

    public func start(_ app: PlayerApplication) {
        connection?.start()
    }

    public func show(_ event: PlaybackEvent, stamp: EventStamp) {
        player?.show(event, stamp: stamp)
    }

    public func shutdown() {
        connection?.stop()
    }
}

/// The connection, set once after it is made (its closures need the player and the reverse).
private final class ConnectionBox: @unchecked Sendable {
    // Written once on the main loop in `open`, before the connection starts.
    var connection: SlimprotoConnection?
}

/// The player's MAC address: given, or made once from the machine and kept.
public enum SlimprotoMAC {
    /// Parses `XX:XX:XX:XX:XX:XX`.
    public static func parse(_ text: String) -> [UInt8]? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6 else { return nil }
        let bytes = parts.compactMap { $0.count == 2 ? UInt8($0, radix: 16) : nil }
        return bytes.count == 6 ? bytes : nil
    }

    public static func text(_ mac: [UInt8]) -> String {
        mac.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: ":")
    }

    /// The MAC in `file`, or one derived from /etc/machine-id (a locally
    /// administered unicast address) written there (mode 0600) when the file
    /// is missing or holds no MAC.
    /// - Throws: `ioError` when a new one cannot be written.
    public static func load(orCreateAt file: String) throws(CoreError) -> [UInt8] {
        if let data = FileManager.default.contents(atPath: file), data.count <= 64,
           let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
           let mac = parse(text) {
            return mac
        }
        let seed = FileManager.default.contents(atPath: "/etc/machine-id").map { Array($0.prefix(64)) } ?? []
        var mac = derive(from: seed.isEmpty ? Array(UUID().uuidString.utf8) : seed)
        mac[0] = (mac[0] & 0xFC) | 0x02  // locally administered, unicast
        guard FileManager.default.createFile(atPath: file, contents: Data((text(mac) + "\n").utf8),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw .ioError("\(file): cannot write the slimproto player's MAC address")
        }
        return mac
    }

    /// Six bytes of FNV-1a over `seed` (stable for one machine).
    static func derive(from seed: [UInt8]) -> [UInt8] {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in seed + Array("harmonia-slimproto".utf8) {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return (0..<6).map { UInt8(truncatingIfNeeded: hash >> (8 * UInt64($0))) }
    }
}
