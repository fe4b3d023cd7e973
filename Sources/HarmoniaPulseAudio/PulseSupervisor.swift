// PulseAudioOutputAdapter: the supervisor — specs/realtime.md §PulseAudioOutputAdapter
//
// One thread per adapter (harmonia.pulsesv), started by the first configure:
// it turns what the real-time callback only counts (underruns) and what the
// main loop only records (the server lost) into events, and reconnects with
// exponential backoff. It sleeps on the main loop's condition, holding the
// main loop's lock only while it looks; never on the real-time path.
import CPulseAudio
import Foundation
import HarmoniaCore

extension PulseAudioOutputAdapter {

    func startSupervisorIfNeeded() {
        guard !supervisorRunning else { return }
        supervisorRunning = true
        let thread = Thread { [weak self] in nameCurrentThread("harmonia.pulsesv"); self?.supervise() }
        thread.name = "harmonia.pulse-supervisor"
        thread.start()
    }

    func supervise() {
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
    func reconnect() {
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
                hub.emit(.reconnected(frame: continuation.heard(streamPlayed: heard)))
                return
            } catch {
                teardownStream()
                teardownContext()
                backoff = min(backoff * 2, 5_000_000_000)
            }
        }
    }
}
