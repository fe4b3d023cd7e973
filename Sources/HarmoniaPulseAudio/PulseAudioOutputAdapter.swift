// PulseAudioOutputAdapter — specs/realtime.md §PulseAudioOutputAdapter
import CPulseAudio
import Foundation
import HarmoniaCore
import Synchronization

/// `AudioOutputPort` on libpulse's asynchronous API and a threaded main loop.
///
/// One FLOAT32LE stream at the source's rate and channel map, opened at
/// `start` with a pre-buffer and buffer attributes from a target latency
/// (ADJUST_LATENCY, INTERPOLATE_TIMING; 500 ms by default, so the server
/// sleeps between refills). Interaction does not wait for that buffer: pause
/// corks, flush drops the server's queue, and the volume is the stream's own
/// volume on the server, applied as it mixes. The write callback copies from
/// the lock-free ring straight into PulseAudio's buffer
/// (`PulseRealTimeState.fill`): no allocation, lock, log or wait.
///
/// A supervisor thread reports underruns and errors as events and, when the
/// server is lost, reconnects with exponential backoff (100 ms doubling to
/// 5 s), sending again what was written but not heard, so playback resumes
/// from the frame that was playing.
///
/// Threads: as the port says. Control calls take the main loop's lock (held
/// briefly; the main loop thread holds it only while dispatching callbacks).
public final class PulseAudioOutputAdapter: AudioOutputPort, @unchecked Sendable {
    public struct Options: Sendable {
        /// Target latency in seconds (clamped to 0.01…2); 0.5 by default,
        /// where the server's CPU cost stops falling (specs/realtime.md).
        public var latency: Double
        /// Sink name; nil for the default sink.
        public var device: String?
        /// Server address; nil for $PULSE_SERVER or the default socket.
        public var server: String?
        /// Frames the ring holds at least, whatever the rate.
        public var ringFrames: Int
        /// Seconds of audio, at the stream's own rate, the ring holds beyond
        /// the latency (the decode-ahead); 0 by default. The ring is the
        /// larger of this and `ringFrames`, so it is not sized for the
        /// highest rate a file might have (a 2 s decode-ahead sized at
        /// 96 kHz held 5.9 s at 44.1 kHz: 1 MiB of a stereo stream wasted).
        public var aheadSeconds: Double = 0
        public var applicationName: String
        /// Paces reconnection attempts.
        public var clock: any ClockPort

        public init(latency: Double = 0.5, device: String? = nil, server: String? = nil, ringFrames: Int = 96_000,
                    applicationName: String = "harmonia", clock: any ClockPort = MonotonicClockAdapter()) {
            self.latency = latency
            self.device = device
            self.server = server
            self.ringFrames = ringFrames
            self.applicationName = applicationName
            self.clock = clock
        }
    }

    public let events: AsyncStream<AudioOutputEvent>
    public func observe(_ handler: @escaping @Sendable (AudioOutputEvent) -> Void) { hub.observe(handler) }
    let hub = EventHub<AudioOutputEvent>()
    let options: Options
    let mainloop: OpaquePointer

    // MARK: Guarded by the main loop's lock
    var context: OpaquePointer?
    var stream: OpaquePointer?
    var rt: PulseRealTimeState?
    var sampleRate: Double = 0
    var channels = 0
    var started = false
    var paused = false
    var closing = false
    /// The gain `setVolume` asked for, 0…1.
    var volume: Float = 1
    var contextWasReady = false
    /// The server is pipewire-pulse ("PulseAudio (on PipeWire …)"), read once
    /// the context is ready: WirePlumber's restore is told our volume first.
    var serverIsPipeWire = false
    var serverLost = false
    /// Last stream position (absolute frames) seen played, and real frames heard then.
    var lastPosition: Int64 = 0
    var lastHeard: Int64 = 0
    var reportedUnderruns = 0
    var supervisorRunning = false
    /// The timing-update timer of the current stream, and its interval (µs).
    var timingTimer: OpaquePointer?
    var timingInterval: pa_usec_t = 100_000
    /// Until when (rtclock µs) a volume the server sets on the new stream is
    /// overridden with the player's.
    var volumeGuardDeadline: pa_usec_t = 0
    /// The read-back found another volume than the player's (a restore).
    var volumeRestoreSeen = false
    /// Frames between what the server reports played and what the sink
    /// plays, which the server leaves out (PipeWire's graph cycle; 0 on PulseAudio).
    var graphDelayFrames: Int64 = 0
    /// The graph's actual cycle, learned from the read index (PipeWire):
    /// the position leaves out that, not the `graphDelayFrames` bound.
    var graphCycle = GraphCycleEstimator()
    /// The read index between timing updates, on PipeWire (`ReadIndexLine`).
    var readIndexLine = ReadIndexLine()
    /// The play position from the last timing report, on PulseAudio
    /// (`TimingReportPosition`): only reports taken after the last cork,
    /// uncork or flush completed.
    var reportPosition = TimingReportPosition()
    /// A start at a time: the deadline, rtclock µs (`start(atMonotonicNanoseconds:)`).
    var startDeadline: Int64 = 0
    /// The start frame the last report placed, until two agree (`placeStartFrame`).
    var startEstimate: Int64?
    /// PipeWire: the line's answers when `startEstimate` was made, and
    /// whether that answer left the estimate within a millisecond.
    var startEstimateAnswers = 0
    var startSettled = false
    /// Buffer attributes the server granted (bytes), for tests and logs.
    var grantedTargetLength: UInt32 = 0

    /// The producer's view of the ring: the decode thread writes without the main loop lock.
    let producerRing = Mutex<SPSCRingBuffer?>(nil)
    /// What is written after a crossfade into another rate, converted on
    /// the producer thread to the stream's (the stream keeps its rate).
    let continuation = RateContinuation()
    /// Set by a flush: the producer's next writes push audio into the stream
    /// themselves (`refill`), rather than wait for the server to ask.
    let refillPending = Atomic<Bool>(false)

    public init(options: Options = Options()) {
        self.options = options
        events = hub.stream()
        mainloop = pa_threaded_mainloop_new()
        pa_threaded_mainloop_start(mainloop)
        // Start connecting now, so the handshake overlaps whatever the caller
        // does before `configure` (opening the first file); `configure`
        // waits for it, and reports a failure then.
        withMainloopLock { try? beginConnecting() }
    }

    deinit {
        withMainloopLock {
            closing = true
            teardownStream()
            teardownContext()
            pa_threaded_mainloop_signal(mainloop, 0)
        }
        pa_threaded_mainloop_stop(mainloop)
        pa_threaded_mainloop_free(mainloop)
        hub.finish()
    }

    // MARK: AudioOutputPort

    public func configure(sampleRate: Double, channels: Int) throws(CoreError) {
        guard sampleRate > 0, sampleRate <= 768_000, channels >= 1, channels <= Int(PA_CHANNELS_MAX) else {
            throw .invalidArgument("PulseAudio output: \(sampleRate) Hz with \(channels) channels is not a playable format")
        }
        try withMainloopLock { () throws(CoreError) in
            teardownStream()
            try connect()
            if let device = options.device { try checkSinkExists(device) }
            self.sampleRate = sampleRate
            self.channels = channels
            let latencyFrames = Int(sampleRate * Self.clampedLatency(options.latency))
            let ahead = options.aheadSeconds.isFinite ? min(max(options.aheadSeconds, 0), 60) : 0
            let ring = SPSCRingBuffer(minimumCapacity: max(options.ringFrames, latencyFrames * 2,
                                                           Int(sampleRate * ahead) + latencyFrames),
                                      channels: channels)
            // Replay after a lost server reaches back half the history: at
            // least the buffer (what the server held, unheard) and 4096 frames.
            let state = PulseRealTimeState(ring: ring, sampleRate: sampleRate, historyFrames: latencyFrames * 2 + 8192)
            state.mainloop = mainloop
            rt = state
            producerRing.withLock { $0 = ring }
            lastPosition = 0
            lastHeard = 0
            continuation.reset(sampleRate: sampleRate, channels: channels)
            reportedUnderruns = 0
            // Stopped until start(): the stream opens then, once the ring holds audio.
            started = false
            paused = false
            startSupervisorIfNeeded()
        }
    }

    public func start() throws(CoreError) {
        try withMainloopLock { () throws(CoreError) in try startLocked() }
    }

    /// `start()` under the main loop lock (`start(atMonotonicNanoseconds:)` too).
    func startLocked() throws(CoreError) {
        guard let rt else { throw .invalidState("PulseAudio output: start() before configure()") }
        started = true
        paused = false
        if stream == nil { try openStream() }
        setPlaying(true)
        if rt.holdsForStart { return }
        // A new stream started with nothing to play yet (a network
        // stream still buffering): the server's first request found the
        // ring empty, and it asks again only once it has played
        // something. As after a flush, the producer pushes the first
        // frames in itself, rather than leave them for the timing
        // timer's next tick (up to 100 ms later).
        if let stream, rt.streamFramesWritten == rt.streamOrigin, rt.ring.readableFrames == 0,
           rt.replayFrom >= rt.replayTo, !rt.refilling {
            rt.refilling = true
            refillPending.store(true, ordering: .releasing)
            // Frames that arrived as the flag was set are pushed now.
            let writable = pa_stream_writable_size(stream)
            if rt.ring.readableFrames > 0, writable > 0, writable != Int.max { rt.fill(stream, writable) }
        }
    }

    public func stop() {
        withMainloopLock {
            started = false
            paused = false
            setPlaying(false)
            flushLocked()
            continuation.flush(streamPlayed: lastHeard)
        }
    }

    public func pause() {
        withMainloopLock {
            paused = true
            setPlaying(false)
        }
    }

    public func resume() {
        withMainloopLock {
            paused = false
            if started { setPlaying(true) }
        }
    }

    public func flush() {
        withMainloopLock {
            flushLocked()
            continuation.flush(streamPlayed: lastHeard)
        }
    }

    /// Applied by the write callback from its next request, to the frame
    /// (`PulseRealTimeState.fill`): heard after what the server already holds.
    public func shiftPlayback(byFrames frames: Int64) -> Bool {
        withMainloopLock {
            guard let rt else { return false }
            if frames > 0 { rt.skipPending += frames } else { rt.silencePending += -max(frames, -Int64(Int32.max)) }
            return true
        }
    }

    public func drain() {
        releaseHeldFrames()
        withMainloopLock {
            guard let rt, let stream, started, !paused else { return }
            rt.draining = true
            defer { rt.draining = false; rt.drainRequested = false }
            while rt.ring.readableFrames > 0 || rt.replayFrom < rt.replayTo,
                  self.stream == stream, started, !paused, !serverLost, !closing {
                pa_threaded_mainloop_wait(mainloop)
            }
            guard self.stream == stream, !serverLost else { return }
            // Less than the pre-buffer may be left: start it regardless.
            wait(for: pa_stream_trigger(stream, operationDone, Unmanaged.passUnretained(self).toOpaque()))
            // What is queued plays out in its own time; a server that never
            // reports the drain done is given that and 2 s more.
            // The server's indexes are outside numbers: subtracted without
            // trapping, and the wait capped at 60 s whatever they say.
            var queuedSeconds = 0.0
            if let timing = pa_stream_get_timing_info(stream), timing.pointee.write_index_corrupt == 0,
               timing.pointee.read_index_corrupt == 0 {
                let (bytes, overflow) = timing.pointee.write_index.subtractingReportingOverflow(timing.pointee.read_index)
                if !overflow, bytes > 0 { queuedSeconds = min(Double(bytes) / Double(channels * 4) / sampleRate, 60) }
            }
            let deadline = pa_rtclock_now() + pa_usec_t(queuedSeconds * 1e6) + 2_000_000
            rt.drainRequested = true
            wait(for: pa_stream_drain(stream, operationDone, Unmanaged.passUnretained(self).toOpaque()), until: deadline)
            // The stream's buffer is empty; the sink still holds its latency's
            // worth. Wait that out (device time), then read the final position.
            // The sink's latency from a fresh timing update: the timer's last
            // one may be a second old.
            wait(for: pa_stream_update_timing_info(stream, operationDone, Unmanaged.passUnretained(self).toOpaque()))
            // On PipeWire that latency is 0 while the graph still holds a
            // cycle (`graphDelayFrames`): wait that out too, as paplay's
            // drain-then-disconnect effectively does.
            var latency: pa_usec_t = 0
            var negative: Int32 = 0
            if pa_stream_get_latency(stream, &latency, &negative) < 0 || negative != 0 { latency = 0 }
            latency = min(latency, 2_000_000) + pa_usec_t(Double(graphDelayFrames) * 1e6 / sampleRate)
            if latency > 0 {
                pa_threaded_mainloop_unlock(mainloop)
                options.clock.sleep(nanoseconds: UInt64(latency) * 1000)
                pa_threaded_mainloop_lock(mainloop)
            }
            guard self.stream == stream, !serverLost, started, !paused else { return }
            // Drained and played out: every frame written has been heard (the
            // server's own latency estimate can trail by a block).
            lastPosition = max(lastPosition, rt.streamFramesWritten)
            lastHeard = max(lastHeard, rt.realFrames(playedUpTo: rt.streamFramesWritten))
        }
    }

    public func write(_ frames: UnsafePointer<Float>, frameCount: Int) -> Int {
        guard let ring = producerRing.withLock({ $0 }) else { return 0 }
        let written = continuation.write(frames, frameCount: frameCount) { ring.write($0, frames: $1) }
        if written > 0, refillPending.load(ordering: .acquiring) { refill() }
        return written
    }

    /// Continues the stream in its rate, converting what follows from
    /// `sampleRate` on the producer thread (`RateContinuation`): for a
    /// crossfade only, so a join without one still drains and opens a
    /// stream in the track's rate, bit-exact. The same channel count only.
    public func continueInFormatForFade(sampleRate: Double, channels: Int) throws(CoreError) -> Bool {
        guard let ring = producerRing.withLock({ $0 }) else { return false }
        return continuation.continueIn(sampleRate: sampleRate, channels: channels) { ring.write($0, frames: $1) }
    }

    public func releaseHeldFrames() {
        guard let ring = producerRing.withLock({ $0 }) else { return }
        continuation.finish { ring.write($0, frames: $1) }
        if refillPending.load(ordering: .acquiring) { refill() }
    }

    /// After a flush (producer thread): the server asked for a whole buffer
    /// while the ring was empty, and will not ask again until it plays
    /// something; so the producer writes what the ring now holds straight
    /// into the stream, until the stream's buffer is full.
    private func refill() {
        withMainloopLock {
            guard let rt, rt.refilling else {
                refillPending.store(false, ordering: .relaxed)
                return
            }
            guard let stream, !serverLost, pa_stream_get_state(stream) == PA_STREAM_READY else { return }
            let writable = pa_stream_writable_size(stream)
            if writable > 0, writable != Int.max { rt.fill(stream, writable) }
            if !rt.refilling { refillPending.store(false, ordering: .relaxed) }
        }
    }

    /// The stream's own volume on the server (its sink input's volume, what
    /// a mixer such as pavucontrol shows for this player), applied by the
    /// server as it mixes: heard within the sink's own latency, however much
    /// audio the stream has queued. Kept across `configure` and reconnects:
    /// each new stream starts at it. Linear amplitude, clamped to 0…1.
    public func setVolume(_ volume: Float) {
        let clamped = min(max(volume.isNaN ? 0 : volume, 0), 1)
        withMainloopLock {
            self.volume = clamped
            applyServerVolume()
        }
    }

    public var framesPlayed: Int64 {
        withMainloopLock {
            updatePosition()
            return continuation.heard(streamPlayed: lastHeard)
        }
    }

    public var underrunCount: Int {
        withMainloopLock { rt?.underruns.load(ordering: .relaxed) ?? 0 }
    }

    /// Frames the current ring holds, or nil before `configure`. For tests.
    package var ringCapacityFrames: Int? {
        withMainloopLock { rt?.ring.capacity }
    }

    /// The timing timer's current interval in seconds (0.1 while the stream
    /// is short of audio or just changed, up to 1 while it is full), or nil
    /// without a stream. For tests.
    package var timingUpdateInterval: Double? {
        withMainloopLock { timingTimer == nil ? nil : Double(timingInterval) / 1e6 }
    }

    /// The latency the server granted for the current stream, in seconds.
    public var grantedLatency: Double {
        withMainloopLock {
            guard sampleRate > 0, channels > 0 else { return 0 }
            return Double(grantedTargetLength) / Double(channels * 4) / sampleRate
        }
    }

    // MARK: Main loop lock

    func withMainloopLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        return try body()
    }

    // MARK: Playback control (main loop lock held)

    func setPlaying(_ playing: Bool) {
        guard let rt, let stream else { return }
        // PulseAudio: what was heard up to the cork, from the report before it.
        if !playing && !serverIsPipeWire { updatePosition() }
        // Corked before its start frame: the silence written plays first on resume.
        if !playing { rt.holdsForStart = false }
        rt.playing = playing
        readIndexLine.reset()  // the index stops, or starts again, now
        wait(for: pa_stream_cork(stream, playing ? 0 : 1, operationDone, Unmanaged.passUnretained(self).toOpaque()))
        // PulseAudio: the position is carried from reports taken after the
        // cork or uncork; ask for one now rather than at the timer's next
        // tick (up to 100 ms). It says when the sink takes the stream.
        if !serverIsPipeWire {
            reportPosition.reset()
            if let operation = pa_stream_update_timing_info(stream, nil, nil) { pa_operation_unref(operation) }
        }
        quickenTimingTimer()
    }

    func flushLocked() {
        guard let rt else { return }
        rt.ring.discardReadable()  // safe: the callback cannot run while we hold the lock
        rt.skipPending = 0
        rt.silencePending = 0
        guard let stream, !serverLost else { return }
        // From here until the buffer is full again the callback writes no
        // silence (it may run while we wait below, with the ring empty), and
        // the producer's writes push the new audio in.
        rt.refilling = true
        refillPending.store(true, ordering: .releasing)
        updatePosition()
        // The server answers in order: the timing it sends is the state right
        // after the flush, and one round trip covers both requests.
        graphCycle.rebase()
        readIndexLine.reset()
        reportPosition.reset()
        let flushing = pa_stream_flush(stream, operationDone, Unmanaged.passUnretained(self).toOpaque())
        wait(for: pa_stream_update_timing_info(stream, operationDone, Unmanaged.passUnretained(self).toOpaque()))
        wait(for: flushing)
        if let timing = pa_stream_get_timing_info(stream), timing.pointee.write_index_corrupt == 0 {
            rt.flushed(playedUpTo: lastPosition, writeIndex: rt.streamOrigin + timing.pointee.write_index / Int64(channels * 4))
        }
        quickenTimingTimer()
    }

    /// Waits for an operation to finish (its callback signals the main
    /// loop) or, given a `deadline` (rtclock µs; something must signal the
    /// main loop now and then: the timing timer while draining), until then,
    /// cancelling it.
    func wait(for operation: OpaquePointer?, until deadline: pa_usec_t? = nil) {
        guard let operation else { return }
        while pa_operation_get_state(operation) == PA_OPERATION_RUNNING, !closing {
            if let deadline, pa_rtclock_now() >= deadline {
                pa_operation_cancel(operation)
                break
            }
            pa_threaded_mainloop_wait(mainloop)
        }
        pa_operation_unref(operation)
    }

    /// Reads the stream's play position and the real frames heard there.
    func updatePosition() {
        guard let stream, let rt, !serverLost else { return }
        let played: Int64
        if serverIsPipeWire, started, !paused, let frames = pipeWireReadIndexNow(stream) {
            played = frames
        } else if !serverIsPipeWire {
            // PulseAudio: from its own last report (`TimingReportPosition`), not
            // libpulse's interpolation, which runs before the sink takes the stream.
            guard let frames = reportPosition.frames(at: Int64(pa_rtclock_now()), rate: sampleRate, runs: started && !paused && rt.playing) else { return }
            played = frames
        } else {
            // A start at a time holds until the line has an answer from after the graph took the stream.
            guard !(serverIsPipeWire && rt.holdsForStart) else { return }
            var microseconds: pa_usec_t = 0
            guard pa_stream_get_time(stream, &microseconds) >= 0 else { return }
            played = Int64((Double(microseconds) * sampleRate / 1e6).rounded())
        }
        let position = rt.streamOrigin + played - heldByGraphFrames
        lastPosition = max(lastPosition, min(position, rt.streamFramesWritten))
        lastHeard = max(lastHeard, rt.realFrames(playedUpTo: lastPosition))
    }

    // MARK: Callbacks (main loop thread, lock held; they only record and signal)

    func contextStateDidChange() {
        guard let context else {
            pa_threaded_mainloop_signal(mainloop, 0)
            return
        }
        let state = pa_context_get_state(context)
        if contextWasReady && (state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED) && !closing {
            serverLost = true
        }
        pa_threaded_mainloop_signal(mainloop, 0)
    }

    func streamStateDidChange() { pa_threaded_mainloop_signal(mainloop, 0) }
    func operationDidFinish() { pa_threaded_mainloop_signal(mainloop, 0) }
    func timingDidUpdate() {
        if let stream, let timing = pa_stream_get_timing_info(stream), timing.pointee.read_index_corrupt == 0 {
            let index = timing.pointee.read_index / Int64(max(channels * 4, 1))
            graphCycle.observe(readIndexFrames: index, atMost: graphDelayFrames)
            if serverIsPipeWire {
                let stamp = timing.pointee.timestamp
                let answered = Int64(stamp.tv_sec) &* 1_000_000 &+ Int64(stamp.tv_usec)
                if let rt, rt.holdsForStart, rt.startFrame == .max {
                    // A start at a time: the line from answers after the graph first
                    // read the stream (an answer before says nothing of when it will).
                    if index > 0 {
                        readIndexLine.observe(readIndexFrames: index, at: answered, rate: sampleRate)
                        placeStartFrameOnPipeWire(rt, stream, index: index)
                    }
                } else {
                    readIndexLine.observe(readIndexFrames: index, at: answered, rate: sampleRate)
                }
            } else if timing.pointee.write_index_corrupt == 0 {
                // Current when the server answered: its own time stamp, on a
                // clock shared with ours (a local server), is how long ago;
                // else the transport delay libpulse measured. Not our receipt
                // time: a late main loop made one report 2.8 ms behind.
                let frameBytes = Int64(max(channels * 4, 1))
                let now = Int64(pa_rtclock_now())
                var age = Int64(min(timing.pointee.transport_usec, 1_000_000))
                if timing.pointee.synchronized_clocks != 0 {
                    var wall = timeval()
                    gettimeofday(&wall, nil)
                    let stamp = timing.pointee.timestamp
                    let (difference, overflow) = (Int64(wall.tv_sec) &* 1_000_000 &+ Int64(wall.tv_usec))
                        .subtractingReportingOverflow(Int64(stamp.tv_sec) &* 1_000_000 &+ Int64(stamp.tv_usec))
                    if !overflow { age = min(max(difference, 0), 1_000_000) }
                }
                let sent = now - age
                let prebuffer = pa_stream_get_buffer_attr(stream).map { Int64($0.pointee.prebuf) / frameBytes } ?? 0
                reportPosition.observe(readIndexFrames: index, writeIndexFrames: timing.pointee.write_index / frameBytes,
                                       sinkMicroseconds: timing.pointee.sink_usec, playing: timing.pointee.playing != 0,
                                       prebufferFrames: prebuffer, at: sent, rate: sampleRate)
                if let rt, rt.holdsForStart, rt.startFrame == .max {
                    placeStartFrame(rt, stream, now: now, sinkPlays: timing.pointee.playing != 0)
                }
            }
        }
        updatePosition()
    }

    /// PipeWire: the read index now, carried from the best recent answer
    /// (`ReadIndexLine`) instead of libpulse's smoother, less the latency the
    /// server reports (its device's; 0 for a null sink). Nil before an answer.
    func pipeWireReadIndexNow(_ stream: OpaquePointer) -> Int64? {
        var now = timeval()
        gettimeofday(&now, nil)  // the clock of the answers' timestamps
        guard let frames = readIndexLine.frames(at: Int64(now.tv_sec) &* 1_000_000 &+ Int64(now.tv_usec), rate: sampleRate) else {
            return nil
        }
        let sinkMicroseconds = pa_stream_get_timing_info(stream).map { min($0.pointee.sink_usec, 2_000_000) } ?? 0
        return max(0, frames - Int64((Double(sinkMicroseconds) * sampleRate / 1e6).rounded()))
    }

    /// The frames the graph holds between pipewire-pulse's read index and
    /// the sink: the cycle learned from the read index when known, else the
    /// stream's own latency bound; 0 on PulseAudio. The drain waits out the
    /// bound, which is never short; the position leaves out the cycle, so
    /// it does not trail when another client shortens it.
    var heldByGraphFrames: Int64 { graphCycle.cycle ?? graphDelayFrames }
}
