// PlaybackEvent — specs/models.md §PlaybackEvent

/// Why a track stopped sounding.
public enum TrackEndReason: String, Sendable, Codable, Equatable, CaseIterable {
    /// The listener heard it to its end (or its range's end).
    case finished
    /// `next`, `previous`, `jump`, `load` or a queue edit moved away from it.
    case skipped
    /// `stop()`.
    case stopped
    /// It could not be decoded further; an `error` event said why.
    case failed
}

/// What a playback service reports, in the order it happened. Track and
/// position events follow what the listener hears, not what was decoded.
public enum PlaybackEvent: Sendable, Equatable {
    /// The service's state changed to the one carried; sent only on a change.
    case stateChanged(PlaybackState)
    /// The listener reached the first frame of `track`, at queue `index`
    /// (also sent when `load` or `jump` makes a track current).
    case trackStarted(index: Int, track: Track)
    /// The listener stopped hearing `track`, for `reason`. `index` is its
    /// queue index now, nil when the entry has left the queue.
    case trackEnded(index: Int?, track: Track, reason: TrackEndReason)
    /// The heard position, every `PlaybackConfiguration.positionInterval` while playing.
    case position(seconds: Double, duration: Double)
    /// A seek finished: the next frame the listener hears is at `seconds`.
    case seekCompleted(seconds: Double)
    /// The volume changed to the one carried (0…1, after clamping); sent only
    /// when the value differs from the previous one.
    case volumeChanged(Float)
    /// The queue's entries, order, repeat or shuffle changed.
    case queueChanged
    /// The output ran dry while more audio was due (`count` so far).
    case underrun(count: Int)
    /// Something failed; `url` names the track concerned (nil for output errors).
    /// The queue goes on where it can.
    case error(CoreError, url: String?)
    /// What a network source of the track at `url` reports: a reconnect
    /// attempt and its resumption, the station's description
    /// (specs/network.md §Events lists them).
    case network(NetworkEvent, url: String)
    /// Playback reached the end of the queue: after the last `trackEnded`,
    /// before the state's change to `stopped` (`error` when the last track failed).
    case queueEnded

    /// The event's name as used in JSON event streams.
    public var name: String {
        switch self {
        case .stateChanged: "state_changed"
        case .trackStarted: "track_started"
        case .trackEnded: "track_ended"
        case .position: "position"
        case .seekCompleted: "seeked"
        case .volumeChanged: "volume_changed"
        case .queueChanged: "queue_changed"
        case .underrun: "underrun"
        case .error: "error"
        case .queueEnded: "queue_ended"
        case .network(let event, _):
            switch event {
            case .connecting: "connecting"
            case .reconnecting: "reconnecting"
            case .resumed: "resumed"
            case .linkExpired: "link_expired"
            case .station: "station"
            case .streamTitle: "stream_title"
            }
        }
    }
}
