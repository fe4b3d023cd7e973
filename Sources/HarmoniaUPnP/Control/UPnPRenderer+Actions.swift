// AVTransport:1, RenderingControl:1 and ConnectionManager:1 actions as
// calls on the application layer — specs/upnp.md §Mapping to the application layer
import Foundation
import HarmoniaControl
import HarmoniaCore

extension UPnPRenderer {
    // MARK: AVTransport

    func avTransport(_ action: String, _ arguments: [String: String]) throws(UPnPError) -> [(String, String)] {
        try Self.checkInstance(arguments)
        switch action {
        case "SetAVTransportURI":
            let (track, didl) = try Self.track(uri: arguments["CurrentURI"], metadata: arguments["CurrentURIMetaData"])
            let wasPlaying = service.state == .playing || service.state == .buffering
            service.clearQueue()
            service.enqueue([track])
            metadata = [track.id: didl ?? DIDLLite.make(for: track)]
            transportEntry = track.id
            nextEntry = nil
            if wasPlaying { try Self.run { () throws(CoreError) in try actions.play() } }
            return []
        case "SetNextAVTransportURI":
            let (track, didl) = try Self.track(uri: arguments["NextURI"], metadata: arguments["NextURIMetaData"])
            // The queue after the current entry becomes this one entry:
            // joined gapless when the current one ends, as our own queue is.
            let queue = service.queue
            let currentIndex = currentEntry.flatMap { current in queue.firstIndex { $0.id == current.id } } ?? -1
            var index = queue.count - 1
            while index > currentIndex {
                try Self.run { () throws(CoreError) in try service.remove(at: index) }
                index -= 1
            }
            service.enqueue([track])
            if let didl { metadata[track.id] = didl }
            nextEntry = track.id
            return []
        case "Play":
            if let speed = arguments["Speed"], speed != "1" { throw UPnPError(717, "Play speed not supported") }
            guard !service.queue.isEmpty else { throw .transitionNotAvailable }
            try Self.run { () throws(CoreError) in try actions.play() }
            return []
        case "Pause":
            switch service.state {
            case .playing, .buffering: try Self.run { () throws(CoreError) in try service.pause() }
            case .paused: break
            case .stopped, .error: throw .transitionNotAvailable
            }
            return []
        case "Stop":
            service.stop()
            return []
        case "Seek":
            try seek(unit: arguments["Unit"], target: arguments["Target"])
            return []
        case "Next", "Previous":
            guard service.currentTrack != nil else { throw .transitionNotAvailable }
            try Self.run { () throws(CoreError) in
                if action == "Next" { try actions.next() } else { try actions.previous() }
            }
            return []
        case "SetPlayMode":
            switch arguments["NewPlayMode"] ?? "" {
            case "NORMAL": service.setShuffle(false); service.setRepeatMode(.off)
            case "REPEAT_ONE": service.setShuffle(false); service.setRepeatMode(.one)
            case "REPEAT_ALL": service.setShuffle(false); service.setRepeatMode(.all)
            case "SHUFFLE": service.setShuffle(true)
            case "": throw .invalidArgs()
            default: throw .playModeNotSupported
            }
            return []
        case "GetTransportInfo":
            return [("CurrentTransportState", transportState), ("CurrentTransportStatus", "OK"), ("CurrentSpeed", "1")]
        case "GetPositionInfo":
            let current = currentEntry
            let playing = service.currentTrack != nil
            let position = UPnPTime.format(playing ? service.currentTime() : 0)
            let duration = current?.duration ?? (playing ? service.duration() : 0)
            return [
                ("Track", current == nil ? "0" : "1"), ("TrackDuration", UPnPTime.format(duration)),
                ("TrackMetaData", didl(for: current)), ("TrackURI", current?.url ?? ""),
                ("RelTime", position), ("AbsTime", position),
                ("RelCount", "2147483647"), ("AbsCount", "2147483647"),
            ]
        case "GetMediaInfo":
            let variables = Dictionary(avTransportVariables(), uniquingKeysWith: { a, _ in a })
            return [
                ("NrTracks", variables["NumberOfTracks"] ?? "0"), ("MediaDuration", variables["CurrentMediaDuration"] ?? ""),
                ("CurrentURI", variables["AVTransportURI"] ?? ""), ("CurrentURIMetaData", variables["AVTransportURIMetaData"] ?? ""),
                ("NextURI", variables["NextAVTransportURI"] ?? ""), ("NextURIMetaData", variables["NextAVTransportURIMetaData"] ?? ""),
                ("PlayMedium", currentEntry == nil ? "NONE" : "NETWORK"), ("RecordMedium", "NOT_IMPLEMENTED"),
                ("WriteStatus", "NOT_IMPLEMENTED"),
            ]
        case "GetCurrentTransportActions":
            return [("Actions", transportActions)]
        case "GetDeviceCapabilities":
            return [("PlayMedia", "NETWORK"), ("RecMedia", "NOT_IMPLEMENTED"), ("RecQualityModes", "NOT_IMPLEMENTED")]
        case "GetTransportSettings":
            return [("PlayMode", playMode), ("RecQualityMode", "NOT_IMPLEMENTED")]
        default:
            throw .invalidAction()
        }
    }

    /// Seek: REL_TIME and ABS_TIME (the same here: one track is the
    /// medium) to a time within the track, TRACK_NR to an entry of the queue.
    private func seek(unit: String?, target: String?) throws(UPnPError) {
        guard let unit, let target else { throw .invalidArgs() }
        switch unit {
        case "REL_TIME", "ABS_TIME":
            guard let seconds = UPnPTime.parse(target) else { throw .illegalSeekTarget }
            guard service.currentTrack != nil else { throw .transitionNotAvailable }
            let duration = service.duration()
            if duration > 0, seconds > duration { throw .illegalSeekTarget }
            try Self.run { () throws(CoreError) in try service.seek(to: seconds) }
        case "TRACK_NR":
            guard target.count <= 9, let number = Int(target), number >= 1, number <= service.queue.count else {
                throw .illegalSeekTarget
            }
            try Self.run { () throws(CoreError) in try service.jump(to: number - 1) }
        default:
            throw .seekModeNotSupported
        }
    }

    // MARK: RenderingControl

    func renderingControl(_ action: String, _ arguments: [String: String]) throws(UPnPError) -> [(String, String)] {
        try Self.checkInstance(arguments)
        switch action {
        case "ListPresets":
            return [("CurrentPresetNameList", "FactoryDefaults")]
        case "SelectPreset":
            guard arguments["PresetName"] == "FactoryDefaults" else { throw .invalidArgs("unknown preset") }
            actions.setVolume(percent: 100)
            return []
        case "GetVolume", "SetVolume", "GetMute", "SetMute":
            guard arguments["Channel"] == "Master" else { throw .invalidArgs("only Channel Master") }
        default:
            throw .invalidAction()
        }
        switch action {
        case "GetVolume":
            return [("CurrentVolume", String(actions.levelPercent))]
        case "SetVolume":
            guard let text = arguments["DesiredVolume"], text.count <= 3, let volume = Int(text), (0...100).contains(volume) else {
                throw .invalidArgs("DesiredVolume must be 0 to 100")
            }
            actions.setVolume(percent: Double(volume))
            return []
        case "GetMute":
            return [("CurrentMute", actions.isMuted ? "1" : "0")]
        default:
            let muted: Bool
            switch arguments["DesiredMute"]?.lowercased() ?? "" {
            case "1", "true", "yes": muted = true
            case "0", "false", "no": muted = false
            default: throw .invalidArgs("DesiredMute must be 0 or 1")
            }
            if muted != actions.isMuted { actions.toggleMute() }
            return []
        }
    }

    // MARK: ConnectionManager

    func connectionManager(_ action: String, _ arguments: [String: String]) throws(UPnPError) -> [(String, String)] {
        switch action {
        case "GetProtocolInfo":
            return [("Source", ""), ("Sink", sinkProtocolInfo)]
        case "GetCurrentConnectionIDs":
            return [("ConnectionIDs", "0")]
        case "GetCurrentConnectionInfo":
            guard arguments["ConnectionID"] == "0" else { throw .invalidConnectionReference }
            return [
                ("RcsID", "0"), ("AVTransportID", "0"), ("ProtocolInfo", ""), ("PeerConnectionManager", ""),
                ("PeerConnectionID", "-1"), ("Direction", "Input"), ("Status", "OK"),
            ]
        default:
            throw .invalidAction()
        }
    }

    // MARK: Helpers

    /// One instance, 0: anything else is 718; none at all is 402.
    private static func checkInstance(_ arguments: [String: String]) throws(UPnPError) {
        guard let instance = arguments["InstanceID"] else { throw .invalidArgs("no InstanceID") }
        guard instance == "0" else { throw .invalidInstanceID }
    }

    /// A queue entry for a control point's URI and DIDL-Lite.
    /// - Throws: 402 (no URI, an unreadable DIDL-Lite), 716 (not an http or
    ///   https URL: files and other schemes are never opened for the
    ///   network), 714 (a MIME type in the metadata that is not audio).
    static func track(uri: String?, metadata: String?) throws(UPnPError) -> (Track, String?) {
        guard let uri = uri?.trimmingSpaces(), !uri.isEmpty else { throw .invalidArgs("no URI") }
        guard uri.utf8.count <= 8192 else { throw .resourceNotFound("the URI is over 8 KiB") }
        guard DIDLLite.webURL(uri) != nil else { throw .resourceNotFound("only http and https URLs are played") }
        let item = try DIDLLite.read(metadata ?? "")
        if let mime = item.mimeType, mime != "*", !(mime.hasPrefix("audio/") || mime == "application/ogg" || mime == "application/octet-stream") {
            throw .illegalMIME("\(mime.prefix(80)) is not audio")
        }
        let didl = (metadata?.isEmpty ?? true) ? nil : metadata
        return (Track(url: uri, title: item.title, album: item.album, artists: item.artists, albumArtists: item.albumArtists,
                      genres: item.genres, artworkURL: item.albumArtURI), didl)
    }

    /// Runs an engine call; its error becomes 701 (the transition is not
    /// possible now) or 501 (anything else), in one line.
    static func run(_ body: () throws(CoreError) -> Void) throws(UPnPError) {
        do {
            try body()
        } catch {
            if case .invalidState = error { throw .transitionNotAvailable }
            throw .from(error)
        }
    }
}
