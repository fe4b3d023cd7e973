// Starting the output's first frame at a given time (slimproto's `unpause
// at T`) — specs/realtime.md §Position, specs/slimproto.md §Sync
import CPulseAudio
import Foundation
import HarmoniaCore

extension PulseAudioOutputAdapter {
    /// For a new stream (after `configure`): the stream opens and plays at
    /// once, silence only; the timing reports map the deadline to a stream
    /// frame (asked for at once, then every 10 ms, every 2 ms on PipeWire),
    /// and the write callback sends silence up to that frame and the ring's
    /// first frame exactly there (`PulseRealTimeState.holdsForStart`). The
    /// silence is not heard: the position holds at 0 until then. On
    /// PulseAudio the frame comes from the report's read index less the
    /// sink's latency (`placeStartFrame`); on PipeWire from the read index
    /// line less the graph's cycle, the position's own model
    /// (`placeStartFrameOnPipeWire`). A deadline the sink has already passed
    /// when the report comes starts after the silence already written,
    /// late. False for a stream already open (specs/realtime.md §Position).
    public func start(atMonotonicNanoseconds deadline: UInt64) throws(CoreError) -> Bool {
        try withMainloopLock { () throws(CoreError) -> Bool in
            guard let rt else { throw .invalidState("PulseAudio output: start() before configure()") }
            guard stream == nil else { return false }
            startDeadline = Int64(clamping: deadline / 1000)
            startEstimate = nil
            (startEstimateAnswers, startSettled) = (0, false)
            rt.holdsForStart = startDeadline > Int64(pa_rtclock_now())
            rt.startFrame = .max
            do throws(CoreError) {
                try startLocked()
            } catch {
                rt.holdsForStart = false
                throw error
            }
            // Reports every 10 ms (2 ms) until one places the start frame (`timingTimerDidFire`).
            if rt.holdsForStart, let context, let timer = timingTimer {
                timingInterval = startTimingInterval
                pa_context_rttime_restart(context, timer, pa_rtclock_now() + timingInterval)
            }
            return true
        }
    }

    /// A start at a time, once the reports agree where the stream frame the
    /// sink plays at the deadline is: that frame becomes the start frame,
    /// and what the server asks for is written now, over the silence
    /// already sent past it. A sink that rendered ahead (the null sink)
    /// takes a new stream only at its next block, or sooner when it rewinds:
    /// until the sink plays the stream, or two reports in a row place the
    /// frame within a millisecond, the last silent frame is written again
    /// (`PulseRealTimeState.rewriteLastSilentFrame`), which has the server
    /// ask its sink to rewind, and the next report is awaited. When the sink
    /// reaches the stream only after the deadline, the first frame is real
    /// and heard late; the deadline passed, the frame the sink plays now.
    func placeStartFrame(_ rt: PulseRealTimeState, _ stream: OpaquePointer, now: Int64, sinkPlays: Bool) {
        guard let atDeadline = reportPosition.streamFrame(playingAt: startDeadline, rate: sampleRate),
              let atNow = reportPosition.streamFrame(playingAt: now, rate: sampleRate) else { return }
        let settled = startEstimate.map { abs($0 - atDeadline) <= Int64(sampleRate / 1000) } ?? false
        if !sinkPlays && !settled && atNow < atDeadline {
            startEstimate = atDeadline
            rt.rewriteLastSilentFrame(stream)
            if let operation = pa_stream_update_timing_info(stream, nil, nil) { pa_operation_unref(operation) }
            return
        }
        rt.startFrame = rt.streamOrigin + max(0, atDeadline, atNow)
        let writable = pa_stream_writable_size(stream)
        let behind = max(0, rt.streamFramesWritten - rt.startFrame)
        rt.fill(stream, (writable == Int.max ? 0 : max(writable, 0)) + Int(behind) * rt.frameBytes)
    }

    /// A start at a time on PipeWire, at each timing answer while the start
    /// frame is not placed (`index`: the answer's read index, frames). The
    /// frame the sink plays at the deadline is the read index line there
    /// (`ReadIndexLine`: answers from after the stream first moved) less
    /// the sink's latency and the graph's cycle — the position's own model
    /// (specs/realtime.md §PipeWire (through pipewire-pulse)). pipewire-pulse
    /// takes a stream's frames into the graph a cycle before the sink plays
    /// them, so the frame can still be written while the line is short of
    /// it. The line gains one answer per cycle (the first after the index
    /// moved, at most one poll into the cycle); the frame is placed once
    /// four answers are in, the cycle is learned (`GraphCycleEstimator`:
    /// placed with the `node.latency` bound, a start read 19.4 ms early
    /// once the 1,024-frame cycle was learned, in 3 of 10 starts) and the
    /// last answer moved the estimate by at most a millisecond; or when the
    /// deadline comes too close to wait (a resampled stream, whose cycle is
    /// never learned, places it then with the bound)
    /// (a frame already taken: the first frame the server has not).
    func placeStartFrameOnPipeWire(_ rt: PulseRealTimeState, _ stream: OpaquePointer, index: Int64) {
        // The answers' clock is the wall clock; the deadline's, the monotonic one.
        var wall = timeval()
        gettimeofday(&wall, nil)
        let wallNow = Int64(wall.tv_sec) &* 1_000_000 &+ Int64(wall.tv_usec)
        let now = Int64(pa_rtclock_now())
        let rate = sampleRate
        guard let atDeadline = readIndexLine.projectedFrames(at: startDeadline + (wallNow - now), rate: rate),
              let atNow = readIndexLine.projectedFrames(at: wallNow, rate: rate) else { return }
        let sinkFrames = pa_stream_get_timing_info(stream).map { Int64((Double(min($0.pointee.sink_usec, 2_000_000)) * rate / 1e6).rounded()) } ?? 0
        let heard = atDeadline - sinkFrames - heldByGraphFrames
        // Not yet taken by the graph: past the line now, with 10 ms for the write to arrive.
        let earliest = max(index, atNow) + Int64(rate / 100)
        // Settled: the last answer moved the estimate by at most a millisecond.
        if readIndexLine.answers != startEstimateAnswers {
            startSettled = startEstimate.map { abs($0 - heard) <= Int64(rate / 1000) } ?? false
            startEstimate = heard
            startEstimateAnswers = readIndexLine.answers
        }
        let ready = startSettled && readIndexLine.answers >= 4 && graphCycle.cycle != nil
        if !ready && heard - earliest > Int64(rate * Self.startPlacementSlack) { return }
        rt.startFrame = rt.streamOrigin + max(heard, earliest, 0)
        let writable = pa_stream_writable_size(stream)
        let behind = max(0, rt.streamFramesWritten - rt.startFrame)
        rt.fill(stream, (writable == Int.max ? 0 : max(writable, 0)) + Int(behind) * rt.frameBytes)
    }

    /// Seconds before the last moment a start frame can be written that
    /// placing it stops waiting for a better estimate (PipeWire).
    static var startPlacementSlack: Double { 0.008 }

    /// The timing timer's interval while a start waits for its frame, µs:
    /// PipeWire's read index moves once a graph cycle, and the line is only
    /// as good as the first answer after the move.
    var startTimingInterval: pa_usec_t { serverIsPipeWire ? 2_000 : 10_000 }
}
