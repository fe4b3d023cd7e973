// PulseAudioOutputAdapter: the play position from PulseAudio's own timing
// reports — specs/realtime.md §Position
//
// A report gives the stream's read index, the sink's latency (what the sink
// has taken and not yet played, or, on a sink that renders ahead such as
// the null sink, how long until it takes more), the write index and whether
// the stream is playing, at one moment. The frame at the sink is the read
// index less the latency, and moves on in real time while the stream plays.
// libpulse's interpolation (`pa_stream_get_time`) runs from the uncork as if
// the stream played at once; a sink that renders ahead takes the new stream
// only at its next block (measured on the tests' null sink: 3 to 522 ms after
// the uncork), so that position ran up to ~420 ms ahead of what was heard,
// then stood still until the reports caught it up. Carried from the report,
// the position starts moving when the sink takes the stream. A value type,
// kept by the adapter under the main loop lock; no allocation.

/// The stream's play position carried from the last timing report.
package struct TimingReportPosition: Sendable {
    /// The longest a report is carried: past it the position waits for the
    /// next one (reports come at least every second while playing).
    package static let longestCarryMicroseconds: Int64 = 2_000_000

    /// Read index less the sink's latency, in frames (negative while the
    /// sink has not yet reached the stream's first frame).
    private var base: Int64 = 0
    /// When the report was current, µs on the caller's clock.
    private var time: Int64 = 0
    /// The report says the stream moves on from `time`.
    private var moving = false
    private var valid = false

    package init() {}

    /// Forgets the report (a cork, an uncork, a flush, a new stream): the
    /// position holds until the next one.
    package mutating func reset() { self = TimingReportPosition() }

    /// A timing report, current at `microseconds`. The stream moves on from
    /// it when the server says it plays, or, not yet playing, when the
    /// server holds at least the pre-buffer (so it is not waiting for audio)
    /// and the sink has a latency to wait out: its next block takes the
    /// stream then. Every input is an outside number, checked; a bad one
    /// forgets the report.
    package mutating func observe(readIndexFrames readIndex: Int64, writeIndexFrames writeIndex: Int64,
                                  sinkMicroseconds: UInt64, playing: Bool, prebufferFrames: Int64,
                                  at microseconds: Int64, rate: Double) {
        guard rate > 0, rate.isFinite, readIndex >= 0, readIndex < 1 << 52, writeIndex >= 0, writeIndex < 1 << 52,
              sinkMicroseconds <= 10_000_000, microseconds >= 0 else {
            reset()
            return
        }
        let sinkFrames = Int64((Double(sinkMicroseconds) * rate / 1e6).rounded())
        base = readIndex - sinkFrames
        time = microseconds
        moving = playing || (sinkFrames > 0 && prebufferFrames > 0 && writeIndex - readIndex >= prebufferFrames)
        valid = true
    }

    /// The stream frame the sink plays at `microseconds` (past or future,
    /// at most a minute from the report; negative before the stream's
    /// first frame), when the report says the stream moves on; else nil.
    /// A start at a time (`PulseAudioOutputAdapter.start(atMonotonicNanoseconds:)`).
    package func streamFrame(playingAt microseconds: Int64, rate: Double) -> Int64? {
        guard valid, moving, rate > 0, rate.isFinite else { return nil }
        let (since, overflow) = microseconds.subtractingReportingOverflow(time)
        guard !overflow, abs(since) <= 60_000_000 else { return nil }
        return base + Int64((Double(since) * rate / 1e6).rounded())
    }

    /// The play position at `microseconds`, in frames (never negative): the
    /// report's, carried on at `rate` when it said the stream moves and the
    /// stream still `runs` (uncorked); nil before a report.
    package func frames(at microseconds: Int64, rate: Double, runs: Bool) -> Int64? {
        guard valid else { return nil }
        guard moving, runs, rate > 0, rate.isFinite else { return max(0, base) }
        let (since, overflow) = microseconds.subtractingReportingOverflow(time)
        let elapsed = overflow ? 0 : min(max(0, since), Self.longestCarryMicroseconds)
        return max(0, base + Int64((Double(elapsed) * rate / 1e6).rounded(.down)))
    }
}
