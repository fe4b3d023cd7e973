// AudioOutputPort — specs/ports.md §AudioOutputPort

/// Plays interleaved Float32 PCM. The service's decode thread pushes frames
/// with `write`; the output's own real-time thread pulls them out of a
/// lock-free ring and hands them to the device.
///
/// Threads: control calls (`configure`, `start`, `stop`, `pause`, `resume`,
/// `flush`, `drain`, `setVolume`) from any thread, serialised by the adapter.
/// `write` from one producer thread at a time; it never blocks.
/// `framesPlayed` from any thread, without blocking.
public protocol AudioOutputPort: AnyObject, Sendable {
    /// Sets the format of the frames that follow. Called before `start`, and
    /// again between tracks when rate or channels change.
    /// - Throws: `invalidArgument` (rate ≤ 0, channels < 1), `ioError` (device).
    func configure(sampleRate: Double, channels: Int) throws(CoreError)

    /// Starts consuming. - Throws: `invalidState` (not configured), `ioError`.
    func start() throws(CoreError)

    /// Stops consuming and drops what is queued. Idempotent; never throws.
    func stop()

    /// Silences output within one output buffer, keeping queued frames.
    func pause()

    /// Resumes after `pause`, from the exact next frame.
    func resume()

    /// Drops every queued frame (ring and device buffer). Idempotent.
    func flush()

    /// Blocks until every written frame has been played. Not for real-time threads.
    func drain()

    /// Queues up to `frameCount` frames from `frames` without blocking and
    /// returns how many were accepted (0 when the ring is full).
    func write(_ frames: UnsafePointer<Float>, frameCount: Int) -> Int

    /// Output gain 0…1, clamped; audible within one output buffer.
    func setVolume(_ volume: Float)

    /// Frames the listener has heard since the last `configure` or `flush`.
    var framesPlayed: Int64 { get }
}
