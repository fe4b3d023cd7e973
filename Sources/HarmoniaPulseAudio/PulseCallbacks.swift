// PulseAudioOutputAdapter: the C callbacks — specs/realtime.md §PulseAudioOutputAdapter
//
// libpulse calls these on its main loop thread with the main loop's lock
// held. Each only records and signals (the adapter's methods), except the
// write callback, the real-time path, which is `PulseRealTimeState.fill`.
import CPulseAudio
import Foundation
import HarmoniaCore

// C callbacks: userdata is the adapter (or the real-time state), unretained;
// the adapter clears every callback before it releases what they point to.

let contextStateChanged: pa_context_notify_cb_t = { _, userdata in
    Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue().contextStateDidChange()
}

let streamStateChanged: pa_stream_notify_cb_t = { _, userdata in
    Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue().streamStateDidChange()
}

let streamTimingUpdated: pa_stream_notify_cb_t = { _, userdata in
    Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue().timingDidUpdate()
}

let timingTimerFired: pa_time_event_cb_t = { _, _, _, userdata in
    Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue().timingTimerDidFire()
}

let operationDone: pa_stream_success_cb_t = { _, _, userdata in
    Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue().operationDidFinish()
}

let contextEventReceived: pa_context_subscribe_cb_t = { _, event, index, userdata in
    Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue().serverObjectDidChange(event, index: index)
}

let sinkInputInfoReceived: pa_sink_input_info_cb_t = { _, info, _, userdata in
    let adapter = Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue()
    if let info { adapter.sinkInputIs(info.pointee) }
    adapter.operationDidFinish()
}

let contextOperationDone: pa_context_success_cb_t = { _, _, userdata in
    Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue().operationDidFinish()
}

let serverInfoReceived: pa_server_info_cb_t = { _, info, userdata in
    let adapter = Unmanaged<PulseAudioOutputAdapter>.fromOpaque(userdata!).takeUnretainedValue()
    if let name = info?.pointee.server_name { adapter.serverIsPipeWire = strstr(name, "PipeWire") != nil }
    adapter.operationDidFinish()
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

let sinkInfoReceived: pa_sink_info_cb_t = { _, info, eol, userdata in
    let context = Unmanaged<LookupContext>.fromOpaque(userdata!).takeUnretainedValue()
    if info != nil { context.result.exists = true }
    if eol != 0 || info != nil { context.adapter.operationDidFinish() }
}

/// The server played silence because the stream's buffer ran dry (on
/// pipewire-pulse also when it held less than a graph cycle): counted as an
/// underrun. Runs where the write callback runs; real-time safe.
let streamUnderflowed: pa_stream_notify_cb_t = { _, userdata in
    Unmanaged<PulseRealTimeState>.fromOpaque(userdata!).takeUnretainedValue().serverRanDry()
}

/// The real-time callback: everything it does is in `PulseRealTimeState.fill`.
let streamWriteRequested: pa_stream_request_cb_t = { stream, bytes, userdata in
    let probe = pulseWriteCallbackProbe
    probe?(1)
    Unmanaged<PulseRealTimeState>.fromOpaque(userdata!).takeUnretainedValue().fill(stream!, bytes)
    probe?(0)
}
