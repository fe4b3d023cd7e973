// PlaybackService — specs/services.md §PlaybackService

/// How the queue goes on after its current track.
public enum RepeatMode: String, Sendable, Codable, CaseIterable {
    /// Play the queue once.
    case off
    /// Repeat the current track.
    case one
    /// Repeat the whole queue.
    case all
}

/// Which ReplayGain tag sets the level.
public enum ReplayGainMode: String, Sendable, Codable, CaseIterable {
    /// No ReplayGain.
    case off
    /// Each track's own gain.
    case track
    /// The album's gain (track gain when the file has no album gain).
    case album
}

/// ReplayGain as applied by the decode thread — specs/services.md §ReplayGain
public struct ReplayGainSettings: Sendable, Equatable {
    /// Which tag's gain applies; `.off` makes `linearGain(for:)` 1 (no
    /// preamp either).
    public var mode: ReplayGainMode
    /// Added to the tag's gain, in dB (also applied to files without tags
    /// when the mode is not `off`).
    public var preampDB: Double
    /// Lowers the gain so that the tagged peak does not exceed full scale.
    public var preventClipping: Bool

    /// Builds settings; the defaults are ReplayGain off, a 0 dB preamp and
    /// clipping prevention on.
    public init(mode: ReplayGainMode = .off, preampDB: Double = 0, preventClipping: Bool = true) {
        self.mode = mode
        self.preampDB = preampDB
        self.preventClipping = preventClipping
    }
}

/// Tuning of a playback service. The defaults suit a desktop player.
public struct PlaybackConfiguration: Sendable {
    /// Seconds of audio decoded ahead of what the listener hears.
    public var decodeAhead: Double
    /// Seconds between `position` events while playing; 0 turns them off.
    public var positionInterval: Double
    /// The ReplayGain the service starts with; `setReplayGain(_:)` changes
    /// the one in use later.
    public var replayGain: ReplayGainSettings
    /// The longest read of the decode loop, in frames: a read is as long as
    /// what is already queued, at least 4096 frames (so a prefill, a first
    /// read or one after an underrun is short).
    /// Larger than a FLAC or Vorbis frame, so most decoded frames are
    /// converted straight into the buffer that goes to the output.
    public var chunkFrames: Int
    /// The shortest sleep of the decode thread while playing, in seconds.
    /// It sleeps until the next thing due — a refill once a quarter of the
    /// queued audio has been heard, a track boundary, the range or queue
    /// end, a position event — at most 0.5 s, and a control call wakes it.
    public var pollInterval: Double
    /// Frames a control call (`load`, `seek`, `jump`) decodes into the output
    /// itself before returning, so sound follows without waiting for the
    /// decode thread's next check.
    public var prefillFrames: Int
    /// Seconds of audio gathered again after the output ran dry while a read
    /// waited (a slow or stalled network source) before sound resumes — at
    /// most three quarters of `decodeAhead`; 0 resumes with the first chunk.
    /// A source slower than real time then plays in long stretches with a
    /// few pauses, not in a stutter of short ones.
    public var rebuffer: Double
    /// The crossfade the service starts with (off); `setCrossfade(_:)`
    /// changes the one in use later.
    public var crossfade: CrossfadeSettings

    /// Builds a configuration from the values above. The defaults: 2 s
    /// decode-ahead, a position event every 0.5 s, ReplayGain off,
    /// 16384-frame chunks, a 0.01 s shortest sleep, 8192 prefill frames and a
    /// 1.5 s rebuffer.
    public init(decodeAhead: Double = 2.0, positionInterval: Double = 0.5,
                replayGain: ReplayGainSettings = ReplayGainSettings(),
                chunkFrames: Int = 16384, pollInterval: Double = 0.01, prefillFrames: Int = 8192,
                rebuffer: Double = 1.5, crossfade: CrossfadeSettings = CrossfadeSettings()) {
        self.decodeAhead = decodeAhead
        self.positionInterval = positionInterval
        self.replayGain = replayGain
        self.chunkFrames = chunkFrames
        self.pollInterval = pollInterval
        self.prefillFrames = prefillFrames
        self.rebuffer = rebuffer
        self.crossfade = crossfade
    }
}

/// Plays a queue of tracks through the ports. The reference's surface
/// (`load` … `clearPlaybackRange`) keeps the reference's state table; the
/// queue, events and ReplayGain go further (specs/services.md).
///
/// Threads: every member may be called from any thread. Reading `state`,
/// `currentTime()`, `duration()` and the queue never waits on I/O or on the
/// decode thread. Control calls are serialised; `load`, `seek` and `jump`
/// do I/O (open, seek, prefill) before they return.
public protocol PlaybackService: AnyObject, Sendable {
    // MARK: The reference surface
    /// Replaces the queue with `url` and opens it, paused at 0.
    func load(url: String) throws(CoreError)
    /// Starts or resumes playback from the exact next frame.
    /// - Throws: `invalidState` when stopped (nothing loaded) or in `error`.
    func play() throws(CoreError)
    /// Pauses; the heard position freezes and no frame is lost on `play`.
    /// - Throws: `invalidState` in `error`.
    func pause() throws(CoreError)
    /// Stops playback and forgets the position; the queue stays.
    func stop()
    /// Seconds within the current track; sample-accurate.
    func seek(to seconds: Double) throws(CoreError)
    /// What the listener hears, in seconds from the current track's start.
    func currentTime() -> Double
    /// The current track's length in seconds (0 when stopped or unknown).
    func duration() -> Double
    /// The state of the reference's state table (specs/services.md).
    var state: PlaybackState { get }
    /// Sets the volume, 0…1 (clamped), for audio decoded from now on.
    func setVolume(_ volume: Float)
    /// Plays only `start`…`end` seconds of the current track (`end` nil: to its end).
    /// - Throws: `invalidArgument` for a range outside the track, `invalidState` when stopped.
    func setPlaybackRange(start: Double, end: Double?) throws(CoreError)
    /// Plays the whole track again.
    func clearPlaybackRange()

    // MARK: Further than the reference
    /// 0…1, applied to audio decoded from now on; setting it is `setVolume(_:)`.
    var volume: Float { get set }
    /// A new stream of every event from now on; several may be open at once.
    func events() -> AsyncStream<PlaybackEvent>

    /// The queue's entries, in play order.
    var queue: [Track] { get }
    /// The queue index of the track the listener hears (or is paused in).
    var currentIndex: Int? { get }
    /// The entry the listener hears (or is paused in).
    var currentTrack: Track? { get }
    /// Appends `tracks` to the queue.
    func enqueue(_ tracks: [Track])
    /// Inserts `track` at `index` (0…count). - Throws: `invalidArgument` outside.
    func insert(_ track: Track, at index: Int) throws(CoreError)
    /// Removes entry `index`; removing the one that plays goes on with the
    /// entry after it (or stops). - Throws: `invalidArgument` outside the queue.
    func remove(at index: Int) throws(CoreError)
    /// Moves entry `from` to `to`. - Throws: `invalidArgument` outside the queue.
    func move(from: Int, to: Int) throws(CoreError)
    /// Empties the queue and stops.
    func clearQueue()
    /// Goes to the next entry (repeat and shuffle apply), keeping play or
    /// pause; at the end of the queue without repeat, stops with no entry
    /// current, as when the last entry plays out.
    /// - Throws: `invalidState` when no track is current; the open's error.
    func next() throws(CoreError)
    /// Goes to the previous entry (at the first, its start), keeping play or pause.
    /// - Throws: `invalidState` when no track is current; the open's error.
    func previous() throws(CoreError)
    /// Makes entry `index` current, keeping play or pause (stopped → paused).
    func jump(to index: Int) throws(CoreError)
    /// Setting it is `setRepeatMode(_:)`.
    var repeatMode: RepeatMode { get set }
    /// Sets the repeat mode (the reference's call; `repeatMode` is the property).
    func setRepeatMode(_ mode: RepeatMode)
    /// Setting it is `setShuffle(_:)`.
    var shuffle: Bool { get set }
    /// Turns shuffle on or off (the reference's call; `shuffle` is the property).
    func setShuffle(_ enabled: Bool)
    /// Sets ReplayGain for audio decoded from now on.
    func setReplayGain(_ settings: ReplayGainSettings)
}

extension PlaybackService {
    /// Whether sound is on or due: `playing`, or `buffering` (waiting for data).
    public var isPlaying: Bool {
        switch state {
        case .playing, .buffering: true
        default: false
        }
    }
}
