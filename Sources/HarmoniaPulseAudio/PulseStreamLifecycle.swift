// PulseAudioOutputAdapter: connection and stream lifecycle — specs/realtime.md §PulseAudioOutputAdapter
//
// The context and the stream: connecting (once, reused across configures),
// checking a sink, opening the stream with its buffer attributes, the timing
// timer, and tearing both down. Every method here runs with the main loop's
// lock held, on a control thread, the supervisor or the main loop thread.
import CPulseAudio
import Foundation
import HarmoniaCore

extension PulseAudioOutputAdapter {

    /// Connected and ready on return, reusing a context already connected or
    /// on its way (from `init`); one that failed before is replaced once.
    func connect() throws(CoreError) {
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
        wait(for: pa_context_get_server_info(context, serverInfoReceived, Unmanaged.passUnretained(self).toOpaque()),
             until: pa_rtclock_now() + Self.serverAnswerDeadline)
        // Sink-input changes: a session manager restoring a saved volume
        // onto a new stream is seen, and answered (`sinkInputIs`).
        pa_context_set_subscribe_callback(context, contextEventReceived, Unmanaged.passUnretained(self).toOpaque())
        if let operation = pa_context_subscribe(context, PA_SUBSCRIPTION_MASK_SINK_INPUT, nil, nil) {
            pa_operation_unref(operation)
        }
    }

    /// Creates the context and starts connecting; does not wait.
    func beginConnecting() throws(CoreError) {
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
    func checkSinkExists(_ name: String) throws(CoreError) {
        guard let context else { return }
        let found = SinkLookup()
        let box = Unmanaged.passRetained(LookupContext(adapter: self, result: found))
        defer { box.release() }
        wait(for: pa_context_get_sink_info_by_name(context, name, sinkInfoReceived, box.toOpaque()))
        if !found.exists {
            throw .notFound("PulseAudio: no sink named '\(name)' (list them with 'pactl list short sinks')")
        }
    }

    static func noServer(_ server: String?, _ reason: String) -> CoreError {
        let address = server ?? ProcessInfo.processInfo.environment["PULSE_SERVER"] ?? "the default socket"
        return .ioError("no PulseAudio server reachable at \(address) (\(reason)): start one with "
            + "'pulseaudio --start', or play with '--output null' or '--output file:PATH'")
    }

    func openStream() throws(CoreError) {
        guard let context, let rt else { throw .invalidState("PulseAudio output: no context") }
        var spec = pa_sample_spec(format: PA_SAMPLE_FLOAT32LE, rate: UInt32(sampleRate), channels: UInt8(channels))
        var map = pa_channel_map()
        pa_channel_map_init_extend(&map, UInt32(channels), PA_CHANNEL_MAP_WAVEEX)
        guard let stream = pa_stream_new(context, "playback", &spec, &map) else {
            throw .ioError("PulseAudio: cannot create a stream (\(String(cString: pa_strerror(pa_context_errno(context)))))")
        }
        setCallbacks(of: stream, realTime: rt)
        let latencyBytes = UInt32(sampleRate * Self.clampedLatency(options.latency)) * UInt32(channels * 4)
        // Opened uncorked once the ring holds audio, with a pre-buffer: the
        // server starts the stream when real audio has arrived. With prebuf 0
        // it starts at once and the first writes land behind its read index
        // (measured: 14–23 ms lost at the start of every stream).
        let frameBytes = UInt32(channels * 4)
        let prebuffer = min(latencyBytes / 2, UInt32(max(rt.ring.readableFrames, 1)) * frameBytes) / frameBytes * frameBytes
        // At a long target latency (the default 500 ms) the server asks for
        // audio once a quarter of the buffer has played (minreq), as
        // PulseAudio chooses by itself; pipewire-pulse, left to choose, asks
        // at every graph cycle (43 times a second), and each request costs
        // both main loops a round trip (measured on the tests' PipeWire, a
        // FLAC: our main loop's thread 5.2 -> 1.7 ms a second). A short
        // target leaves it to the server: there pipewire-pulse takes minreq
        // as the node's latency, and a quarter of 20 ms would shrink the
        // graph's cycle for every client.
        let minimumRequest = Self.clampedLatency(options.latency) >= Self.longLatency
            ? latencyBytes / 4 / frameBytes * frameBytes : UInt32.max
        var attributes = pa_buffer_attr(maxlength: UInt32.max, tlength: latencyBytes, prebuf: max(prebuffer, frameBytes),
                                        minreq: minimumRequest, fragsize: UInt32.max)
        // No AUTO_TIMING_UPDATE: with it, pa_stream_write itself sends timing
        // requests, whose reply registration allocates now and then inside
        // the write callback (measured: 7 allocations in a minute). The timing
        // timer on the main loop requests them instead, off the write path.
        let flags = pa_stream_flags_t(rawValue: PA_STREAM_ADJUST_LATENCY.rawValue | PA_STREAM_INTERPOLATE_TIMING.rawValue)
        // The stream starts at the player's volume: its first frame plays at
        // it, and on PipeWire the session manager restores that same volume
        // (`presetRestoredVolume`) rather than the last one saved.
        var levels = serverVolume()
        presetRestoredVolume(levels, channelMap: map)
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
                setCallbacks(of: stream, realTime: nil)
                pa_stream_unref(stream)
                throw Self.streamError(error, device: options.device)
            }
            pa_threaded_mainloop_wait(mainloop)
        }
        grantedTargetLength = pa_stream_get_buffer_attr(stream)?.pointee.tlength ?? latencyBytes
        self.stream = stream
        // The player's volume holds from the first frame, whatever the
        // server restored: WirePlumber's stream-restore (PipeWire) sets the
        // last saved volume of "harmonia" onto each new stream, over the one
        // it connected with, as the stream appears. Set ours again now
        // (also catching a setVolume made while the wait released the lock),
        // read it back, and answer any change the session manager makes in
        // the guard window that follows.
        volumeGuardDeadline = pa_rtclock_now() + Self.volumeGuardWindow
        volumeRestoreSeen = false
        applyServerVolume(waiting: true)
        wait(for: pa_context_get_sink_input_info(context, pa_stream_get_index(stream), sinkInputInfoReceived,
                                                 Unmanaged.passUnretained(self).toOpaque()))
        // A restore seen by then is answered before the first frame is written.
        if volumeRestoreSeen { applyServerVolume(waiting: true) }
        graphCycle.reset()
        readIndexLine.reset()
        reportPosition.reset()
        startTimingTimer()
        let tile = pa_context_get_tile_size(context, &spec)
        if tile > 0 { rt.maxChunkFrames = max(1, tile / (channels * 4)) }
        // The first write, from here (the lock keeps the callback out): the
        // first audio is queued at once, ahead of the server's first request.
        rt.fill(stream, Int(latencyBytes))
    }

    static func streamError(_ code: Int32, device: String?) -> CoreError {
        let reason = String(cString: pa_strerror(code))
        if code == Int32(PA_ERR_NOENTITY.rawValue), let device {
            return .notFound("PulseAudio: no sink named '\(device)' (list them with 'pactl list short sinks')")
        }
        return .ioError("PulseAudio: cannot open a playback stream (\(reason))")
    }

    /// Points the stream's callbacks at this adapter and `rt` (the write
    /// and underflow callbacks), or clears them all when `rt` is nil.
    private func setCallbacks(of stream: OpaquePointer, realTime rt: PulseRealTimeState?) {
        let state = rt.map { Unmanaged.passUnretained($0).toOpaque() }
        let adapter = rt == nil ? nil : Unmanaged.passUnretained(self).toOpaque()
        pa_stream_set_write_callback(stream, rt == nil ? nil : streamWriteRequested, state)
        pa_stream_set_underflow_callback(stream, rt == nil ? nil : streamUnderflowed, state)
        pa_stream_set_state_callback(stream, rt == nil ? nil : streamStateChanged, adapter)
        pa_stream_set_latency_update_callback(stream, rt == nil ? nil : streamTimingUpdated, adapter)
    }

    func teardownStream() {
        stopTimingTimer()
        // The old stream's last report must not place the next one: the
        // write callback may fill the new stream while `openStream` waits,
        // and a stale report made the first 16,537 frames of silence count
        // as heard (a start at a time then heard 103 ms early).
        reportPosition.reset()
        guard let stream else { return }
        setCallbacks(of: stream, realTime: nil)
        if pa_stream_get_state(stream) == PA_STREAM_READY {
            pa_operation_unref(pa_stream_cork(stream, 1, nil, nil))
            pa_stream_disconnect(stream)
        }
        pa_stream_unref(stream)
        self.stream = nil
    }

    /// Starts the timing timer of a new stream (main loop thread, not the write path).
    func startTimingTimer() {
        guard timingTimer == nil, let context else { return }
        timingInterval = Self.quickTiming
        timingTimer = pa_context_rttime_new(context, pa_rtclock_now() + timingInterval, timingTimerFired,
                                            Unmanaged.passUnretained(self).toOpaque())
    }

    /// Back to the quick interval after a change the next update should see
    /// soon (uncork, cork, flush): the timer fires within 100 ms.
    func quickenTimingTimer() {
        guard let context, let timer = timingTimer, timingInterval != Self.quickTiming else { return }
        timingInterval = Self.quickTiming
        pa_context_rttime_restart(context, timer, pa_rtclock_now() + timingInterval)
    }

    func stopTimingTimer() {
        guard let timer = timingTimer else { return }
        pa_threaded_mainloop_get_api(mainloop).pointee.time_free(timer)
        timingTimer = nil
    }

    /// Requests a timing update (the position interpolates between them) and
    /// un-starves the stream: when the callback found the ring empty and
    /// wrote nothing (before the first frames, after an underrun), libpulse
    /// does not ask again until the server consumes something, and the
    /// server waits for data. Every 100 ms while the stream is short of
    /// audio or just changed; otherwise the interval doubles up to 1 s, so a
    /// steady stream costs the main loop and the server one round trip a
    /// second instead of ten. Same thread as the write callback, lock held.
    func timingTimerDidFire() {
        guard let stream, let context, let timer = timingTimer else { return }
        var starved = false
        if pa_stream_get_state(stream) == PA_STREAM_READY {
            if let operation = pa_stream_update_timing_info(stream, nil, nil) { pa_operation_unref(operation) }
            var writable = pa_stream_writable_size(stream)
            if let rt, writable > 0, writable != Int.max, rt.ring.readableFrames > 0 {
                rt.fill(stream, writable)
                writable = pa_stream_writable_size(stream)
            }
            // Room for a quarter of the buffer left unfilled: the ring is dry.
            starved = writable != Int.max && writable >= Int(grantedTargetLength / 4) || rt?.refilling == true
        }
        // A drain waits on the main loop's condition for the ring to empty
        // and for the server: look again at least at every tick (the last
        // callback may have emptied the ring without a word, and a server
        // may never finish a drain: `drain` gives up at its deadline).
        if rt?.draining == true { pa_threaded_mainloop_signal(mainloop, 0) }
        timingInterval = starved ? Self.quickTiming : min(timingInterval * 2, slowestTiming)
        // A start at a time waits for a report that places its start frame.
        if let rt, rt.holdsForStart, rt.startFrame == .max { timingInterval = startTimingInterval }
        pa_context_rttime_restart(context, timer, pa_rtclock_now() + timingInterval)
    }

    /// The timing timer's interval, µs: quick while starved or just changed, at most the slowest.
    static var quickTiming: pa_usec_t { 100_000 }
    /// On PipeWire a quarter of that: pipewire-pulse's answers are each up to
    /// a graph cycle behind, and the position is carried from the best of
    /// the last eight (`ReadIndexLine`): 2 s of them, so that a cycle changed
    /// by another client is followed soon, and an answer from just after a
    /// cycle began is among them.
    var slowestTiming: pa_usec_t { serverIsPipeWire ? Self.slowestTimingOnPipeWire : 1_000_000 }
    static var slowestTimingOnPipeWire: pa_usec_t { 250_000 }

    func teardownContext() {
        guard let context else { return }
        pa_context_set_state_callback(context, nil, nil)
        pa_context_disconnect(context)
        pa_context_unref(context)
        self.context = nil
    }

    static func clampedLatency(_ latency: Double) -> Double { min(max(latency, 0.01), 2) }

    /// Target latencies from this one on (seconds) set minreq to a quarter of the buffer.
    static let longLatency = 0.2
}
