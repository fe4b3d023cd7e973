// RateContinuation (specs/services.md §Crossfade): an output's stream that
// keeps its rate after a crossfade into another. Passthrough until the
// continuation; then converted, whatever the sink takes per call (a full
// ring takes nothing, the rest waits); the heard count maps back to frames
// as written; a fade back into the stream's rate is bit-exact again.
@testable import HarmoniaCore
import Testing

@Suite("RateContinuation")
struct RateContinuationTests {
    /// A sink that takes at most `limit` frames a call (a ring with little
    /// room), and none every third call (a full one); keeps what it took.
    final class StingySink {
        var taken: [Float] = []
        var calls = 0
        let limit: Int
        init(limit: Int) { self.limit = limit }

        func take(_ samples: UnsafePointer<Float>, _ frames: Int) -> Int {
            calls += 1
            let count = calls % 3 == 0 ? 0 : min(frames, limit)
            taken += UnsafeBufferPointer(start: samples, count: count)
            return count
        }
    }

    /// Writes `frames` (mono) in chunks of `chunk`, again while nothing is accepted.
    func write(_ frames: [Float], chunk: Int, into continuation: RateContinuation, sink: StingySink) {
        var at = 0
        while at < frames.count {
            let count = min(chunk, frames.count - at)
            let accepted = frames.withUnsafeBufferPointer {
                continuation.write($0.baseAddress! + at, frameCount: count) { sink.take($0, $1) }
            }
            at += accepted
        }
    }

    @Test("passthrough, then 48 -> 44.1 kHz through a sink that takes little or nothing: a ramp stays a ramp (44,100 frames), every input frame heard at the end, then bit-exact again")
    func stingySink() throws {
        let continuation = RateContinuation()
        continuation.reset(sampleRate: 44_100, channels: 1)
        let sink = StingySink(limit: 700)
        let before = (0..<10_000).map { Float($0) }
        write(before, chunk: 4096, into: continuation, sink: sink)
        #expect(sink.taken == before, "passthrough is bit-exact")
        #expect(continuation.heard(streamPlayed: 10_000) == 10_000)

        // 48 kHz from here: a ramp, which the converter carries exactly.
        #expect(continuation.continueIn(sampleRate: 48_000, channels: 1) { sink.take($0, $1) })
        let ramp = (0..<48_000).map { Float(10_000 + $0) }
        write(ramp, chunk: 4096, into: continuation, sink: sink)
        // Nothing more follows: the look-ahead is written out, as far as the sink takes it.
        for _ in 0..<100 where sink.taken.count < 10_000 + 44_100 {
            continuation.finish { sink.take($0, $1) }
        }
        let converted = Array(sink.taken[10_000...])
        #expect(converted.count == 44_100, "48,000 frames at 44.1 kHz: \(converted.count)")
        let step = 48_000.0 / 44_100
        var worst = 0.0
        for (n, value) in converted.enumerated().dropLast(FadeResampler.halfTaps) {
            worst = max(worst, abs(Double(value) - (10_000 + Double(n) * step)))
        }
        #expect(worst < 0.05, "the ramp converted is \(worst) off")
        // Heard: the stream frames played, counted back in frames as written.
        #expect(continuation.heard(streamPlayed: 10_000 + 22_050) == 10_000 + 24_000)
        #expect(continuation.heard(streamPlayed: 10_000 + 44_100) == 10_000 + 48_000)

        // Back into the stream's rate: bit-exact again, counted one for one.
        #expect(continuation.continueIn(sampleRate: 44_100, channels: 1) { sink.take($0, $1) })
        let after = (0..<5000).map { Float(100_000 + $0) }
        write(after, chunk: 1000, into: continuation, sink: sink)
        #expect(Array(sink.taken.suffix(5000)) == after)
        #expect(continuation.heard(streamPlayed: 10_000 + 44_100 + 5000) == 10_000 + 48_000 + 5000)
        #expect(!continuation.continueIn(sampleRate: 48_000, channels: 2) { sink.take($0, $1) }, "another channel count")
    }
}
