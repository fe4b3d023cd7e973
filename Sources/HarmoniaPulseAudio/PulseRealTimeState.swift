// PulseRealTimeState — specs/realtime.md §PulseAudioOutputAdapter
//
// What PulseAudio's write callback touches. The callback runs on the threaded
// main loop's thread with the main loop's lock held, and every control-side
// access below also holds that lock: so these fields need no atomics between
// the two. Nothing here allocates after init; `fill` never allocates, locks,
// logs or waits.
import CPulseAudio
import HarmoniaCore
import Synchronization

/// A probe around each write callback, for tests that count what happens
/// inside it (allocations). nil in production: one load per callback.
public typealias PulseCallbackProbe = @convention(c) (Int32) -> Void
nonisolated(unsafe) public var pulseWriteCallbackProbe: PulseCallbackProbe?

final class PulseRealTimeState: @unchecked Sendable {
    let ring: SPSCRingBuffer
    let channels: Int
    let frameBytes: Int
    let sampleRate: Double

    // MARK: Guarded by the main loop's lock (callback and control side)

    /// Uncorked and consuming.
    var playing = false
    /// Drain requested: stop zero-filling; signal the main loop when the ring is empty.
    var draining = false
    /// While draining, until the server is asked to drain, fill what it asks
    /// beyond the last frame with silence (not heard): on PipeWire, whose pipewire-pulse stalls a
    /// stream left with less than a graph cycle until more arrives, so the
    /// last frames sounded only after a gap (measured: 384 frames of a 5.1
    /// stream, late by the drain's wait). Set where `graphDelayFrames` is.
    var drainsWithSilence = false
    /// The server has been asked to drain: from then on nothing more is written.
    var drainRequested = false
    /// Since a flush, until the stream's buffer is full again: write only
    /// real audio, never silence. The server holds a flushed stream in its
    /// pre-buffer state until audio arrives, so the new audio goes in at the
    /// read index and sounds at once; zero-filling here would queue a whole
    /// buffer of silence ahead of it. The producer pushes it (`refill`).
    var refilling = false
    /// Frames written (real + silence), counted across streams: positions are
    /// continuous when a lost server is replaced. The current stream began at
    /// `streamOrigin`, so its own write index is streamFramesWritten − streamOrigin.
    var streamFramesWritten: Int64 = 0
    var streamOrigin: Int64 = 0
    /// The callback has written real audio since the last underrun or flush.
    private var hadRealData = false
    /// Frames to send again before the ring after a reconnection: history
    /// positions [replayFrom, replayTo) of the previous stream.
    var replayFrom: Int64 = 0
    var replayTo: Int64 = 0
    /// The main loop, signalled when a drain empties the ring or an underrun happens.
    var mainloop: OpaquePointer?
    /// `shiftPlayback`'s frames still to skip (read from the ring, never
    /// written, counted as heard) and to write as silence (not heard).
    var skipPending: Int64 = 0
    var silencePending: Int64 = 0
    /// A start at a time (`PulseAudioOutputAdapter.start(atMonotonicNanoseconds:)`):
    /// the callback writes silence (not heard) instead of the ring up to
    /// stream frame `startFrame`, and the ring's first frame there; `.max`
    /// until the first timing report tells that frame. Silence already
    /// written past it is written over (`PA_SEEK_ABSOLUTE`; the server
    /// rewinds its sink for what it had taken).
    var holdsForStart = false
    var startFrame = Int64.max
    /// Largest write that fits one tile of libpulse's shared-memory pool
    /// (whole frames): a larger `pa_stream_begin_write` gets a malloc'ed block.
    var maxChunkFrames = 4096

    /// Silence the callback inserted, as (start, length) in stream frames,
    /// newest last; older entries fold into `silenceBeforeLog`.
    private let silenceStarts: UnsafeMutablePointer<Int64>
    private let silenceLengths: UnsafeMutablePointer<Int64>
    private static let silenceLogSize = 64
    private var silenceCount = 0
    private var silenceBeforeLog: Int64 = 0

    /// What was written to the stream, by stream frame (for replay after a
    /// reconnection): capacity a power of two ≥ the device buffer.
    private let history: UnsafeMutablePointer<Float>
    private let historyFrames: Int

    // MARK: Read anywhere

    let underruns = Atomic<Int>(0)

    init(ring: SPSCRingBuffer, sampleRate: Double, historyFrames minimum: Int) {
        self.ring = ring
        channels = ring.channels
        frameBytes = ring.channels * 4
        self.sampleRate = sampleRate
        var frames = 1024
        while frames < minimum { frames <<= 1 }
        historyFrames = frames
        history = .allocate(capacity: frames * ring.channels)
        history.initialize(repeating: 0, count: frames * ring.channels)
        silenceStarts = .allocate(capacity: Self.silenceLogSize)
        silenceLengths = .allocate(capacity: Self.silenceLogSize)
    }

    deinit {
        history.deallocate()
        silenceStarts.deallocate()
        silenceLengths.deallocate()
    }

    /// The write callback's work: fill `nbytes` of the stream's buffer from
    /// the replay range, then the ring; zero-fill a shortfall while playing
    /// (an underrun). Real-time safe.
    func fill(_ stream: OpaquePointer, _ nbytes: Int) {
        var remaining = nbytes / frameBytes
        while remaining > 0 {
            var data: UnsafeMutableRawPointer? = nil
            var size = min(remaining, maxChunkFrames) * frameBytes
            guard pa_stream_begin_write(stream, &data, &size) >= 0, let data, size >= frameBytes else { return }
            let frames = min(size / frameBytes, remaining, maxChunkFrames)
            let out = data.assumingMemoryBound(to: Float.self)
            var got = 0
            var seek = PA_SEEK_RELATIVE
            var seekBytes: Int64 = 0
            // 0. A start at a time: silence up to the start frame, written
            // over from it when it lies behind what was written.
            if holdsForStart {
                if startFrame < streamFramesWritten {
                    forgetSilence(from: startFrame)
                    seek = PA_SEEK_ABSOLUTE
                    seekBytes = (startFrame - streamOrigin) * Int64(frameBytes)
                    streamFramesWritten = startFrame
                }
                got = Int(min(Int64(frames), startFrame - streamFramesWritten))
                for i in 0..<(got * channels) { out[i] = 0 }
                if got > 0 { logSilence(at: streamFramesWritten, frames: Int64(got)) }
                if streamFramesWritten + Int64(got) >= startFrame { holdsForStart = false }
            }
            let held = got
            // 1. Audio lost with a previous server, sent again.
            while got < frames && replayFrom < replayTo {
                let n = min(frames - got, Int(replayTo - replayFrom), historyFrames - Int(replayFrom & Int64(historyFrames - 1)))
                let start = Int(replayFrom & Int64(historyFrames - 1)) * channels
                for i in 0..<(n * channels) { out[got * channels + i] = history[start + i] }
                got += n
                replayFrom += Int64(n)
            }
            // 2. Sync corrections (shiftPlayback): silence while playing (not
            // heard), then frames skipped (heard, never written).
            if silencePending > 0 && playing && !refilling && !draining && got < frames {
                let n = Int(min(silencePending, Int64(frames - got)))
                for i in (got * channels)..<((got + n) * channels) { out[i] = 0 }
                logSilence(at: streamFramesWritten + Int64(got), frames: Int64(n))
                silencePending -= Int64(n)
                got += n
            }
            while skipPending > 0 && got < frames {
                let n = ring.read(into: out + got * channels, frames: Int(min(skipPending, Int64(frames - got))))
                guard n > 0 else { break }
                skipPending -= Int64(n)
                logSilence(at: streamFramesWritten + Int64(got), frames: -Int64(n))
            }
            // 3. The ring.
            got += ring.read(into: out + got * channels, frames: frames - got)
            if got > held { hadRealData = true }
            let onlyWhatExists = !playing || (draining && !(drainsWithSilence && !drainRequested)) || refilling
            if got < frames {
                if onlyWhatExists {
                    // Corked (prefilling), draining or refilling after a flush: write only what exists.
                    if got == 0 {
                        pa_stream_cancel_write(stream)
                        if draining, let mainloop { pa_threaded_mainloop_signal(mainloop, 0) }
                        return
                    }
                } else {
                    // Playing and the ring ran dry (silence, counted as an
                    // underrun), or draining on PipeWire (silence after the end).
                    for i in (got * channels)..<(frames * channels) { out[i] = 0 }
                    logSilence(at: streamFramesWritten + Int64(got), frames: Int64(frames - got))
                    if draining {
                        if let mainloop { pa_threaded_mainloop_signal(mainloop, 0) }
                    } else if hadRealData {
                        hadRealData = false
                        underruns.add(1, ordering: .relaxed)
                        if let mainloop { pa_threaded_mainloop_signal(mainloop, 0) }
                    }
                }
            }
            let written = (got < frames && onlyWhatExists) ? got : frames
            remember(out, frames: written)
            pa_stream_write(stream, data, written * frameBytes, nil, seekBytes, seek)
            streamFramesWritten += Int64(written)
            remaining -= written
            if written < frames { return }
        }
        // Everything the server asked for was real audio: its buffer is full.
        refilling = false
    }

    /// The server reported an underflow. While playing with audio still to
    /// send (not prefilling or refilling, and not at the end of a drain,
    /// where silence is expected) it is an underrun the callback did not
    /// see: the server, not the ring, ran dry because the callback came late
    /// (PulseAudio and pipewire-pulse then insert silence and lose nothing,
    /// as the pre-buffer is never zero). Real-time safe.
    func serverRanDry() {
        guard playing, !refilling, !draining || ring.readableFrames > 0 || replayFrom < replayTo else { return }
        underruns.add(1, ordering: .relaxed)
        if let mainloop { pa_threaded_mainloop_signal(mainloop, 0) }
    }

    private func remember(_ out: UnsafeMutablePointer<Float>, frames: Int) {
        var position = streamFramesWritten
        for frame in 0..<frames {
            let slot = Int(position & Int64(historyFrames - 1)) * channels
            for c in 0..<channels { history[slot + c] = out[frame * channels + c] }
            position += 1
        }
    }

    /// Logs `frames` of silence at stream frame `start`; a negative count
    /// is frames skipped there (heard without being written: `shiftPlayback`).
    private func logSilence(at start: Int64, frames: Int64) {
        if silenceCount > 0 {
            let last = silenceCount - 1
            let joins = frames > 0 ? silenceLengths[last] > 0 && silenceStarts[last] + silenceLengths[last] == start
                : silenceLengths[last] < 0 && silenceStarts[last] == start
            if joins {
                silenceLengths[last] += frames
                return
            }
        }
        if silenceCount == Self.silenceLogSize {
            silenceBeforeLog += silenceLengths[0]
            for i in 1..<silenceCount {
                silenceStarts[i - 1] = silenceStarts[i]
                silenceLengths[i - 1] = silenceLengths[i]
            }
            silenceCount -= 1
        }
        silenceStarts[silenceCount] = start
        silenceLengths[silenceCount] = frames
        silenceCount += 1
    }

    // MARK: Control side (main loop lock held)

    /// Real frames heard when the stream has played up to stream frame `position`.
    func realFrames(playedUpTo position: Int64) -> Int64 {
        var silence = silenceBeforeLog
        for i in 0..<silenceCount where silenceStarts[i] < position {
            silence += min(silenceLengths[i], position - silenceStarts[i])
        }
        return max(0, position - silence)
    }

    /// After a flush: the stream had played up to `played`; its write index is
    /// now `writeIndex`. Whatever lay between was dropped by the server (some
    /// of it from the sink's own queue) and counts as never heard; what the
    /// callback writes next is heard from `writeIndex` on.
    func flushed(playedUpTo played: Int64, writeIndex: Int64) {
        forgetSilence(from: played)
        holdsForStart = false
        let end = max(writeIndex, played)
        if end > played { logSilence(at: played, frames: end - played) }
        streamFramesWritten = end
        replayFrom = 0
        replayTo = 0
        hadRealData = false
    }

    /// While holding for a start, before its frame is placed: writes the
    /// last frame of silence again, in place (`PA_SEEK_ABSOLUTE`). The
    /// server then asks its sink to rewind for a stream it has not taken
    /// yet, so a sink that rendered ahead takes it sooner. Control side
    /// (main loop lock held); no allocation.
    func rewriteLastSilentFrame(_ stream: OpaquePointer) {
        guard holdsForStart, startFrame == .max, streamFramesWritten > streamOrigin else { return }
        var data: UnsafeMutableRawPointer? = nil
        var size = frameBytes
        guard pa_stream_begin_write(stream, &data, &size) >= 0, let data, size >= frameBytes else { return }
        data.initializeMemory(as: UInt8.self, repeating: 0, count: frameBytes)
        pa_stream_write(stream, data, frameBytes, nil, (streamFramesWritten - 1 - streamOrigin) * Int64(frameBytes), PA_SEEK_ABSOLUTE)
    }

    /// Forgets the silence logged from stream frame `position` on: what
    /// lies there was dropped or is written over. Real-time safe.
    private func forgetSilence(from position: Int64) {
        while silenceCount > 0, silenceStarts[silenceCount - 1] >= position { silenceCount -= 1 }
        if silenceCount > 0 {
            let last = silenceCount - 1
            silenceLengths[last] = min(silenceLengths[last], position - silenceStarts[last])
        }
    }

    /// For a new stream after the old one was lost when it had played up to
    /// `position`: what was written but never heard is sent again first (from
    /// the history) and counts as not heard; the new stream starts here.
    func prepareReplay(lostAt position: Int64) {
        let lost = max(0, streamFramesWritten - position)
        let oldest = max(0, streamFramesWritten - Int64(historyFrames) / 2)
        replayFrom = max(position, oldest)
        replayTo = streamFramesWritten
        if lost > 0 { logSilence(at: position, frames: lost) }
        streamOrigin = streamFramesWritten
        hadRealData = false
    }
}
