// RateContinuation — specs/services.md §Crossfade
// For an output whose stream keeps one rate (PulseAudio, the file and null
// outputs): after a crossfade into another rate, what is written in that
// rate is converted to the stream's on the producer thread, and the stream
// frames played are counted back in frames as written.

/// Sits between an output's `write` and its ring (or file). Until the first
/// `continueIn(rate:)` after `configure`, and whenever the rate written is
/// the stream's, frames go through untouched (bit-exact). After a
/// continuation into another rate, they are converted to the stream's rate
/// (`FadeResampler`) before they reach the sink, and `heard(streamPlayed:)`
/// maps the stream's frames played back to frames as written, each span at
/// its own rate (what `AudioOutputPort.framesPlayed` counts).
///
/// The converter looks 16 input frames ahead: those wait for the next write,
/// a `finish` (their frames are then converted with silence after them) or
/// a `flush` (dropped). Once the stream has played every frame produced,
/// the frames held back count as heard, so a caller waiting for the last
/// written frame to be heard is not kept waiting.
///
/// Threads: `write`, `continueIn`, `finish`, `flush`, `reset` from the
/// producer thread (or a control call serialised with it); `heard` from any
/// thread. Its own lock, held while the sink runs: the sink must not call
/// back. Not for a real-time thread (converting allocates).
package final class RateContinuation: @unchecked Sendable {
    /// The sink takes up to `frames` stream frames and returns how many it took.
    package typealias Sink = (_ samples: UnsafePointer<Float>, _ frames: Int) -> Int

    /// Stream frames from `stream` on carry frames as written from `written`
    /// on, `step` written frames per stream frame.
    private struct Span {
        var stream: Int64
        var written: Int64
        var step: Double
    }

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var streamRate: Double = 0
    private var channels = 0
    private var inputRate: Double = 0
    private var resampler: FadeResampler?
    /// Converted frames the sink has not taken yet.
    private var pending: [Float] = []
    private var pendingOffset = 0
    /// Stream frames the sink took, and frames accepted as written, on the
    /// output's count (since `configure`, flushed frames left out).
    private var streamWritten: Int64 = 0
    private var accepted: Int64 = 0
    /// Empty: no continuation since `configure` (frames as written are stream frames).
    private var spans: [Span] = []
    private var lastHeard: Int64 = 0
    /// Input pushed into `resampler` since it was made.
    private var holdsInput = false

    package init() {}

    /// A new stream in `sampleRate`/`channels` (the output's `configure`):
    /// frames go through untouched, counted from `streamFrames` (the
    /// output's count of frames played, which this one continues).
    package func reset(sampleRate: Double, channels: Int, streamFrames: Int64 = 0) {
        lock.withLock {
            streamRate = sampleRate
            self.channels = channels
            inputRate = sampleRate
            resampler = nil
            pending = []
            pendingOffset = 0
            streamWritten = streamFrames
            accepted = streamFrames
            spans = []
            lastHeard = streamFrames
            holdsInput = false
        }
    }

    /// The frames written from now on are in `sampleRate` (same channels):
    /// they are converted to the stream's rate and play right after what
    /// was written before (whose converter's look-ahead is finished into
    /// the sink first). Returns false (and changes nothing) for another
    /// channel count, a rate that is not a positive number, or before `reset`.
    package func continueIn(sampleRate: Double, channels: Int, sink: Sink) -> Bool {
        lock.withLock {
            guard streamRate > 0, channels == self.channels, sampleRate.isFinite, sampleRate > 0,
                  sampleRate <= 1_000_000 else { return false }
            guard sampleRate != inputRate else { return true }
            finishLocked(sink: sink)
            inputRate = sampleRate
            resampler = sampleRate == streamRate ? nil
                : FadeResampler(from: sampleRate, to: streamRate, channels: channels, history: 0)
            spans.append(Span(stream: streamWritten + Int64(pendingFrames), written: accepted, step: sampleRate / streamRate))
            return true
        }
    }

    /// Writes `frameCount` frames (in the rate last continued in) through
    /// `sink`; returns how many were accepted: all of them while converting
    /// (what the sink did not take waits for the next call, which accepts
    /// nothing until it is taken), what the sink took otherwise.
    package func write(_ frames: UnsafePointer<Float>, frameCount: Int, sink: Sink) -> Int {
        lock.withLock {
            guard drainPending(sink) else { return 0 }
            guard let resampler else {
                let taken = sink(frames, frameCount)
                streamWritten += Int64(taken)
                accepted += Int64(taken)
                return taken
            }
            resampler.push(frames, count: frameCount)
            holdsInput = true
            accepted += Int64(frameCount)
            convertAvailable(resampler)
            _ = drainPending(sink)
            return frameCount
        }
    }

    /// Converts what the converter holds (silence after it) and hands it to
    /// the sink, as far as the sink takes it (call again for the rest);
    /// later frames start afresh. For a stream's end: the port's
    /// `releaseHeldFrames`, an unpaced file's `stop`, a `drain`.
    package func finish(sink: Sink) {
        lock.withLock { finishLocked(sink: sink) }
    }

    /// The output dropped what was queued; the stream had played
    /// `streamPlayed` frames, and the next frame written plays next. What
    /// the converter held is dropped too; the rate written stays.
    package func flush(streamPlayed: Int64) {
        lock.withLock {
            guard !spans.isEmpty else {
                streamWritten = streamPlayed
                accepted = streamPlayed
                return
            }
            let heard = heardLocked(streamPlayed)
            pending = []
            pendingOffset = 0
            holdsInput = false
            if resampler != nil { resampler = FadeResampler(from: inputRate, to: streamRate, channels: channels, history: 0) }
            streamWritten = streamPlayed
            accepted = heard
            spans = [Span(stream: streamPlayed, written: heard, step: inputRate / streamRate)]
        }
    }

    /// Frames as written that `streamPlayed` stream frames carry (monotonic).
    package func heard(streamPlayed: Int64) -> Int64 {
        lock.withLock { heardLocked(streamPlayed) }
    }

    // MARK: Lock held

    private var pendingFrames: Int { channels > 0 ? (pending.count - pendingOffset) / channels : 0 }

    private func heardLocked(_ played: Int64) -> Int64 {
        // Before the first continuation, frames as written are stream frames.
        guard let first = spans.first, played >= first.stream else { return played }
        var index = spans.count - 1
        while spans[index].stream > played { index -= 1 }
        let span = spans[index]
        let spanEnd = index + 1 < spans.count ? spans[index + 1].written : accepted
        let carried = (Double(played - span.stream) * span.step - 1e-6).rounded(.up)
        var heard = span.written + min(spanEnd - span.written, Int64(clampingFrames: carried))
        // Everything produced is played: the look-ahead held back is heard too.
        if played >= streamWritten, pendingFrames == 0 { heard = accepted }
        lastHeard = max(lastHeard, heard)
        return lastHeard
    }

    /// Converts the input held (if any; then later input starts afresh)
    /// and hands the sink what it takes of the pending frames.
    private func finishLocked(sink: Sink) {
        if let resampler, holdsInput {
            resampler.endInput()
            convertAvailable(resampler)
            self.resampler = FadeResampler(from: inputRate, to: streamRate, channels: channels, history: 0)
            holdsInput = false
            spans.append(Span(stream: streamWritten + Int64(pendingFrames), written: accepted, step: inputRate / streamRate))
        }
        _ = drainPending(sink)
    }

    private func convertAvailable(_ resampler: FadeResampler) {
        if pendingOffset > 0 {
            pending.removeFirst(pendingOffset)
            pendingOffset = 0
        }
        let room = resampler.convertibleFrames
        guard room > 0 else { return }
        let before = pending.count
        pending.append(contentsOf: repeatElement(0, count: room * channels))
        let made = pending.withUnsafeMutableBufferPointer { resampler.convert(into: $0.baseAddress! + before, maxFrames: room) }
        pending.removeLast((room - made) * channels)
    }

    /// Hands the pending frames to the sink; true when none is left.
    private func drainPending(_ sink: Sink) -> Bool {
        let frames = pendingFrames
        guard frames > 0 else { return true }
        let taken = pending.withUnsafeBufferPointer { sink($0.baseAddress! + pendingOffset, frames) }
        streamWritten += Int64(taken)
        pendingOffset += taken * channels
        if taken == frames {
            pending.removeAll(keepingCapacity: true)
            pendingOffset = 0
            return true
        }
        return false
    }
}
