// Pause, flush, volume and server loss through a real PulseAudio server,
// checked on what the sink actually played: specs/realtime.md §PulseAudioOutputAdapter.
import Foundation
import HarmoniaCore
@testable import HarmoniaPulseAudio
import HarmoniaTestSupport
import Testing

/// Waits (device time passes; there is no event to await) until the output
/// has played `frames`, or fails after `seconds`.
func waitUntilHeard(_ output: PulseAudioOutputAdapter, _ frames: Int64, seconds: Double = 10) throws {
    let clock = MonotonicClockAdapter()
    let deadline = clock.now() + UInt64(seconds * 1e9)
    while output.framesPlayed < frames {
        guard clock.now() < deadline else { throw FixtureError("played only \(output.framesPlayed) of \(frames) frames in \(seconds) s") }
        clock.sleep(nanoseconds: 2_000_000)
    }
}

/// Runs of non-silent frames in a recording: (start, length).
func loudRuns(_ recording: [Float], channels: Int) -> [(start: Int, count: Int)] {
    var runs: [(Int, Int)] = []
    var start = -1
    for frame in 0..<(recording.count / channels) {
        let loud = (0..<channels).contains { recording[frame * channels + $0] != 0 }
        if loud && start < 0 { start = frame }
        if !loud && start >= 0 { runs.append((start, frame - start)); start = -1 }
    }
    if start >= 0 { runs.append((start, recording.count / channels - start)) }
    return runs
}

/// Whether `played` is `expected` at `gain` as the server applies a stream
/// volume: its volume steps are 1/65536 of the cube root of the gain, so the
/// gain it applies is within 0.01 % of the one asked for.
func atServerGain(_ played: Float, _ expected: Float, _ gain: Float) -> Bool {
    abs(played - expected * gain) <= abs(expected * gain) * 1e-4
}

/// A test signal with no zero samples (so silence in a recording is a gap,
/// never the signal), frame i's value encoding i.
func counterSignal(frames: Int, channels: Int) -> [Float] {
    (0..<(frames * channels)).map { i in Float(1 + (i / channels) % 30000) / 32768 * (i % channels == 0 ? 1 : -1) }
}

extension PulseAudioTests {
@Suite("PulseAudioOutputAdapter behaviour")
struct PulseAudioBehaviourTests {
    let rate = 48000
    /// The default buffer (500 ms): interaction must not wait for it.
    let latency = PulseAudioOutputAdapter.Options().latency
    /// How soon pause, flush and volume are heard, in seconds: the
    /// sink's own latency, a tenth of the buffer — on PipeWire two graph
    /// cycles (2048 frames, 42.7 ms, each with this buffer) and the round
    /// trip: the position leaves out the cycle the graph holds, and the
    /// cycle it took before the call arrived still sounds. Measured in 22
    /// runs: after pause 528 to 2,613 frames, after flush 1,433 to 3,826
    /// (once above one cycle and the round trip, 75 ms, the bound that held
    /// while the tests' recorder made the cycle 512 frames).
    let quick = PulseTestServer.isPipeWire ? 0.095 : 0.05

    /// A counter signal of `frames` queued on an output that records through
    /// a recording sink, playing, half a second of it heard.
    func playingCounterSignal(frames: Int) throws -> ([Float], SinkRecorder, PulseAudioOutputAdapter) {
        let signal = counterSignal(frames: frames, channels: 2)
        let recorder = try SinkRecorder(rate: rate, channels: 2)
        let output = PulseAudioOutputAdapter(options: pulseOptions(device: recorder.sinkName, latency: latency))
        try output.configure(sampleRate: Double(rate), channels: 2)
        #expect(output.write(signal, frameCount: frames) == frames)
        try output.start()
        try waitUntilHeard(output, Int64(rate / 2))
        return (signal, recorder, output)
    }

    @Test("pause: silent within one buffer; resume: the exact next frame, none lost or repeated")
    func pauseResume() throws {
        try retriedAcrossLateGraphCycles("pauseResume") { try pauseResumeRun() }
    }

    private func pauseResumeRun() throws {
        let frames = rate * 2
        let (signal, recorder, output) = try playingCounterSignal(frames: frames)
        output.pause()
        let heardAtPause = output.framesPlayed
        MonotonicClockAdapter().sleep(nanoseconds: 200_000_000)      // 200 ms of pause
        #expect(output.framesPlayed - heardAtPause <= Int64(Double(rate) * quick))
        output.resume()
        output.drain()
        #expect(output.framesPlayed == Int64(frames))
        output.stop()
        let recording = try recorder.finish()
        let runs = loudRuns(recording, channels: 2).filter { $0.count > 1 }
        // One gap is the pause; any other must be an underrun the output
        // counted (a loaded machine at a small buffer), never a silent loss.
        let extraGaps = runs.count - 2
        #expect(runs.count >= 2 && extraGaps <= output.underrunCount,
                "one gap: the pause (runs: \(runs.map(\.count)), underruns counted: \(output.underrunCount))")
        guard runs.count >= 2 else { return }
        if extraGaps > 0 { print("[pause] \(extraGaps) gap(s) besides the pause, \(output.underrunCount) underrun(s) counted") }
        // Joined, the runs are the signal, frame for frame.
        let played = runs.flatMap { Array(recording[($0.start * 2)..<(($0.start + $0.count) * 2)]) }
        #expect(played.count == signal.count)
        #expect(played.elementsEqual(signal), "no frame lost or repeated across pause/resume")
        // The pause is the longest gap; silent within one output buffer of pause().
        let gaps = zip(runs, runs.dropFirst()).map { $1.start - $0.start - $0.count }
        let pauseIndex = gaps.indices.max { gaps[$0] < gaps[$1] } ?? 0
        let beforePause = runs[...pauseIndex].reduce(0) { $0 + $1.count }
        let afterPause = Int64(beforePause) - heardAtPause
        print("[pause] \(afterPause) frames sounded after pause() returned (buffer: \(Int(Double(rate) * quick)))")
        #expect(afterPause <= Int64(Double(rate) * quick))
        #expect(gaps[pauseIndex] >= rate / 10, "the pause lasted")
    }

    @Test("flush drops what is queued; what follows plays right after")
    func flush() throws {
        try retriedAcrossLateGraphCycles("flush") { try flushRun() }
    }

    private func flushRun() throws {
        let (first, recorder, output) = try playingCounterSignal(frames: rate * 2)
        let second = first.map { -$0 }
        let clock = MonotonicClockAdapter()
        let began = clock.now()
        output.flush()
        let heardAtFlush = output.framesPlayed
        #expect(output.write(second, frameCount: rate / 2) == rate / 2)
        let callFrames = Int(Double(clock.now() - began) * Double(rate) / 1e9)
        output.drain()
        let finalPlayed = output.framesPlayed
        output.stop()
        let recording = try recorder.finish()
        // The recording: a prefix of `first`, then all of `second`'s first half second.
        let start = try #require(SinkRecorder.offset(of: first, in: recording, channels: 2))
        var index = start * 2, fromFirst = 0
        while index < recording.count, fromFirst < first.count, recording[index] == first[fromFirst] { index += 1; fromFirst += 1 }
        let playedOfFirst = fromFirst / 2
        print("[flush] \(playedOfFirst) frames of the first signal played; \(Int64(playedOfFirst) - heardAtFlush) after flush()")
        #expect(playedOfFirst < rate * 2, "the rest of the first signal was dropped")
        #expect(Int64(playedOfFirst) - heardAtFlush <= Int64(Double(rate) * quick), "flush takes effect within one buffer")
        let gap = recording[index...].prefix { $0 == 0 }.count / 2
        let rest = Array(recording[index...].drop { $0 == 0 }.prefix(second.count / 4))
        print("[flush] \(gap) frames of silence between the old audio and the new (flush() and write() took \(callFrames) frames)")
        // No buffer of silence is queued ahead of the new audio: the gap is
        // the time the calls took plus one block of the sink's — 10 ms on
        // PulseAudio; on PipeWire a graph cycle (2048 frames at this buffer),
        // which plays silent whole when the new audio reaches pipewire-pulse
        // just after the cycle took its data (seen once under ThreadSanitizer).
        let block = PulseTestServer.isPipeWire ? 2048 : rate / 100
        #expect(gap <= callFrames + block, "the new audio sounds as soon as it is written")
        #expect(rest.elementsEqual(second.prefix(rest.count)), "the new audio follows, from its first frame")
        #expect(rest.count == second.count / 4)
        // Heard = the position at flush + all of the second: flushed frames never count
        // (the few of the first that still sounded after flush() are not counted either:
        // a position read then must not move until the new audio sounds).
        #expect(finalPlayed == heardAtFlush + Int64(rate / 2))
        // The position read at flush is interpolated between timing answers:
        // it may run ahead of what had sounded by up to its stated accuracy
        // (10 ms, specs/realtime.md; a run under load read 2 frames ahead).
        #expect(Int64(playedOfFirst) >= heardAtFlush - Int64(rate / 100))
    }

    @Test("timing updates: every 100 ms while filling, backing off to 1 s (PipeWire: 250 ms) while full, quick again after a pause")
    func timingBackoff() throws {
        let frames = rate * 4
        let (_, recorder, output) = try playingCounterSignal(frames: frames)
        defer { output.stop(); _ = try? recorder.finish() }
        // The stream is full (4 s queued, a 0.5 s buffer): 0.1, 0.2, 0.4, 0.8, 1 s
        // (PipeWire: 0.1, 0.2, 0.25 s — the position is carried from the best
        // of the recent answers there, ReadIndexLine).
        let slowest = PulseTestServer.isPipeWire ? 0.25 : 1
        let clock = MonotonicClockAdapter()
        let deadline = clock.now() + 3_000_000_000
        while output.timingUpdateInterval != slowest, clock.now() < deadline { clock.sleep(nanoseconds: 10_000_000) }
        #expect(output.timingUpdateInterval == slowest, "backed off to \(slowest) s while full (at \(output.timingUpdateInterval ?? -1) s)")
        output.pause()
        #expect(output.timingUpdateInterval == 0.1, "a cork brings the quick interval back")
        output.resume()
        // The position still follows the sink at the slow interval: the rest plays out, every frame counted.
        output.drain()
        #expect(output.framesPlayed == Int64(frames))
    }

    @Test("volume set before configure, and kept across a reconfigure, applies from the first frame")
    func volumeBeforeConfigure() throws {
        try retriedAcrossLateGraphCycles("volumeBeforeConfigure") { try volumeBeforeConfigureRun() }
    }

    private func volumeBeforeConfigureRun() throws {
        let frames = rate / 2
        let signal = counterSignal(frames: frames, channels: 2)
        let recorder = try SinkRecorder(rate: rate, channels: 2)
        let output = PulseAudioOutputAdapter(options: pulseOptions(device: recorder.sinkName, latency: latency))
        output.setVolume(0.5)
        for _ in 0..<2 {  // the second configure opens a new stream: the gain stays
            try output.configure(sampleRate: Double(rate), channels: 2)
            #expect(output.write(signal, frameCount: frames) == frames)
            try output.start()
            output.drain()
        }
        output.stop()
        try expectStreams(in: recorder.finish(), playing: signal, atGains: [0.5, 0.5])
    }

    /// The recording holds one whole, separate run of `signal` per gain, each
    /// at its gain from its first frame to its last.
    func expectStreams(in recording: [Float], playing signal: [Float], atGains gains: [Float]) {
        let frames = signal.count / 2
        let runs = loudRuns(recording, channels: 2).filter { $0.count > 1 }
        #expect(runs.map(\.count) == Array(repeating: frames, count: gains.count), "each stream played whole, apart")
        for (index, (run, gain)) in zip(runs, gains).enumerated() where run.count == frames {
            let played = recording[(run.start * 2)..<((run.start + run.count) * 2)]
            let mismatched = zip(played, signal).filter { !atServerGain($0, $1, gain) }.count
            let firstGain = played.first.map { $0 / signal[0] } ?? 0
            #expect(mismatched == 0, "stream \(index) at \(gain): samples at another gain (its first at \(firstGain))")
        }
    }

    /// A new player (a new connection and stream each time, as a new process
    /// has) at another volume than the last: on PipeWire WirePlumber restores
    /// the last volume saved for the application onto each new stream, after
    /// it connected; the stream's own must be heard from its first frame.
    @Test("streams opened one after another at other volumes: each at its own gain from its first frame")
    func volumeAcrossStreams() throws {
        try retriedAcrossLateGraphCycles("volumeAcrossStreams") { try volumeAcrossStreamsRun() }
    }

    private func volumeAcrossStreamsRun() throws {
        let frames = rate / 4
        let signal = counterSignal(frames: frames, channels: 2)
        let gains: [Float] = [1, 0.5, 1, 0.25, 1, 0.5, 0.25, 1]
        let recorder = try SinkRecorder(rate: rate, channels: 2)
        for gain in gains {
            let output = PulseAudioOutputAdapter(options: pulseOptions(device: recorder.sinkName, latency: latency))
            output.setVolume(gain)
            try output.configure(sampleRate: Double(rate), channels: 2)
            #expect(output.write(signal, frameCount: frames) == frames)
            try output.start()
            output.drain()
            output.stop()
        }
        try expectStreams(in: recorder.finish(), playing: signal, atGains: gains)
    }

    @Test("volume: the server's stream volume is heard within the sink's latency, however much is queued")
    func volume() throws {
        try retriedAcrossLateGraphCycles("volume") { try volumeRun() }
    }

    private func volumeRun() throws {
        let frames = rate * 2
        let (signal, recorder, output) = try playingCounterSignal(frames: frames)
        // The position just before and just after the call: a test thread
        // held up between the call and a read (seen: 0.38 s on 2 busy cores)
        // must not move "before the call" past frames the call changed.
        let heardBeforeCall = Int(output.framesPlayed)
        output.setVolume(0.5)
        let heardAtCall = Int(output.framesPlayed)
        output.drain()
        output.stop()
        let recording = try recorder.finish()
        let start = try #require(SinkRecorder.offset(of: signal, in: recording, channels: 2))
        let played = Array(recording[(start * 2)..<min(recording.count, (start + frames) * 2)])
        #expect(played.count == signal.count)
        guard played.count == signal.count else { return }
        // Find where the gain became exactly 0.5 for good.
        var settled = frames
        while settled > 0, atServerGain(played[(settled - 1) * 2], signal[(settled - 1) * 2], 0.5) { settled -= 1 }
        print("[volume] gain 0.5 from frame \(settled); setVolume at heard frame \(heardAtCall) (\(heardBeforeCall) before it; latency \(latency) s)")
        #expect(settled - heardAtCall <= Int(Double(rate) * quick), "audible within one buffer")
        // Unchanged before the call, but for the last 10 ms the position read
        // then may run ahead by (its accuracy, specs/realtime.md; a run under
        // ThreadSanitizer on PulseAudio, whose volume change rewinds into what
        // the sink rendered, saw 59 frames).
        let unchanged = max(0, heardBeforeCall - rate / 100)
        let changedBefore = zip(played.prefix(unchanged * 2), signal).filter { $0 != $1 }.count
        #expect(changedBefore == 0, "unchanged before the call (samples changed, of \(unchanged * 2))")
        #expect(settled < frames / 2 + rate / 5)
    }

    @Test("an underrun: silence while the ring is dry, counted and reported; then the audio goes on, nothing lost")
    func underrunRecovery() async throws {
        // Under ThreadSanitizer on PipeWire one run's recording lost frames (the stop of 2026-11-29).
        try await retriedAcrossLateGraphCyclesAsync("underrunRecovery") { try await underrunRecoveryRun() }
    }

    private func underrunRecoveryRun() async throws {
        let signal = counterSignal(frames: rate, channels: 2)
        let recorder = try SinkRecorder(rate: rate, channels: 2)
        let output = PulseAudioOutputAdapter(options: pulseOptions(device: recorder.sinkName, latency: latency))
        try output.configure(sampleRate: Double(rate), channels: 2)
        let half = rate / 2
        #expect(output.write(signal, frameCount: half) == half)
        let reported = Task { () -> Int? in
            for await event in output.events { if case .underrun(let count) = event { return count } }
            return nil
        }
        try output.start()
        try waitUntilHeard(output, Int64(half))                   // the ring ran dry: silence now
        MonotonicClockAdapter().sleep(nanoseconds: 300_000_000)
        // One underrun: the ring's. On a loaded machine a late callback can
        // starve the server too, before or after; each such gap is counted
        // and reported as well (the server's underflow notice), so the test
        // asks for at least one, and below for no gap that is not counted.
        #expect(output.underrunCount >= 1)
        #expect(await reported.value == 1, "reported as an event, off the real-time thread")
        #expect(output.framesPlayed == Int64(half), "silence is not counted as heard")
        let rest = Array(signal[(half * 2)...])
        #expect(output.write(rest, frameCount: half) == half)
        output.drain()
        #expect(output.framesPlayed == Int64(rate))
        output.stop()
        let recording = try recorder.finish()
        let runs = loudRuns(recording, channels: 2).filter { $0.count > 1 }
        let counted = output.underrunCount
        #expect(runs.count >= 2, "a gap where the ring ran dry")
        #expect(runs.count <= counted + 1, "every gap counted: \(runs.count - 1) gaps, \(counted) underruns")
        let played = runs.flatMap { recording[($0.start * 2)..<(($0.start + $0.count) * 2)] }
        #expect(played.elementsEqual(signal), "every frame, once, in order, around the gaps")
    }

    @Test("started before any audio: silence until the first frames, then all of them")
    func startedEmpty() throws {
        try retriedAcrossLateGraphCycles("startedEmpty") { try startedEmptyRun() }
    }

    private func startedEmptyRun() throws {
        let signal = counterSignal(frames: rate / 2, channels: 2)
        let recorder = try SinkRecorder(rate: rate, channels: 2)
        let output = PulseAudioOutputAdapter(options: pulseOptions(device: recorder.sinkName, latency: latency))
        try output.configure(sampleRate: Double(rate), channels: 2)
        try output.start()                                         // nothing written yet
        MonotonicClockAdapter().sleep(nanoseconds: 100_000_000)
        #expect(output.write(signal, frameCount: rate / 2) == rate / 2)
        output.drain()
        #expect(output.framesPlayed == Int64(rate / 2))
        #expect(output.underrunCount == 0, "silence before the first frame is not an underrun")
        output.stop()
        let recording = try recorder.finish()
        let start = SinkRecorder.offset(of: signal, in: recording, channels: 2)
        #expect(start.map { recording[($0 * 2)...].starts(with: signal) } == true)
    }

    /// A network stream starts its output before the first frames are
    /// decoded. The server's first request found the ring empty and it asks
    /// again only once it has played something, so the first frames must go
    /// to it as they are written, not at the timing timer's next tick (which
    /// made an http URL's first sound up to 100 ms late, one start in two).
    @Test("started before any audio: the first frames reach the server as they are written")
    func startedEmptyPushesFirstFrames() throws {
        let output = PulseAudioOutputAdapter(options: pulseOptions(latency: latency))  // the default sink
        try output.configure(sampleRate: Double(rate), channels: 2)
        try output.start()                                         // nothing written yet
        let frames = rate / 10
        let signal = counterSignal(frames: frames, channels: 2)
        #expect(output.write(signal, frameCount: frames) == frames)
        let sent = output.withMainloopLock { output.rt?.streamFramesWritten ?? -1 }
        #expect(sent == Int64(frames), "handed to the server by write() itself")
        output.drain()
        #expect(output.framesPlayed == Int64(frames))
        output.stop()
    }

    @Test("server lost mid-play: an error event, reconnection, and every frame heard in the end")
    func serverLost() throws {
        let frames = rate * 3
        let signal = counterSignal(frames: frames, channels: 2)
        let output = PulseAudioOutputAdapter(options: pulseOptions(latency: latency))  // the default sink
        try output.configure(sampleRate: Double(rate), channels: 2)
        #expect(output.write(signal, frameCount: frames) == frames)
        try output.start()
        try waitUntilHeard(output, Int64(rate / 2))
        // Every event until the reconnection, or 20 s (the test fails then, rather than hang).
        let seenEvents = LockedValue<[AudioOutputEvent]>([])
        let reconnectedSignal = DispatchSemaphore(value: 0)
        output.observe { event in
            seenEvents.withLock { $0.append(event) }
            if case .reconnected = event { reconnectedSignal.signal() }
        }
        try PulseTestServer.control("kill")
        try PulseTestServer.control("start")
        let backInTime = reconnectedSignal.wait(timeout: .now() + 20) == .success
        #expect(backInTime, "reconnected within 20 s of the server's restart")
        let seen = seenEvents.withLock { $0 }
        #expect(seen.contains { if case .error(let e) = $0 { e.category == .ioError } else { false } })
        let reconnected = seen.compactMap { if case .reconnected(let frame) = $0 { frame } else { nil } }.first
        #expect(reconnected != nil)
        print("[server lost] events: \(seen); resumed from heard frame \(reconnected ?? -1)")
        guard backInTime else { output.stop(); return }
        output.drain()
        #expect(output.framesPlayed == Int64(frames), "everything written was heard, across the restart")
        output.stop()
    }
}
}
