// The renderer's view of the player: the UPnP state variables read from
// the application layer — specs/upnp.md §Mapping to the application layer
import Foundation
import HarmoniaControl
import HarmoniaCore

/// The three services' actions on the player (`UPnPRenderer+Actions`) and
/// the state variables they and the events report (`avTransportVariables`,
/// `renderingVariables`).
///
/// It keeps no queue of its own: the queue is the service's. Beside it, it
/// remembers only what UPnP names and our queue does not hold — the DIDL-Lite
/// a control point gave for an entry, and which entries were set as the
/// transport's URI and as its next URI (by entry id; an entry another
/// frontend removed is simply no longer found).
///
/// Threads: main loop only (requests run there as jobs).
public final class UPnPRenderer: @unchecked Sendable {
    public let actions: PlayerActions
    var service: DefaultPlaybackService { actions.service }
    /// `http-get:*:MIME:*` for every MIME type we decode, comma-separated.
    public let sinkProtocolInfo: String

    // Main loop only.
    var metadata: [UUID: String] = [:]
    var transportEntry: UUID?
    var nextEntry: UUID?

    public init(actions: PlayerActions) {
        self.actions = actions
        self.sinkProtocolInfo = Self.mimeTypes.map { "http-get:*:\($0):*" }.joined(separator: ",")
    }

    /// The MIME types of the formats the decoder is proven on (README §Formats).
    public static let mimeTypes = [
        "audio/mpeg", "audio/mp3", "audio/flac", "audio/x-flac", "audio/wav", "audio/x-wav", "audio/wave",
        "audio/L16", "audio/aiff", "audio/x-aiff", "audio/mp4", "audio/x-m4a", "audio/aac", "audio/ogg",
        "audio/opus", "audio/vorbis", "application/ogg", "audio/x-wavpack",
    ]

    /// Runs one control request (main loop).
    /// - Throws: `UPnPError` as the action's table in specs/upnp.md says.
    public func perform(_ request: SOAPRequest) throws(UPnPError) -> [(String, String)] {
        switch request.serviceType {
        case UPnPServiceSpec.avTransport.serviceType: return try avTransport(request.action, request.arguments)
        case UPnPServiceSpec.renderingControl.serviceType: return try renderingControl(request.action, request.arguments)
        case UPnPServiceSpec.connectionManager.serviceType: return try connectionManager(request.action, request.arguments)
        default: throw .invalidAction()
        }
    }

    // MARK: State variables

    /// The entry UPnP calls the current track: the one playing or paused,
    /// else the one `Play` would start.
    var currentEntry: Track? {
        if let track = service.currentTrack { return track }
        let queue = service.queue
        return queue.first { $0.id == transportEntry } ?? queue.first
    }

    /// UPnP's TransportState for our state.
    var transportState: String {
        switch service.state {
        case .playing: return "PLAYING"
        case .buffering: return "TRANSITIONING"
        case .paused: return "PAUSED_PLAYBACK"
        case .stopped, .error: return service.queue.isEmpty ? "NO_MEDIA_PRESENT" : "STOPPED"
        }
    }

    var transportActions: String {
        guard let current = currentEntry else { return "" }
        var names: [String]
        switch service.state {
        case .playing, .buffering: names = ["Pause", "Stop", "Seek"]
        case .paused: names = ["Play", "Stop", "Seek"]
        case .stopped, .error: names = ["Play", "Seek"]
        }
        let queue = service.queue
        if let index = queue.firstIndex(where: { $0.id == current.id }) {
            if index + 1 < queue.count { names.append("Next") }
            names.append("Previous")
        }
        return names.joined(separator: ",")
    }

    /// The DIDL-Lite for an entry: the control point's, else one made from
    /// the entry's title, artists and album.
    func didl(for track: Track?) -> String {
        guard let track else { return "" }
        return metadata[track.id] ?? DIDLLite.make(for: track)
    }

    func entry(_ id: UUID?) -> Track? {
        guard let id else { return nil }
        return service.queue.first { $0.id == id }
    }

    /// AVTransport's evented variables, in LastChange's order (main loop).
    public func avTransportVariables() -> [(String, String)] {
        let current = currentEntry
        let transport = entry(transportEntry) ?? current
        let next = entry(nextEntry)
        return [
            ("TransportState", transportState),
            ("TransportStatus", "OK"),
            ("CurrentPlayMode", playMode),
            ("NumberOfTracks", current == nil ? "0" : "1"),
            ("CurrentTrack", current == nil ? "0" : "1"),
            ("CurrentTrackDuration", UPnPTime.format(current?.duration ?? (current == nil ? 0 : service.duration()))),
            ("CurrentMediaDuration", UPnPTime.format(current?.duration ?? 0)),
            ("CurrentTrackURI", current?.url ?? ""),
            ("CurrentTrackMetaData", didl(for: current)),
            ("AVTransportURI", transport?.url ?? ""),
            ("AVTransportURIMetaData", didl(for: transport)),
            ("NextAVTransportURI", next?.url ?? ""),
            ("NextAVTransportURIMetaData", didl(for: next)),
            ("CurrentTransportActions", transportActions),
        ]
    }

    /// RenderingControl's evented variables (main loop).
    public func renderingVariables() -> [(String, String)] {
        [("Volume", String(actions.levelPercent)), ("Mute", actions.isMuted ? "1" : "0"), ("PresetNameList", "FactoryDefaults")]
    }

    var playMode: String {
        if service.shuffle { return "SHUFFLE" }
        switch service.repeatMode {
        case .off: return "NORMAL"
        case .one: return "REPEAT_ONE"
        case .all: return "REPEAT_ALL"
        }
    }

    /// Forgets what it remembered for entries no longer in the queue (main loop).
    public func prune() {
        let ids = Set(service.queue.map(\.id))
        metadata = metadata.filter { ids.contains($0.key) }
        if let id = transportEntry, !ids.contains(id) { transportEntry = nil }
        if let id = nextEntry, !ids.contains(id) { nextEntry = nil }
    }
}

/// UPnP's times: `H+:MM:SS[.F+]`.
public enum UPnPTime {
    /// "0:03:05": whole seconds, to the nearest (a heard position is then
    /// within 0.5 s of what is said); 0 for what is not a finite, non-negative number.
    public static func format(_ seconds: Double) -> String {
        let value = seconds.isFinite && seconds > 0 ? min(seconds, 3_600_000_000) : 0
        let whole = Int(value.rounded())
        let h = whole / 3600, m = whole / 60 % 60, s = whole % 60
        return "\(h):" + (m < 10 ? "0\(m)" : "\(m)") + ":" + (s < 10 ? "0\(s)" : "\(s)")
    }

    /// Seconds from `H+:MM:SS[.F+]`, unpadded parts accepted (`0:0:30`, as
    /// async-upnp-client sends) as well as `00:00:30.000`; nil for anything
    /// else (a negative, a minute or second of 60 or more, over 10,000 hours).
    public static func parse(_ text: String) -> Double? {
        let parts = text.trimmingSpaces().split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty && $0.count <= 12 }) else { return nil }
        guard parts[0].allSatisfy(\.isASCIIDigit), parts[1].allSatisfy(\.isASCIIDigit),
              parts[2].allSatisfy({ $0.isASCIIDigit || $0 == "." }),
              let hours = Int(parts[0]), let minutes = Int(parts[1]), let seconds = Double(parts[2]) else { return nil }
        guard hours <= 10_000, minutes < 60, seconds.isFinite, seconds >= 0, seconds < 60 else { return nil }
        return Double(hours * 3600 + minutes * 60) + seconds
    }
}

extension Character {
    var isASCIIDigit: Bool { isASCII && isNumber }
}
