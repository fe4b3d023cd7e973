// PulseAudioOutputAdapter: the stream's sink input as the server has it —
// specs/realtime.md §PulseAudioOutputAdapter, §PipeWire
//
// The player's volume on its sink input (set, read back, defended against a
// session manager's restore for a short window), and the graph delay a
// PipeWire server leaves out of the latency it reports. Main loop lock held
// throughout (control threads, or the main loop thread in callbacks).
import CPulseAudio
import HarmoniaCore

extension PulseAudioOutputAdapter {
    /// Sets the current stream's sink input to `volume`, if the stream is
    /// ready (a stream still connecting gets it once ready); `waiting`, until
    /// the server has applied it. Main loop lock held.
    func applyServerVolume(waiting: Bool = false) {
        guard let context, let stream, pa_stream_get_state(stream) == PA_STREAM_READY else { return }
        var levels = serverVolume()
        let operation = pa_context_set_sink_input_volume(context, pa_stream_get_index(stream), &levels,
                                                          waiting ? contextOperationDone : nil,
                                                          waiting ? Unmanaged.passUnretained(self).toOpaque() : nil)
        if waiting { wait(for: operation) } else if let operation { pa_operation_unref(operation) }
    }

    /// On PipeWire, before a stream connects: makes `levels` the volume
    /// WirePlumber's restore-stream will set on it. WirePlumber sets the last
    /// volume saved for the application (`Output/Audio:application.name:…`)
    /// on every new stream node, asynchronously, after the stream connected
    /// at its own volume; under load that landed after the first graph
    /// cycles, which then played at the previous stream's gain (512 to 7,680
    /// frames; specs/realtime.md §PipeWire (through pipewire-pulse)). pipewire-pulse maps the
    /// stream-restore extension's write onto WirePlumber's `route-settings`
    /// metadata, which updates that saved entry; the write is acknowledged
    /// after it is sent, on the same connection that later creates the
    /// stream's node, so WirePlumber has the entry before it sees the node.
    /// The entry is the one WirePlumber would save as soon as the stream
    /// plays at `levels` anyway; the target sink saved with it is kept.
    /// Not on PulseAudio: module-stream-restore there leaves a volume given
    /// at connect alone, and a write would drop the saved sink. Waits at most
    /// `serverAnswerDeadline`. Main loop lock held.
    func presetRestoredVolume(_ levels: pa_cvolume, channelMap: pa_channel_map) {
        guard serverIsPipeWire, let context else { return }
        "sink-input-by-application-name:\(options.applicationName)".withCString { name in
            var entry = pa_ext_stream_restore_info(name: name, channel_map: channelMap, volume: levels, device: nil, mute: 0)
            wait(for: pa_ext_stream_restore_write(context, PA_UPDATE_REPLACE, &entry, 1, 0, contextOperationDone,
                                                  Unmanaged.passUnretained(self).toOpaque()),
                 until: pa_rtclock_now() + Self.serverAnswerDeadline)
        }
    }

    /// How long a question the stream can do without (server info, the
    /// restore entry) waits for the server's answer, µs.
    static var serverAnswerDeadline: pa_usec_t { 1_000_000 }

    /// A sink input changed on the server (main loop thread): within the
    /// guard window after our stream opened, read its volume back.
    func serverObjectDidChange(_ event: pa_subscription_event_type_t, index: UInt32) {
        guard let context, let stream, pa_stream_get_state(stream) == PA_STREAM_READY,
              index == pa_stream_get_index(stream),
              event.rawValue & PA_SUBSCRIPTION_EVENT_FACILITY_MASK.rawValue == PA_SUBSCRIPTION_EVENT_SINK_INPUT.rawValue,
              event.rawValue & PA_SUBSCRIPTION_EVENT_TYPE_MASK.rawValue == PA_SUBSCRIPTION_EVENT_CHANGE.rawValue,
              pa_rtclock_now() < volumeGuardDeadline else { return }
        if let operation = pa_context_get_sink_input_info(context, index, sinkInputInfoReceived,
                                                          Unmanaged.passUnretained(self).toOpaque()) {
            pa_operation_unref(operation)
        }
    }

    /// Our stream's sink input as the server has it (main loop thread).
    /// Its volume not the player's (a session manager restored another,
    /// within the guard window) → set the player's again; after the window
    /// a change is the user's (a desktop mixer) and stays. Its graph delay
    /// (PipeWire) → `graphDelayFrames`.
    func sinkInputIs(_ info: pa_sink_input_info) {
        guard let stream, info.index == pa_stream_get_index(stream) else { return }
        graphDelayFrames = Self.graphDelay(nodeLatency: info.proplist.flatMap { pa_proplist_gets($0, "node.latency") }
                                                          .map { String(cString: $0) },
                                           sampleRate: sampleRate)
        rt?.drainsWithSilence = graphDelayFrames > 0
        guard pa_rtclock_now() < volumeGuardDeadline else { return }
        var wanted = serverVolume()
        var actual = info.volume
        if pa_cvolume_equal(&wanted, &actual) == 0 {
            volumeRestoreSeen = true
            applyServerVolume()
        }
    }

    /// The frames a PipeWire graph holds between pipewire-pulse taking
    /// audio from the stream and the sink playing it, which pipewire-pulse
    /// 0.3 leaves out of the latency it reports (sink latency 0 on every
    /// update; the read index advances a whole graph cycle at its start):
    /// one cycle, the stream's `node.latency` ("N/RATE") capped at
    /// PipeWire's default largest quantum (2048 at 48 kHz). 0 on PulseAudio,
    /// which sets no `node.latency` and reports its sinks' latency itself.
    /// Outside numbers checked: a missing, malformed, zero or absurd value is 0.
    package static func graphDelay(nodeLatency: String?, sampleRate: Double) -> Int64 {
        guard let nodeLatency, sampleRate > 0 else { return 0 }
        let parts = nodeLatency.split(separator: "/")
        guard parts.count == 2, let frames = Double(parts[0]), let rate = Double(parts[1]),
              frames.isFinite, rate.isFinite, frames > 0, rate >= 1000, rate <= 768_000 else { return 0 }
        let seconds = min(frames / rate, 2048 / 48000)
        return Int64((seconds * sampleRate).rounded())
    }

    /// How long after a stream opens a volume the server sets on it is
    /// taken for a session manager's restore and overridden, µs.
    static var volumeGuardWindow: pa_usec_t { 2_000_000 }

    /// `volume` for every channel of the stream, on the server's scale.
    func serverVolume() -> pa_cvolume {
        var levels = pa_cvolume()
        pa_cvolume_set(&levels, UInt32(max(channels, 1)), pa_sw_volume_from_linear(Double(volume)))
        return levels
    }
}
