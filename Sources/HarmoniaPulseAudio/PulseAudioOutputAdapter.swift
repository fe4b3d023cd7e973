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
        /// Frames the ring holds (the decode-ahead); at least the latency.
        public var ringFrames: Int
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
    private let hub = EventHub<AudioOutputEvent>()
    private let options: Options
    private let mainloop: OpaquePointer

    // MARK: Guarded by the main loop's lock
    private var context: OpaquePointer?
    private var stream: OpaquePointer?
    private var rt: PulseRealTimeState?
    private var sampleRate: Double = 0
    private var channels = 0
    private var started = false
    private var paused = false
    private var closing = false
    /// The gain `setVolume` asked for, 0…1.
    private var volume: Float = 1
    private var contextWasReady = false
    private var serverLost = false
    /// Last stream position (absolute frames) seen played, and real frames heard then.
    private var lastPosition: Int64 = 0
    private var lastHeard: Int64 = 0
    private var reportedUnderruns = 0
    private var supervisorRunning = false
    /// The 100 ms timing-update timer of the current stream.
    private var timingTimer: OpaquePointer?
    /// Buffer attributes the server granted (bytes), for tests and logs.
    private var grantedTargetLength: UInt32 = 0

    /// The producer's view of the ring: the decode thread writes without the main loop lock.
    private let producerRing = Mutex<SPSCRingBuffer?>(nil)
    /// Set by a flush: the producer's next writes push audio into the stream
    /// themselves (`refill`), rather than wait for the server to ask.
    private let refillPending = Atomic<Bool>(false)

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
            let ring = SPSCRingBuffer(minimumCapacity: max(options.ringFrames, latencyFrames * 2), channels: channels)
            let state = PulseRealTimeState(ring: ring, sampleRate: sampleRate, historyFrames: latencyFrames * 4 + 8192)
            state.mainloop = mainloop
            rt = state
            producerRing.withLock { $0 = ring }
            lastPosition = 0
            lastHeard = 0
            reportedUnderruns = 0
            // Stopped until start(): the stream opens then, once the ring holds audio.
            started = false
            paused = false
            startSupervisorIfNeeded()
        }
    }

    public func start() throws(CoreError) {
        try withMainloopLock { () throws(CoreError) in
            guard rt != nil else { throw .invalidState("PulseAudio output: start() before configure()") }
            started = true
            paused = false
            if stream == nil { try openStream() }
            setPlaying(true)
        }
    }

    public func stop() {
        withMainloopLock {
            started = false
            paused = false
            setPlaying(false)
            flushLocked()
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
        withMainloopLock { flushLocked() }
    }

    public func drain() {
        withMainloopLock {
            guard let rt, let stream, started, !paused else { return }
            rt.draining = true
            defer { rt.draining = false }
            while rt.ring.readableFrames > 0 || rt.replayFrom < rt.replayTo,
                  self.stream == stream, started, !paused, !serverLost, !closing {
                pa_threaded_mainloop_wait(mainloop)
            }
            guard self.stream == stream, !serverLost else { return }
            // Less than the pre-buffer may be left: start it regardless.
            wait(for: pa_stream_trigger(stream, operationDone, Unmanaged.passUnretained(self).toOpaque()))
            wait(for: pa_stream_drain(stream, operationDone, Unmanaged.passUnretained(self).toOpaque()))
            // The stream's buffer is empty; the sink still holds its latency's
            // worth. Wait that out (device time), then read the final position.
            var latency: pa_usec_t = 0
            var negative: Int32 = 0
            if pa_stream_get_latency(stream, &latency, &negative) >= 0, negative == 0, latency > 0 {
                pa_threaded_mainloop_unlock(mainloop)
                options.clock.sleep(nanoseconds: UInt64(min(latency, 2_000_000)) * 1000)
                pa_threaded_mainloop_lock(mainloop)
            }
            guard self.stream == stream, !serverLost else { return }
            // Drained and played out: every frame written has been heard (the
            // server's own latency estimate can trail by a block).
            lastPosition = max(lastPosition, rt.streamFramesWritten)
            lastHeard = max(lastHeard, rt.realFrames(playedUpTo: rt.streamFramesWritten))
        }
    }

    public func write(_ frames: UnsafePointer<Float>, frameCount: Int) -> Int {
        guard let ring = producerRing.withLock({ $0 }) else { return 0 }
        let written = ring.write(frames, frames: frameCount)
        if written > 0, refillPending.load(ordering: .acquiring) { refill() }
        return written
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

    /// Sets the current stream's sink input to `volume`, if the stream is
    /// ready (a stream still connecting gets it once ready). Main loop lock held.
    private func applyServerVolume() {
        guard let context, let stream, pa_stream_get_state(stream) == PA_STREAM_READY else { return }
        var levels = serverVolume()
        if let operation = pa_context_set_sink_input_volume(context, pa_stream_get_index(stream), &levels, nil, nil) {
            pa_operation_unref(operation)
        }
    }

    /// `volume` for every channel of the stream, on the server's scale.
    private func serverVolume() -> pa_cvolume {
        var levels = pa_cvolume()
        pa_cvolume_set(&levels, UInt32(max(channels, 1)), pa_sw_volume_from_linear(Double(volume)))
        return levels
    }

    public var framesPlayed: Int64 {
        withMainloopLock {
            updatePosition()
            return lastHeard
        }
    }

    public var underrunCount: Int {
        withMainloopLock { rt?.underruns.load(ordering: .relaxed) ?? 0 }
    }

    /// The latency the server granted for the current stream, in seconds.
    public var grantedLatency: Double {
        withMainloopLock {
            guard sampleRate > 0, channels > 0 else { return 0 }
            return Double(grantedTargetLength) / Double(channels * 4) / sampleRate
        }
    }

    // MARK: Main loop lock

    private func withMainloopLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        return try body()
    }

    // MARK: Connection (main loop lock held)

    /// Connected and ready on return, reusing a context already connected or
    /// on its way (from `init`); one that failed before is replaced once.
    private func connect() throws(CoreError) {
        if let context, contextWasReady, pa_context_get_state(context) == PA_CONTEXT_READY { return }
        var fresh = false
        if context == nil {
            try beginConnecting()
            fresh = true
        }
        guard let context else { return }
        while true {
            let state = pa_context_get_state(context)
            if state == PA_CONTEXT_READY { break }
            if state == PA_CONTEXT_FAILED || state == PA_CONTEXT_TERMINATED {
                let reason = String(cString: pa_strerror(pa_context_errno(context)))
                teardownContext()
                // The early attempt may predate the server: try once more now.
                if !fresh { return try connect() }
                throw Self.noServer(options.server, reason)
            }
            pa_threaded_mainloop_wait(mainloop)
        }
        contextWasReady = true
        serverLost = false
    }

    /// Creates the context and starts connecting; does not wait.
    private func beginConnecting() throws(CoreError) {
        let api = pa_threaded_mainloop_get_api(mainloop)
        guard let context = pa_context_new(api, options.applicationName) else {
            throw .ioError("PulseAudio: cannot create a context (out of memory)")
        }
        pa_context_set_state_callback(context, contextStateChanged, Unmanaged.passUnretained(self).toOpaque())
        contextWasReady = false
        if pa_context_connect(context, options.server, PA_CONTEXT_NOAUTOSPAWN, nil) < 0 {
            let reason = String(cString: pa_strerror(pa_context_errno(context)))
            pa_context_set_state_callback(context, nil, nil)
            pa_context_unref(context)
            throw Self.noServer(options.server, reason)
        }
        self.context = context
    }

    /// Throws notFound unless the server has a sink called `name`.
    private func checkSinkExists(_ name: String) throws(CoreError) {
        guard let context else { return }
        let found = SinkLookup()
        let box = Unmanaged.passRetained(LookupContext(adapter: self, result: found))
        defer { box.release() }
        wait(for: pa_context_get_sink_info_by_name(context, name, sinkInfoReceived, box.toOpaque()))
        if !found.exists {
            throw .notFound("PulseAudio: no sink named '\(name)' (list them with 'pactl list short sinks')")
        }
    }

    private static func noServer(_ server: String?, _ reason: String) -> CoreError {
        let address = server ?? ProcessInfo.processInfo.environment["PULSE_SERVER"] ?? "the default socket"
        return .ioError("no PulseAudio server reachable at \(address) (\(reason)): start one with "
            + "'pulseaudio --start', or play with '--output null' or '--output file:PATH'")
    }

    private func openStream() throws(CoreError) {
        guard let context, let rt else { throw .invalidState("PulseAudio output: no context") }
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(sampleRate), channels: UInt8(channels))
        var map = pa_channel_map()
        pa_channel_map_init_extend(&map, UInt32(channels), PA_CHANNEL_MAP_WAVEEX)
        guard let stream = pa_stream_new(context, "playback", &spec, &map) else {
            throw .ioError("PulseAudio: cannot create a stream (\(String(cString: pa_strerror(pa_context_errno(context)))))")
        }
        pa_stream_set_write_callback(stream, streamWriteRequested, Unmanaged.passUnretained(rt).toOpaque())
        pa_stream_set_state_callback(stream, streamStateChanged, Unmanaged.passUnretained(self).toOpaque())
        pa_stream_set_latency_update_callback(stream, streamTimingUpdated, Unmanaged.passUnretained(self).toOpaque())
        let latencyBytes = UInt32(sampleRate * Self.clampedLatency(options.latency)) * UInt32(channels * 4)
        // Opened uncorked once the ring holds audio, with a pre-buffer: the
        // server starts the stream when real audio has arrived. With prebuf 0
        // it starts at once and the first writes land behind its read index
        // (measured: 14–23 ms lost at the start of every stream).
        let frameBytes = UInt32(channels * 4)
        let prebuffer = min(latencyBytes / 2, UInt32(max(rt.ring.readableFrames, 1)) * frameBytes) / frameBytes * frameBytes
        var attributes = pa_buffer_attr(maxlength: UInt32.max, tlength: latencyBytes, prebuf: max(prebuffer, frameBytes),
                                        minreq: UInt32.max, fragsize: UInt32.max)
        // No AUTO_TIMING_UPDATE: with it, pa_stream_write itself sends timing
        // requests, whose reply registration allocates now and then inside
        // the write callback (measured: 7 allocations in a minute). A 100 ms
        // main loop timer requests them instead, off the write path.
        let flags = pa_stream_flags_t(rawValue: PA_STREAM_ADJUST_LATENCY.rawValue | PA_STREAM_INTERPOLATE_TIMING.rawValue)
        // The stream starts at the player's volume: its first frame plays at it.
        var levels = serverVolume()
        let connectVolume = volume
        if pa_stream_connect_playback(stream, options.device, &attributes, flags, &levels, nil) < 0 {
            let error = pa_context_errno(context)
            pa_stream_unref(stream)
            throw Self.streamError(error, device: options.device)
        }
        while true {
            let state = pa_stream_get_state(stream)
            if state == PA_STREAM_READY { break }
            if state == PA_STREAM_FAILED || state == PA_STREAM_TERMINATED {
                let error = pa_context_errno(context)
                pa_stream_set_write_callback(stream, nil, nil)
                pa_stream_set_state_callback(stream, nil, nil)
                pa_stream_set_latency_update_callback(stream, nil, nil)
                pa_stream_unref(stream)
                throw Self.streamError(error, device: options.device)
            }
            pa_threaded_mainloop_wait(mainloop)
        }
        grantedTargetLength = pa_stream_get_buffer_attr(stream)?.pointee.tlength ?? latencyBytes
        self.stream = stream
        // A setVolume while the stream connected (the wait releases the lock).
        if volume != connectVolume { applyServerVolume() }
        startTimingTimer()
        let tile = pa_context_get_tile_size(context, &spec)
        if tile > 0 { rt.maxChunkFrames = max(1, tile / (channels * 4)) }
        // The first write, from here (the lock keeps the callback out): the
        // first audio is queued at once, ahead of the server's first request.
        rt.fill(stream, Int(latencyBytes))
    }

    private static func streamError(_ code: Int32, device: String?) -> CoreError {
        let reason = String(cString: pa_strerror(code))
        if code == Int32(PA_ERR_NOENTITY.rawValue), let device {
            return .notFound("PulseAudio: no sink named '\(device)' (list them with 'pactl list short sinks')")
        }
        return .ioError("PulseAudio: cannot open a playback stream (\(reason))")
    }

    private func teardownStream() {
        stopTimingTimer()
        guard let stream else { return }
        pa_stream_set_write_callback(stream, nil, nil)
        pa_stream_set_state_callback(stream, nil, nil)
        pa_stream_set_latency_update_callback(stream, nil, nil)
        if pa_stream_get_state(stream) == PA_STREAM_READY {
            pa_operation_unref(pa_stream_cork(stream, 1, nil, nil))
            pa_stream_disconnect(stream)
        }
        pa_stream_unref(stream)
        self.stream = nil
    }

    /// Requests a timing update every 100 ms (main loop thread, not the write path).
    private func startTimingTimer() {
        guard timingTimer == nil, let context else { return }
        timingTimer = pa_context_rttime_new(context, pa_rtclock_now() + 100_000, timingTimerFired,
                                            Unmanaged.passUnretained(self).toOpaque())
    }

    private func stopTimingTimer() {
        guard let timer = timingTimer else { return }
        pa_threaded_mainloop_get_api(mainloop).pointee.time_free(timer)
        timingTimer = nil
    }

    /// Also un-starves the stream: when the callback found the ring empty and
    /// wrote nothing (before the first frames, or while corked), libpulse
    /// does not ask again until the server consumes something, and the
    /// server waits for data. Same thread as the write callback, lock held.
    fileprivate func timingTimerDidFire() {
        guard let stream, let context, let timer = timingTimer else { return }
        if pa_stream_get_state(stream) == PA_STREAM_READY {
            if let operation = pa_stream_update_timing_info(stream, nil, nil) { pa_operation_unref(operation) }
            let writable = pa_stream_writable_size(stream)
            if let rt, writable > 0, writable != Int.max, rt.ring.readableFrames > 0 { rt.fill(stream, writable) }
        }
        pa_context_rttime_restart(context, timer, pa_rtclock_now() + 100_000)
    }

    private func teardownContext() {
        guard let context else { return }
        pa_context_set_state_callback(context, nil, nil)
        pa_context_disconnect(context)
        pa_context_unref(context)
        self.context = nil
    }

    private static func clampedLatency(_ latency: Double) -> Double { min(max(latency, 0.01), 2) }

    // MARK: Playback control (main loop lock held)

    private func setPlaying(_ playing: Bool) {
        guard let rt, let stream else { return }
        rt.playing = playing
        wait(for: pa_stream_cork(stream, playing ? 0 : 1, operationDone, Unmanaged.passUnretained(self).toOpaque()))
    }

    private func flushLocked() {
        guard let rt else { return }
        rt.ring.discardReadable()  // safe: the callback cannot run while we hold the lock
        guard let stream, !serverLost else { return }
        // From here until the buffer is full again the callback writes no
        // silence (it may run while we wait below, with the ring empty), and
        // the producer's writes push the new audio in.
        rt.refilling = true
        refillPending.store(true, ordering: .releasing)
        updatePosition()
        // The server answers in order: the timing it sends is the state right
        // after the flush, and one round trip covers both requests.
        let flushing = pa_stream_flush(stream, operationDone, Unmanaged.passUnretained(self).toOpaque())
        wait(for: pa_stream_update_timing_info(stream, operationDone, Unmanaged.passUnretained(self).toOpaque()))
        wait(for: flushing)
        if let timing = pa_stream_get_timing_info(stream), timing.pointee.write_index_corrupt == 0 {
            rt.flushed(playedUpTo: lastPosition, writeIndex: rt.streamOrigin + timing.pointee.write_index / Int64(channels * 4))
        }
    }

    /// Waits for an operation to finish (its callback signals the main loop).
    private func wait(for operation: OpaquePointer?) {
        guard let operation else { return }
        while pa_operation_get_state(operation) == PA_OPERATION_RUNNING, !closing {
            pa_threaded_mainloop_wait(mainloop)
        }
        pa_operation_unref(operation)
    }

    /// Reads the stream's play position and the real frames heard there.
    private func updatePosition() {
        guard let stream, let rt, !serverLost else { return }
        var microseconds: pa_usec_t = 0
        guard pa_stream_get_time(stream, &microseconds) >= 0 else { return }
        let position = rt.streamOrigin + Int64((Double(microseconds) * sampleRate / 1e6).rounded())
        lastPosition = max(lastPosition, min(position, rt.streamFramesWritten))
        lastHeard = max(lastHeard, rt.realFrames(playedUpTo: lastPosition))
    }

    // MARK: Callbacks (main loop thread, lock held; they only record and signal)

    fileprivate func contextStateDidChange() {
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

    fileprivate func streamStateDidChange() { pa_threaded_mainloop_signal(mainloop, 0) }
    fileprivate func operationDidFinish() { pa_threaded_mainloop_signal(mainloop, 0) }
    fileprivate func timingDidUpdate() { updatePosition() }

    // MARK: Supervisor: events and reconnection, off the real-time thread

    private func startSupervisorIfNeeded() {
        guard !supervisorRunning else { return }
        supervisorRunning = true
        let thread = Thread { [weak self] in nameCurrentThread("harmonia.pulsesv"); self?.supervise() }
        thread.name = "harmonia.pulse-supervisor"
        thread.start()
    }

    private func supervise() {
        pa_threaded_mainloop_lock(mainloop)
        defer { pa_threaded_mainloop_unlock(mainloop) }
        while !closing {
            if let rt {
                let underruns = rt.underruns.load(ordering: .relaxed)
                if underruns != reportedUnderruns {
                    reportedUnderruns = underruns
                    hub.emit(.underrun(count: underruns))
                }
            }
            if serverLost {
                reconnect()
                continue
            }
            pa_threaded_mainloop_wait(mainloop)
        }
        supervisorRunning = false
    }

    /// The server went away: report it, then try again with exponential
    /// backoff until it is back (or the output closes), and resume from the
    /// frame that was playing.
    private func reconnect() {
        let heard = lastHeard
        hub.emit(.error(.ioError("PulseAudio server lost during playback; reconnecting")))
        let lostAt = lastPosition
        teardownStream()
        teardownContext()
        rt?.prepareReplay(lostAt: lostAt)
        var backoff: UInt64 = 100_000_000
        while !closing {
            pa_threaded_mainloop_unlock(mainloop)
            options.clock.sleep(nanoseconds: backoff)
            pa_threaded_mainloop_lock(mainloop)
            if closing { return }
            do {
                try connect()
                try openStream()
                if started && !paused { setPlaying(true) }
                lastPosition = rt?.streamOrigin ?? lastPosition
                hub.emit(.reconnected(frame: heard))
                return
            } catch {
                teardownStream()
                teardownContext()
                backoff = min(backoff * 2, 5_000_000_000)
            }
        }
    }
}

// C callbacks: userdata is the adapter (or the real-time state), unretained;
// the adapter clears every callback before it releases what they point to.

private let contextStateChanged: pa_context_notify_cb_t = { _, userdata in
    Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue().contextStateDidChange()
}

private let streamStateChanged: pa_stream_notify_cb_t = { _, userdata in
    Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue().streamStateDidChange()
}

private let streamTimingUpdated: pa_stream_notify_cb_t = { _, userdata in
    Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue().timingDidUpdate()
}

private let timingTimerFired: pa_time_event_cb_t = { _, _, _, userdata in
    Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue().timingTimerDidFire()
}

private let operationDone: pa_stream_success_cb_t = { _, _, userdata in
    Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue().operationDidFinish()
}

/// What a sink lookup found (written on the main loop thread, lock held).
final class SinkLookup { var exists = false }

/// Userdata for a sink lookup: who to signal, where to record.
final class LookupContext {
    unowned let adapter: PulseAudioOutputAdapter
    let result: SinkLookup
    init(adapter: PulseAudioOutputAdapter, result: SinkLookup) {
        self.adapter = adapter
        self.result = result
    }
}

private let sinkInfoReceived: pa_sink_info_cb_t = { _, info, eol, userdata in
    let context = Unmanaged<LookupContext>.fromOpaque(userdata!).takeUnretainedValue()
    if info != nil { context.result.exists = true }
    if eol != 0 || info != nil { context.adapter.operationDidFinish() }
}

/// The real-time callback: everything it does is in `PulseRealTimeState.fill`.
private let streamWriteRequested: pa_stream_request_cb_t = { stream, bytes, userdata in
    let probe = pulseWriteCallbackProbe
    probe?(1)
    Unmanaged<PulseRealTimeState>.fromOpaque(userdata!).takeUnretainedValue().fill(stream!, bytes)
    probe?(0)
}
