// Starting the output's first frame at a given time (slimproto's `unpause
// at T`) — specs/realtime.md §Position, specs/slimproto.md §Sync
import CPulseAudio
import HarmoniaCore

extension PulseAudioOutputAdapter {
    /// On PulseAudio, for a new stream (after `configure`): the stream opens
    /// and plays at once, silence only; the first timing report after the
    /// uncork that says the stream moves (asked for at once, then every
    /// 10 ms) maps the deadline to a stream frame, and the write callback
    /// sends silence up to that frame and the ring's first frame exactly
    /// there (`PulseRealTimeState.holdsForStart`). The silence is not heard:
    /// the position holds at 0 until then. A deadline the sink has already
    /// passed when the report comes starts after the silence already
    /// written, late. False on PipeWire (its position is not read from the
    /// reports) and for a stream already open (specs/realtime.md §Position).
    public func start(atMonotonicNanoseconds deadline: UInt64) throws(CoreError) -> Bool {
        try withMainloopLock { () throws(CoreError) -> Bool in
            guard let rt else { throw .invalidState("PulseAudio output: start() before configure()") }
            guard !serverIsPipeWire, stream == nil else { return false }
            startDeadline = Int64(clamping: deadline / 1000)
            startEstimate = nil
            rt.holdsForStart = startDeadline > Int64(pa_rtclock_now())
            rt.startFrame = .max
            do throws(CoreError) {
                try startLocked()
            } catch {
                rt.holdsForStart = false
                throw error
            }
            // Reports every 10 ms until one places the start frame (`timingTimerDidFire`).
            if rt.holdsForStart, let context, let timer = timingTimer {
                timingInterval = 10_000
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
}
