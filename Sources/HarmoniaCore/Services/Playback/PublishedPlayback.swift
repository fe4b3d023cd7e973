// PublishedPlayback — specs/services.md §Threads
// What callers read of the service without waiting, and the service's side
// of publishing it. Reading `state`, `currentTime()`, `duration()`, `volume`
// and the queue takes only this class's short lock, never held across I/O
// or by a waiting thread. Lock order: the service's `engine` before this lock.
import Foundation

/// The service's published snapshot: state, timeline, duration, volume,
/// queue and current track. Callers on any thread read it; the service
/// writes it with `engine` held, except the volume (`setVolume` takes no
/// engine).
final class PublishedPlayback: @unchecked Sendable {
    private let lock = ConditionLock()
    // Guarded by `lock`. Separate fields, not one struct: the engine's holder
    // reads `publishedTimeline` without the lock (`hasTimelineEngineHeld`)
    // while a caller may be setting the volume.
    private var publishedState = PlaybackState.stopped
    /// Written only with the service's engine held too.
    private var publishedTimeline: [TimelinePoint] = []
    private var publishedDuration: Double = 0
    private var publishedVolume: Float = 1
    private var publishedQueue = PlaybackQueue()
    private var publishedCurrentID: UUID?
    private var publishedCrossfade = CrossfadeSettings()

    // MARK: Reading (any thread)

    var state: PlaybackState { lock.withLock { publishedState } }
    var duration: Double { lock.withLock { publishedDuration } }
    var volume: Float { lock.withLock { publishedVolume } }
    var crossfade: CrossfadeSettings { lock.withLock { publishedCrossfade } }
    var tracks: [Track] { lock.withLock { publishedQueue.tracks } }
    var repeatMode: RepeatMode { lock.withLock { publishedQueue.repeatMode } }
    var shuffled: Bool { lock.withLock { publishedQueue.shuffled } }

    var currentIndex: Int? {
        lock.withLock { publishedCurrentID.flatMap { publishedQueue.index(of: $0) } }
    }

    var currentTrack: Track? {
        lock.withLock {
            publishedCurrentID.flatMap { publishedQueue.index(of: $0) }.map { publishedQueue.tracks[$0] }
        }
    }

    /// Seconds into the heard track, clamped to the duration; 0 when stopped,
    /// failed or nothing is on the timeline. Reads `output.framesPlayed`
    /// under the lock.
    func currentTime(playedBy output: any AudioOutputPort) -> Double {
        lock.withLock {
            switch publishedState {
            case .stopped, .error: return 0
            default: break
            }
            guard !publishedTimeline.isEmpty else { return 0 }
            let seconds = Self.position(in: publishedTimeline, heard: output.framesPlayed)
            return min(max(seconds, 0), publishedDuration)
        }
    }

    /// Seconds into the heard track for `heard` frames played (not clamped),
    /// and the duration, read together. The timeline must not be empty.
    func position(heard: Int64) -> (seconds: Double, duration: Double) {
        lock.withLock { (Self.position(in: publishedTimeline, heard: heard), publishedDuration) }
    }

    /// Whether a timeline is published, read without `lock`: only for a
    /// holder of the service's engine lock, which every writer of the
    /// timeline holds too (the decode thread's position tick reads it).
    var hasTimelineEngineHeld: Bool { !publishedTimeline.isEmpty }

    // MARK: Writing (engine held; `setVolume`: any thread)

    /// Returns whether the state changed. A stopped or error state publishes
    /// the empty timeline and a zero duration with it, in the same step.
    func setState(_ state: PlaybackState) -> Bool {
        lock.withLock { () -> Bool in
            defer { publishedState = state }
            switch state {
            case .stopped, .error:
                publishedTimeline = []
                publishedDuration = 0
            default:
                break
            }
            return publishedState != state
        }
    }

    /// An empty timeline also zeroes the duration.
    func setTimeline(_ points: [TimelinePoint]) {
        lock.withLock {
            publishedTimeline = points
            if points.isEmpty { publishedDuration = 0 }
        }
    }

    func setCrossfade(_ settings: CrossfadeSettings) {
        lock.withLock { publishedCrossfade = settings }
    }

    func setDuration(_ duration: Double) {
        lock.withLock { publishedDuration = duration }
    }

    func setQueue(_ queue: PlaybackQueue) {
        lock.withLock { publishedQueue = queue }
    }

    func setCurrentID(_ id: UUID?) {
        lock.withLock { publishedCurrentID = id }
    }

    /// Returns whether the volume changed.
    func setVolume(_ volume: Float) -> Bool {
        lock.withLock { () -> Bool in
            defer { publishedVolume = volume }
            return publishedVolume != volume
        }
    }

    /// Seconds into the heard track for `heard` frames played.
    private static func position(in timeline: [TimelinePoint], heard: Int64) -> Double {
        var index = 0
        while index + 1 < timeline.count && timeline[index + 1].writeStart <= heard { index += 1 }
        let point = timeline[index]
        let limit = index + 1 < timeline.count ? timeline[index + 1].writeStart : Int64.max
        let played = Double(max(0, min(heard, limit) - point.writeStart)) * point.step
        return (Double(point.sourceStart - point.trackStart) + played) / point.sampleRate
    }
}

// MARK: - Publishing (engine held)

extension DefaultPlaybackService {
    func setState(_ state: PlaybackState) {
        if state != .buffering { corkedForBuffering = false }  // every other state set the output's pause itself
        let changed = published.setState(state)
        if changed {
            logger.debug("state: \(state)")
            hub.emit(.stateChanged(state))
        }
    }

    func publishTimeline() {
        let points = timeline.points
        published.setTimeline(points)
    }

    func publishQueue() {
        let queue = playbackQueue
        published.setQueue(queue)
    }

    func publishedCurrent(_ id: UUID?) {
        published.setCurrentID(id)
    }
}
