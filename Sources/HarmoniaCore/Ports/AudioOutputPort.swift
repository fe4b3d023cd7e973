// AudioOutputPort — specs/realtime.md §AudioOutputPort

/// What an output reports outside its real-time thread.
public enum AudioOutputEvent: Sendable, Equatable {
    /// The device ran dry: `count` underruns so far.
    case underrun(count: Int)
    /// The output failed (server lost, device gone); it may be reconnecting.
    case error(CoreError)
    /// The output is back after an error and resumed from `frame` (framesPlayed).
    case reconnected(frame: Int64)
}

/// Plays interleaved Float32 PCM. The service's decode thread pushes frames
/// with `write` into the output's lock-free ring; the output's own real-time
/// thread pulls them out and hands them to the device.
///
/// Threads: control calls (`configure`, `start`, `stop`, `pause`, `resume`,
/// `flush`, `drain`, `setVolume`) from any thread, serialised by the adapter,
/// never from the real-time thread. `write` from one producer thread at a
/// time; it never blocks. `framesPlayed` and `underrunCount` from any thread
/// without blocking. Stricter than the reference, whose `render` is called
/// on the real-time thread and may block.
public protocol AudioOutputPort: AnyObject, Sendable {
    /// Sets the format of the frames that follow, drops anything queued and
    /// leaves the output stopped: write the new frames, then `start` again.
    /// Called before `start`, and again when rate or channels change (a new
    /// device stream; call `drain` first so the old one ends on its last frame).
    /// - Throws: `invalidArgument` (rate ≤ 0, channels < 1 or unsupported),
    ///   `ioError` (no server or device; the message says what to do).
    func configure(sampleRate: Double, channels: Int) throws(CoreError)

    /// Starts consuming. - Throws: `invalidState` (not configured), `ioError`.
    func start() throws(CoreError)

    /// Stops consuming and drops what is queued. Idempotent; never throws.
    func stop()

    /// Silences the output within one output buffer, keeping queued frames.
    func pause()

    /// Resumes after `pause` from the exact next frame.
    func resume()

    /// Drops every queued frame (ring and device buffer). Idempotent. Call it
    /// from the producer thread (it marks the ring's written frames stale).
    func flush()

    /// Blocks until every written frame has been played (or the output
    /// stops). Not for real-time threads.
    func drain()

    /// Queues up to `frameCount` frames from `frames` without waiting for the
    /// device and returns how many were accepted (0 when the ring is full).
    /// Producer thread.
    func write(_ frames: UnsafePointer<Float>, frameCount: Int) -> Int

    /// Output gain 0…1, clamped; audible within one output buffer, ramped
    /// across a buffer so there is no zipper noise.
    func setVolume(_ volume: Float)

    /// Frames of written audio the listener has heard since `configure`:
    /// flushed frames and silence inserted for underruns are not counted.
    var framesPlayed: Int64 { get }

    /// Underruns since `configure`.
    var underrunCount: Int { get }

    /// Underruns, errors and reconnections, reported off the real-time thread.
    var events: AsyncStream<AudioOutputEvent> { get }

    /// Calls `handler` for every event, synchronously on the thread that
    /// reports it (never the real-time thread), possibly while the output holds
    /// its own lock: the handler must only hand the event over — never call
    /// the output, block or wait. Unlike `events`, it needs no Swift
    /// concurrency executor, so a caller whose pool is busy still hears of an
    /// underrun.
    func observe(_ handler: @escaping @Sendable (AudioOutputEvent) -> Void)

    /// Continues the stream in another format with no break: the frames
    /// written from now on are in `sampleRate`/`channels` and play right
    /// after those already queued, which keep theirs; `framesPlayed` goes on
    /// counting (frames of each format as written). For outputs that convert
    /// to a fixed format of their own (Snapcast), so the next track's
    /// conversion starts at its first frame instead of after the last one is
    /// heard. Returns false when the output cannot — its device stream has
    /// the stream's format (PulseAudio) — and then the caller drains and
    /// calls `configure`; the default. Producer thread, like `write`.
    /// - Throws: `invalidArgument` (a format the output cannot convert).
    func continueInFormat(sampleRate: Double, channels: Int) throws(CoreError) -> Bool

    /// As `continueInFormat`, for a crossfade only (the playback service
    /// asks it where a fade crosses a change of sample rate, never for a
    /// join without a fade): an output whose stream keeps one rate may say
    /// yes by converting what is written from now on to its stream's rate
    /// on the producer thread (`RateContinuation`), so those frames are not
    /// bit-exact until the next `configure` or a continuation back to the
    /// stream's rate (specs/services.md §Crossfade). The default is
    /// `continueInFormat`'s answer. Producer thread, like `write`.
    /// - Throws: `invalidArgument` (a format the output cannot convert).
    func continueInFormatForFade(sampleRate: Double, channels: Int) throws(CoreError) -> Bool

    /// No frame follows the last written until a `write` after something
    /// else (a `configure`, a `flush`, the next track): an output that holds
    /// frames back (a converter's look-ahead, after `continueInFormatForFade`)
    /// writes them out now, as far as it has room, without blocking; the
    /// caller calls again while it waits for the last frame to be heard.
    /// Producer thread. The default does nothing.
    func releaseHeldFrames()

    /// Moves what the listener hears by exactly `frames` frames, without a
    /// flush, where the output takes frames from its ring (so after what
    /// its device has already queued): positive skips that many of the
    /// frames written (dropped, counted in `framesPlayed` as heard),
    /// negative plays that many frames of silence before the next one (not
    /// counted). A player's sync correction (slimproto's skip-ahead and
    /// pause-for). What is not yet applied is dropped by `flush`,
    /// `configure` and `stop`. Returns false when the output cannot (the
    /// default). Any thread; never blocks on the device.
    func shiftPlayback(byFrames frames: Int64) -> Bool

    /// As `start`, with the first frame written heard when the monotonic
    /// clock (`MonotonicClockAdapter`, CLOCK_MONOTONIC, ns) reaches
    /// `deadline`: until then the output plays silence that `framesPlayed`
    /// does not count. A group's start at a time (slimproto's unpause at
    /// T). Returns false, without starting, when the output cannot (the
    /// default; an output with audio of this stream already in its device,
    /// a resume): the caller then starts at the deadline itself. A deadline
    /// already past starts at once.
    /// - Throws: as `start`.
    func start(atMonotonicNanoseconds deadline: UInt64) throws(CoreError) -> Bool
}

extension AudioOutputPort {
    public func continueInFormat(sampleRate: Double, channels: Int) throws(CoreError) -> Bool { false }
    public func continueInFormatForFade(sampleRate: Double, channels: Int) throws(CoreError) -> Bool {
        try continueInFormat(sampleRate: sampleRate, channels: channels)
    }
    public func releaseHeldFrames() {}
    public func shiftPlayback(byFrames frames: Int64) -> Bool { false }
    public func start(atMonotonicNanoseconds deadline: UInt64) throws(CoreError) -> Bool { false }
}
