// PulseAudioOutputAdapter: the position between timing updates on PipeWire
// — specs/realtime.md §PipeWire (through pipewire-pulse)
//
// pipewire-pulse answers a timing request with the read index as it stands
// and the time it answered, no sink latency. The index moves a whole graph
// cycle at a time, so an answer is behind the continuous position by however
// far into the cycle it came: anything from nothing to a cycle. libpulse's
// smoother fits a line through those steps and wanders (measured: ±15 ms
// over seconds at 1 s updates, 2 % off in slope at times). The answers that
// came just after a cycle began are the true ones, and every other answer is
// behind them: so the position is the upper envelope of the recent answers,
// each carried forward at the stream's rate to now. A value type, kept by the
// adapter on the main loop thread; no allocation.

/// The upper envelope of recent (time, read index) answers, carried at the
/// stream's rate. Forgotten whenever the index stops while time goes on (a
/// pause, an underrun, a flush): those answers would carry it too far.
package struct ReadIndexLine: Sendable {
    /// Answers kept (2 s at PipeWire's steady update interval, 250 ms).
    package static let window = 8

    private var offsets: (Double, Double, Double, Double, Double, Double, Double, Double) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var count = 0
    private var next = 0
    private var lastIndex: Int64 = 0
    private var lastTime: Int64 = 0

    package init() {}

    package mutating func reset() { self = ReadIndexLine() }

    /// An answer: the read index in frames, current at `microseconds` (the
    /// answer's timestamp, on the clock `frames(at:)` is asked with), for a
    /// stream of `rate`. An index that moved back, or stood still for 100 ms,
    /// or time that went back, starts the line again from it.
    package mutating func observe(readIndexFrames index: Int64, at microseconds: Int64, rate: Double) {
        guard rate > 0, rate.isFinite, index >= 0, microseconds >= 0 else { reset(); return }
        if count > 0 {
            if index < lastIndex || microseconds < lastTime {
                (count, next) = (0, 0)
            } else if index == lastIndex {
                // Within a cycle of the last answer, nothing new; stopped for
                // 100 ms or more (longer than any cycle), start again.
                guard microseconds - lastTime >= 100_000 else { return }
                (count, next) = (0, 0)
            }
        }
        lastIndex = index
        lastTime = microseconds
        let offset = Double(index) - Double(microseconds) * rate / 1e6
        withUnsafeMutableBytes(of: &offsets) { raw in
            raw.storeBytes(of: offset, toByteOffset: next * MemoryLayout<Double>.stride, as: Double.self)
        }
        next = (next + 1) % Self.window
        count = min(count + 1, Self.window)
    }

    /// Answers the line is carried from (at most `window`).
    package var answers: Int { count }

    /// The read index the line reaches at `microseconds` (the clock of the
    /// answers), past or future, at most a minute from the newest answer:
    /// where the stream is read at a start's deadline. Nil before any
    /// answer or further away.
    package func projectedFrames(at microseconds: Int64, rate: Double) -> Int64? {
        let (away, overflow) = microseconds.subtractingReportingOverflow(lastTime)
        guard count > 0, rate > 0, rate.isFinite, !overflow, abs(away) <= 60_000_000 else { return nil }
        let carried = bestOffset + Double(microseconds) * rate / 1e6
        guard carried.isFinite, abs(carried) < 0x1p62 else { return nil }
        return Int64(carried.rounded(.down))
    }

    private var bestOffset: Double {
        var best = -Double.infinity
        withUnsafeBytes(of: offsets) { raw in
            for slot in 0..<count {
                best = max(best, raw.load(fromByteOffset: slot * MemoryLayout<Double>.stride, as: Double.self))
            }
        }
        return best
    }

    /// The read index now (`microseconds`, the clock of the answers), carried
    /// from the best recent answer; never before the newest answer's own
    /// index, nor more than a second past it (an answer that stopped coming).
    /// Nil before any answer.
    package func frames(at microseconds: Int64, rate: Double) -> Int64? {
        guard count > 0, rate > 0, rate.isFinite else { return nil }
        let best = bestOffset
        let elapsed = max(0, min(Double(microseconds - min(microseconds, lastTime)), 1e6))
        let carried = best + Double(lastTime) * rate / 1e6 + elapsed * rate / 1e6
        guard carried.isFinite, carried < 0x1p62 else { return lastIndex }
        return max(lastIndex, Int64(carried.rounded(.down)))
    }
}
