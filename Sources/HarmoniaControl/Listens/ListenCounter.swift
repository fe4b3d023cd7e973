// ListenCounter: when a track counts as a listen, on heard audio
// — specs/listens.md §The rule
//
// A pure value: it is told what the playback service's events say (the
// heard position, seeks, state changes, track boundaries) and the wall
// clock of each, and answers with what happened: a track started being
// heard ("playing now") or counted as a listen. It never reads a clock.
import HarmoniaCore

/// The thresholds of the rule (ListenBrainz's).
public enum ListenRule {
    /// A track shorter than this never counts.
    public static let shortestTrack = 30.0
    /// A track counts once this much of it was heard, or half of it when less.
    public static let enough = 240.0

    /// Seconds of heard audio at which a track of `duration` seconds counts;
    /// nil when it never counts (shorter than 30 s, or a length not known).
    public static func threshold(duration: Double?) -> Double? {
        guard let duration, duration.isFinite, duration >= shortestTrack else { return nil }
        return min(duration / 2, enough)
    }
}

/// What `ListenCounter` reports.
public enum ListenNotice: Sendable, Equatable {
    /// The track's first frame was heard at `at` (Unix seconds): a "playing now".
    case playingNow(Track, at: Int64)
    /// The track counts: first heard at `listenedAt`, `heard` seconds heard so far.
    case counted(Track, listenedAt: Int64, heard: Double, duration: Double)
}

/// Follows one player's heard audio and decides, track by track, what counts.
///
/// Heard audio is the sum of the forward steps of the heard position between
/// two position reports of the same track with no seek between them; a
/// position that goes back (without a seek event) starts a new step. At
/// most the track's length is counted. A track ending by itself was heard
/// to its end. Paused time moves no position, so it counts nothing.
///
/// Threads: a value; its owner calls it from one thread.
public struct ListenCounter: Sendable, Equatable {
    struct Heard: Sendable, Equatable {
        var track: Track
        var duration: Double?
        /// Unix seconds of the first heard frame; nil until it is heard.
        var listenedAt: Int64?
        /// The heard position the next step starts from.
        var base: Double = 0
        var heard: Double = 0
        var counted = false
    }

    private(set) var current: Heard?
    /// The service plays (its state is `playing`): a track current now is heard.
    private(set) var hearing = false

    public init() {}

    /// Seconds heard of the current track (0 without one).
    public var heardSeconds: Double { current?.heard ?? 0 }

    /// Feeds one playback event, seen at `now` (Unix seconds, wall clock).
    public mutating func observe(_ event: PlaybackEvent, now: Double) -> [ListenNotice] {
        switch event {
        case .trackStarted(_, let track): return trackStarted(track, now: now)
        case .trackEnded(_, _, let reason): return trackEnded(reason)
        case .stateChanged(let state): return stateChanged(state, now: now)
        case .position(let seconds, let duration): return position(seconds, duration: duration)
        case .seekCompleted(let seconds): seeked(to: seconds); return []
        default: return []
        }
    }

    /// A track became current, heard from its start (`track.duration` its length when known).
    public mutating func trackStarted(_ track: Track, now: Double) -> [ListenNotice] {
        current = Heard(track: track, duration: Self.known(track.duration))
        return hearing ? firstHeard(now: now) : []
    }

    /// The service's state changed; `playing` makes the current track heard.
    public mutating func stateChanged(_ state: PlaybackState, now: Double) -> [ListenNotice] {
        hearing = state == .playing || state == .buffering
        if state == .stopped { current = nil }
        return state == .playing ? firstHeard(now: now) : []
    }

    /// The heard position of the current track, `duration` its length (0: unknown).
    public mutating func position(_ seconds: Double, duration: Double) -> [ListenNotice] {
        guard var heard = current, seconds.isFinite else { return [] }
        if let length = Self.known(duration) { heard.duration = length }
        if seconds > heard.base { heard.heard += seconds - heard.base }
        heard.base = seconds
        if let duration = heard.duration { heard.heard = min(heard.heard, duration) }
        current = heard
        return check()
    }

    /// A seek: what it skipped is not heard; the next step starts at `seconds`.
    public mutating func seeked(to seconds: Double) {
        guard seconds.isFinite else { return }
        current?.base = seconds
    }

    /// The current track ended; one that finished was heard up to its end.
    public mutating func trackEnded(_ reason: TrackEndReason) -> [ListenNotice] {
        guard var heard = current else { return [] }
        if reason == .finished, heard.listenedAt != nil, let duration = heard.duration, duration > heard.base {
            heard.heard += duration - heard.base
            heard.base = duration
        }
        current = heard
        let notices = check()
        current = nil
        return notices
    }

    private mutating func firstHeard(now: Double) -> [ListenNotice] {
        guard var heard = current, heard.listenedAt == nil else { return [] }
        let at = Self.unixSeconds(now)
        heard.listenedAt = at
        current = heard
        return [.playingNow(heard.track, at: at)]
    }

    private mutating func check() -> [ListenNotice] {
        guard let heard = current, !heard.counted, let listenedAt = heard.listenedAt else { return [] }
        guard let threshold = ListenRule.threshold(duration: heard.duration), heard.heard >= threshold else { return [] }
        current?.counted = true
        return [.counted(heard.track, listenedAt: listenedAt, heard: heard.heard, duration: heard.duration ?? 0)]
    }

    private static func known(_ duration: Double?) -> Double? {
        guard let duration, duration.isFinite, duration > 0 else { return nil }
        return duration
    }

    /// Whole Unix seconds, clamped (a clock before 1970 or absurdly late stays a number).
    static func unixSeconds(_ now: Double) -> Int64 {
        guard now.isFinite else { return 0 }
        return Int64(min(max(now, 0), 1e15).rounded(.down))
    }
}
