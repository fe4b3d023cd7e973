// DefaultPlaybackService through a real PulseAudio server (issue 4's
// requirements that need a device): pause/resume, seek, the gapless join and
// the heard position, checked on what the sink actually played. A recording sink
// records the sink's output (float32, so samples are exact); the decoder is a
// counter, so every recorded frame names its source frame.
import Foundation
import HarmoniaCore
import HarmoniaPulseAudio
import HarmoniaTestSupport
import Testing

/// `CounterDecoder` scaled by 2^-24: frame i of a source is (base + i) / 2^24,
/// exact in float32 for counts < 2^24 and well inside [-1, 1], so the sink's
/// float path carries it untouched and the recording names every frame.
final class ScaledCounterDecoder: DecoderPort, @unchecked Sendable {
    static let scale: Float = 1.0 / 16_777_216
    let counter: CounterDecoder

    init(_ sources: [String: CounterDecoder.Source]) { counter = CounterDecoder(sources) }

    func open(url: String) throws(CoreError) -> DecodeHandle { try counter.open(url: url) }
    func info(_ handle: DecodeHandle) throws(CoreError) -> StreamInfo { try counter.info(handle) }
    func seek(_ handle: DecodeHandle, toFrame frame: Int64) throws(CoreError) { try counter.seek(handle, toFrame: frame) }
    func position(_ handle: DecodeHandle) throws(CoreError) -> Int64 { try counter.position(handle) }
    func close(_ handle: DecodeHandle) { counter.close(handle) }

    func read(_ handle: DecodeHandle, into buffer: UnsafeMutablePointer<Float>, maxFrames: Int) throws(CoreError) -> Int {
        let channels = try counter.info(handle).channels
        let frames = try counter.read(handle, into: buffer, maxFrames: maxFrames)
        for i in 0..<(frames * channels) { buffer[i] *= Self.scale }
        return frames
    }
}

/// One recorded non-silent frame: where it sits in the recording, and the
/// counter value it carries (the same on every channel, or nil).
struct CountedFrame: Equatable {
    let at: Int
    let value: Int?
}

/// The non-silent frames of a recording, as counter values.
func countedFrames(_ recording: [Float], channels: Int) -> [CountedFrame] {
    var frames: [CountedFrame] = []
    for frame in 0..<(recording.count / channels) {
        let samples = recording[(frame * channels)..<((frame + 1) * channels)]
        guard samples.contains(where: { $0 != 0 }) else { continue }
        let first = samples.first!
        let scaled = first / ScaledCounterDecoder.scale
        let value = Int(exactly: scaled)
        let exact = value != nil && samples.allSatisfy { $0 == first } && Float(value!) * ScaledCounterDecoder.scale == first
        frames.append(CountedFrame(at: frame, value: exact ? value : nil))
    }
    return frames
}

/// Where the recorded counter does not go up by exactly one: (index in
/// `frames`, value before, value after).
func breaks(_ frames: [CountedFrame]) -> [(index: Int, before: Int?, after: Int?)] {
    var found: [(Int, Int?, Int?)] = []
    for i in 1..<max(frames.count, 1) {
        let before = frames[i - 1].value, after = frames[i].value
        if before == nil || after == nil || after! != before! + 1 { found.append((i, before, after)) }
    }
    return found
}

/// Waits (device time passes; there is no event to await) until `condition`
/// holds, or fails after `seconds` saying what did not happen.
func waitUntil(_ what: String, seconds: Double = 5, _ condition: () -> Bool) throws {
    let clock = MonotonicClockAdapter()
    let deadline = clock.now() + UInt64(seconds * 1e9)
    while !condition() {
        guard clock.now() < deadline else { throw FixtureError("timed out after \(seconds) s waiting until \(what)") }
        clock.sleep(nanoseconds: 2_000_000)
    }
}

/// A playback service on the real PulseAudio output, recording through a
/// recording sink; every event is logged with the output's heard frames at that moment.
final class PulseServiceRig: @unchecked Sendable {
    static let rate = 48_000
    static let latency = 0.05
    let recorder: SinkRecorder
    let output: PulseAudioOutputAdapter
    let decoder: ScaledCounterDecoder
    let service: DefaultPlaybackService
    let clock = MonotonicClockAdapter()
    private let log = LockedValue<[LoggedEvent]>([])
    private let stopped = DispatchSemaphore(value: 0)

    struct LoggedEvent: Sendable {
        let event: PlaybackEvent
        /// `output.framesPlayed` when the event was sent.
        let heard: Int64
    }

    /// - Parameter latency: the output's buffer; the tests' 50 ms by default.
    /// - Parameter ringFrames: the output's smallest ring (it also holds the
    ///   buffer twice and the decode-ahead); the tests' 2^18 by default.
    init(_ sources: [String: CounterDecoder.Source], latency: Double = PulseServiceRig.latency, ringFrames: Int = 1 << 18,
         configuration: PlaybackConfiguration = PlaybackConfiguration()) throws {
        recorder = try SinkRecorder(rate: Self.rate, channels: 2)
        var options = pulseOptions(device: recorder.sinkName, latency: latency)
        options.ringFrames = ringFrames
        output = PulseAudioOutputAdapter(options: options)
        decoder = ScaledCounterDecoder(sources)
        service = DefaultPlaybackService(decoder: decoder, output: output, clock: clock, configuration: configuration)
        let output = self.output, log = self.log, stopped = self.stopped
        service.observe { event in
            // The output's own lock comes last in the service's lock order.
            log.withLock { $0.append(LoggedEvent(event: event, heard: output.framesPlayed)) }
            if event == .stateChanged(.stopped) { stopped.signal() }
        }
    }

    var events: [LoggedEvent] { log.withLock { $0 } }

    /// The output's buffer in frames: the latency the server granted.
    var bufferFrames: Int { Int((output.grantedLatency * Double(Self.rate)).rounded()) }

    /// Blocks until the service reports `stopped`, or fails after `seconds`.
    func waitUntilStopped(seconds: Double = 5) throws {
        guard stopped.wait(timeout: .now() + seconds) == .success else {
            throw FixtureError("playback did not stop within \(seconds) s (state \(service.state))")
        }
    }

    func waitUntilPosition(_ seconds: Double) throws {
        try waitUntil("the service's position reaches \(seconds) s") { service.currentTime() >= seconds }
    }

    /// Stops the service and the recorder; the recorded frames, as counters.
    func finish() throws -> [CountedFrame] {
        service.stop()
        return countedFrames(try recorder.finish(), channels: 2)
    }
}

extension PulseAudioTests {
@Suite("PlaybackServicePulse: DefaultPlaybackService on PulseAudio")
struct PlaybackServicePulseTests {
    let rate = PulseServiceRig.rate
    /// One period of the device on top of its buffer: the decode thread's
    /// 10 ms poll and the sink's block.
    let period = PulseServiceRig.rate / 100

    @Test("pause then play: silent within one buffer of pause(), no frame lost or repeated")
    func pauseResume() throws {
        try retriedAcrossLateGraphCycles("pauseResume") { try pauseResumeRun() }
    }

    private func pauseResumeRun() throws {
        let rig = try PulseServiceRig(["a": .init(frames: Int64(rate * 3), sampleRate: Double(rate), base: 1)])
        try rig.service.load(url: "a")
        try rig.service.play()
        try rig.waitUntilPosition(0.3)
        try rig.service.pause()
        let heardAtPause = rig.output.framesPlayed
        let positionAtPause = rig.service.currentTime()
        // 200 ms of pause, in the sink's own time.
        let recordedAtPause = rig.recorder.framesRecorded
        try waitUntil("200 ms of pause are recorded") { rig.recorder.framesRecorded >= recordedAtPause + rate / 5 }
        let positionAfterPause = rig.service.currentTime()
        let heardAfterPause = rig.output.framesPlayed
        #expect(rig.service.state == .paused)
        try rig.service.play()
        try rig.waitUntilPosition(positionAfterPause + 0.3)
        let buffer = rig.bufferFrames
        let frames = try rig.finish()

        // One count from the first frame to the last, silence removed.
        #expect(frames.first?.value == 1, "the first frame played is the source's first")
        let found = breaks(frames)
        #expect(found.isEmpty, "no frame lost or repeated: breaks \(found.prefix(5))")
        // One silent gap: the pause.
        let gaps = zip(frames, frames.dropFirst()).filter { $1.at - $0.at > 1 }
        #expect(gaps.count == 1, "one silent gap (the pause): \(gaps.map { ($0.1.at - $0.0.at - 1) })")
        guard let gap = gaps.first, let lastBefore = gap.0.value else { return }
        let silence = gap.1.at - gap.0.at - 1
        // Frames sounded after pause() returned: the last frame before the gap is source frame value − 1.
        let afterPause = Int64(lastBefore) - heardAtPause
        print("[service pause] \(afterPause) frames sounded after pause() returned (granted buffer \(buffer) frames); "
            + "position moved \(Int(((positionAfterPause - positionAtPause) * Double(rate)).rounded())) frames while paused "
            + "(heard \(heardAfterPause - heardAtPause)); pause silence \(silence) frames")
        #expect(afterPause <= Int64(buffer + period), "silent within one output buffer of pause()")
        #expect(afterPause >= -Int64(period), "the position at pause was not ahead of what sounded")
        #expect(heardAfterPause - heardAtPause <= Int64(buffer), "paused: the position stays put")
        #expect(silence >= rate / 10, "the pause lasted")
    }

    @Test("seek while playing: ≤ one buffer of old audio, no silence queued, then the count continues exactly from the sought frame")
    func seekWhilePlaying() throws {
        try retriedAcrossLateGraphCycles("seekWhilePlaying") { try seekWhilePlayingRun() }
    }

    private func seekWhilePlayingRun() throws {
        let rig = try PulseServiceRig(["a": .init(frames: Int64(rate * 3), sampleRate: Double(rate), base: 1)])
        try rig.service.load(url: "a")
        try rig.service.play()
        try rig.waitUntilPosition(0.3)
        let target = 2 * rate                                  // frame X = 96000 (2.0 s)
        let heardBefore = rig.output.framesPlayed
        let began = rig.clock.now()
        try rig.service.seek(to: Double(target) / Double(rate))
        let returned = rig.clock.now()
        let positionAfter = rig.service.currentTime()
        let readNanoseconds = rig.clock.now() - returned
        let seekNanoseconds = returned - began
        try rig.waitUntilPosition(Double(target) / Double(rate) + 0.3)
        let buffer = rig.bufferFrames
        let frames = try rig.finish()

        // Right after seek() the position is X; the new audio may already be
        // sounding, so it may have moved on by what the sink played while
        // currentTime() was read (one sink block plus the read's own time).
        let movedFrames = (positionAfter - Double(target) / Double(rate)) * Double(rate)
        let readFrames = Double(readNanoseconds) * Double(rate) / 1e9
        #expect(movedFrames >= 0 && movedFrames <= readFrames + Double(period),
                "currentTime() right after seek is X / rate, or just past it (got \(positionAfter); read took \(readFrames) frames)")
        #expect(frames.first?.value == 1)
        let found = breaks(frames)
        #expect(found.count == 1, "one discontinuity, at the seek: \(found.prefix(5))")
        guard let jump = found.first, let lastOld = jump.before else { return }
        // Value X + 1 is source frame X (base 1).
        #expect(jump.after == target + 1, "after the old audio the count continues from frame X exactly")
        let oldAfterSeek = Int64(lastOld) - heardBefore
        let silence = frames[jump.index].at - frames[jump.index - 1].at - 1
        let seekFrames = Int(Double(seekNanoseconds) * Double(rate) / 1e9)
        print("[service seek] \(oldAfterSeek) frames of old audio after the heard position at seek() "
            + "(the call took \(seekFrames) frames; granted buffer \(buffer)); \(silence) frames of silence before frame X; "
            + "currentTime() after seek: \(positionAfter) s (X / rate = \(Double(target) / Double(rate)))")
        #expect(oldAfterSeek <= Int64(buffer + period + seekFrames), "old audio after the seek: at most one buffer")
        // No buffer of silence ahead of the new audio: it sounds as soon as
        // seek() has written it (the call's own time plus one sink block).
        #expect(silence <= seekFrames + period, "the new audio follows at once, not after a buffer")
        #expect(frames.last.flatMap(\.value).map { $0 > target + rate / 5 } == true, "the count went on from X")
    }

    @Test("gapless join: one unbroken count across two tracks; track_started when the listener reaches the boundary")
    func gaplessJoin() throws {
        try retriedAcrossLateGraphCycles("gaplessJoin") { try gaplessJoinRun() }
    }

    private func gaplessJoinRun() throws {
        let lengthA = rate * 6 / 10, lengthB = rate * 6 / 10
        let rig = try PulseServiceRig([
            "a": .init(frames: Int64(lengthA), sampleRate: Double(rate), base: 1),
            "b": .init(frames: Int64(lengthB), sampleRate: Double(rate), base: Float(1 + lengthA)),
        ])
        try rig.service.load(url: "a")
        rig.service.enqueue([Track(url: "b")])
        try rig.service.play()
        try rig.waitUntilStopped()                             // the queue's natural end
        let buffer = rig.bufferFrames
        let events = rig.events
        let frames = try rig.finish()

        // Every frame of both tracks once, in order, with no silence between.
        #expect(frames.compactMap(\.value) == Array(1...(lengthA + lengthB)),
                "one unbroken count: \(frames.count) frames, first \(frames.first?.value ?? -1), last \(frames.last?.value ?? -1), breaks \(breaks(frames).prefix(5))")
        let join = frames.firstIndex { $0.value == lengthA + 1 }
        if let join, join > 0 {
            #expect(frames[join].at == frames[join - 1].at + 1, "no silence at the join")
        }
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $1.at == $0.at + 1 }, "no silence anywhere")

        // track_started for the second track, when the listener reached it.
        let started = events.first { if case .trackStarted(index: 1, _) = $0.event { true } else { false } }
        #expect(started != nil, "track_started for the second track")
        let endedA = events.firstIndex { if case .trackEnded(index: 0, _, reason: .finished) = $0.event { true } else { false } }
        let startedB = events.firstIndex { if case .trackStarted(index: 1, _) = $0.event { true } else { false } }
        #expect(endedA != nil && startedB != nil && endedA! < startedB!, "the first track ended (finished), then the second started")
        if let started {
            let late = started.heard - Int64(lengthA)
            print("[service gapless] track_started(1) sent with \(started.heard) frames heard: \(late) frames after the boundary "
                + "(granted buffer \(buffer)); recording \(frames.count) frames")
            #expect(late >= 0, "not before the listener reached the boundary")
            #expect(late <= Int64(buffer + period), "within one buffer of the boundary")
        }
        #expect(events.contains { if case .trackEnded(index: 1, _, reason: .finished) = $0.event { true } else { false } })
        #expect(rig.service.state == .stopped)
    }

    @Test("a crossfade from 48 into 44.1 kHz: the stream stays 48 kHz, a bit-exact to the overlap, then no silence to b's converted end; track_started at the fade's middle")
    func rateChangeFade() throws {
        try retriedAcrossLateGraphCycles("rateChangeFade") { try rateChangeFadeRun() }
    }

    private func rateChangeFadeRun() throws {
        let lengthA = rate, lengthB = 44_100  // 1 s each
        var configuration = PlaybackConfiguration()
        configuration.crossfade = try CrossfadeSettings(seconds: 0.25)
        let rig = try PulseServiceRig([
            "a": .init(frames: Int64(lengthA), sampleRate: Double(rate), base: 1),
            "b": .init(frames: Int64(lengthB), sampleRate: 44_100, base: Float(1 + lengthA)),
        ], configuration: configuration)
        // Both queued before the first read: a fade is planned from a's first chunk.
        rig.service.enqueue([Track(url: "a"), Track(url: "b")])
        try rig.service.jump(to: 0)
        try rig.service.play()
        try rig.waitUntilStopped()
        let buffer = rig.bufferFrames
        let events = rig.events
        let frames = try rig.finish()
        // a alone to its last 0.25 s, bit-exact; then the fade and b, at 44.1 kHz
        // converted to the stream's 48 kHz: 44,100 frames of b sound as 48,000.
        let fadeStart = lengthA - rate / 4
        #expect(frames.prefix(fadeStart).map(\.value) == (1...fadeStart).map { Optional($0) },
                "a to the overlap: breaks \(breaks(Array(frames.prefix(fadeStart))).prefix(5))")
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $1.at == $0.at + 1 }, "no silence anywhere")
        #expect(abs(frames.count - (fadeStart + rate)) <= 2, "\(frames.count) frames sounded, not \(fadeStart + rate)")
        // b starts for the listener in the fade's middle: 5,512 of its frames in (heard counts b's frames).
        let middle = Int64(fadeStart + 44_100 / 8)
        let started = events.first { if case .trackStarted(index: 1, _) = $0.event { true } else { false } }
        #expect(started != nil, "track_started for the second track")
        if let started {
            let late = started.heard - middle
            print("[service rate-change fade] track_started(1) with \(started.heard) frames heard: \(late) after the fade's middle "
                + "(granted buffer \(buffer)); \(frames.count) frames sounded, expected \(fadeStart + rate)")
            #expect(late >= 0, "not before the listener reached the fade's middle")
            #expect(late <= Int64(buffer + period), "within one buffer of the middle")
        }
        #expect(rig.service.state == .stopped)
    }

    @Test("the end, 20 times: every frame of the track once, and nothing after its last frame",
          .disabled(if: PulseTestServer.underThreadSanitizer, "about ends of play, not threads: once per server in the plain runs"))
    func drainRepeated() throws {
        try retriedAcrossLateGraphCycles("drainRepeated") { try drainRepeatedRun() }
    }

    private func drainRepeatedRun() throws {
        // As `harmonia-play FILE` ends, at the player's default 500 ms buffer,
        // with a ring the track wraps (65,536 frames, 1.4 s, for a 1.5 s track);
        // a one-in-six event (stale audio after the end on PipeWire) shows in 20.
        let length = rate * 3 / 2, plays = 20
        let rig = try PulseServiceRig(["a": .init(frames: Int64(length), sampleRate: Double(rate), base: 1)],
                                      latency: PulseAudioOutputAdapter.Options().latency, ringFrames: 16_384)
        var underruns = 0
        for _ in 0..<plays {
            try rig.service.load(url: "a")
            try rig.service.play()
            try rig.waitUntilStopped()
            underruns += rig.output.underrunCount
        }
        let frames = try rig.finish()
        // The recording, cut where the count starts again at 1: one run per play.
        var runs: [[CountedFrame]] = []
        for frame in frames {
            if frame.value == 1 || runs.isEmpty { runs.append([]) }
            runs[runs.count - 1].append(frame)
        }
        let whole = Array(1...length)
        let exact = runs.filter { $0.map(\.value) == whole.map { Optional($0) } }.count
        let gaps = runs.map { run in zip(run, run.dropFirst()).filter { $1.at != $0.at + 1 }.count }
        let extra = runs.map { max(0, $0.count - length) }.reduce(0, +)
        print("[service drain ×\(plays)] \(runs.count) runs recorded, \(exact) exact; \(extra) frames beyond a track's end; silences within a run \(gaps.reduce(0, +)); underruns \(underruns)")
        #expect(runs.count == plays, "one run per play: \(runs.count) for \(plays)")
        for (index, run) in runs.enumerated() where run.map(\.value) != whole.map({ Optional($0) }) {
            let stranger = run.firstIndex { $0.value == nil || $0.value! > length }.map { ", something else from frame \($0)" } ?? ""
            let summary = "\(run.count) frames for \(length), first \(run.first?.value ?? -1), last \(run.last?.value ?? -1)"
            Issue.record("play \(index + 1): \(summary)\(stranger), breaks \(breaks(run).prefix(3))")
        }
    }

    @Test("a 44.1 kHz track on a 48 kHz sink: resampled by the server, heard to its last frame")
    func resampledByServer() throws {
        try retriedAcrossLateGraphCycles("resampledByServer") { try resampledByServerRun() }
    }

    private func resampledByServerRun() throws {
        // At the player's default 500 ms buffer, as a user plays it.
        let frames = 44_100 * 2
        let rig = try PulseServiceRig(["a": .init(frames: Int64(frames), sampleRate: 44_100, base: 1)],
                                      latency: PulseAudioOutputAdapter.Options().latency)
        try rig.service.load(url: "a")
        try rig.service.play()
        try rig.waitUntilStopped()
        rig.service.stop()
        let recording = try rig.recorder.finish()
        // The sounding frames, without the gaps of any underrun (a slow
        // machine, ThreadSanitizer): the resampler's filter adds a few dozen
        // frames of ringing at the edges of each run (under ThreadSanitizer a
        // gap shorter than the ringing merges into its run: 69 frames seen),
        // far less than a cut.
        let runs = loudRuns(recording, channels: 2)
        let sounded = runs.reduce(0) { $0 + $1.count }
        let expected = frames * rate / 44_100
        print("[service resampled] \(frames) frames at 44.1 kHz sounded as \(sounded) frames at \(rate) Hz "
            + "in \(runs.count) run(s) (expected \(expected); underruns \(rig.output.underrunCount))")
        #expect(abs(sounded - expected) <= 128 * runs.count, "the whole track, resampled: \(sounded) frames, expected \(expected)")
    }

    @Test("the heard position is monotonic, smooth, and never ahead of what the sink played")
    func heardPosition() throws {
        try retriedAcrossLateGraphCycles("heardPosition") { try heardPositionRun() }
    }

    private func heardPositionRun() throws {
        let rig = try PulseServiceRig(["a": .init(frames: Int64(rate * 3), sampleRate: Double(rate), base: 1)])
        try rig.service.load(url: "a")
        try rig.service.play()
        try rig.waitUntilPosition(0.1)
        let buffer = rig.bufferFrames
        var samples: [(wall: UInt64, position: Double)] = []
        for _ in 0..<40 {
            let wall = rig.clock.now()                            // just before the read: what had sounded
            samples.append((wall, rig.service.currentTime()))     // by then, the read cannot be behind
            rig.clock.sleep(nanoseconds: 20_000_000)              // sampling pace, not a wait for a condition
        }
        let frames = try rig.finish()

        // What the sink had played at each instant, from the whole recording:
        // the recording's frame it had reached (`recordingFrame(at:)`; what
        // had arrived by then is no measure, frames arrive up to parec's
        // fragment late), and the newest counter up to it: frames 0..<value
        // had sounded. A lower bound on PipeWire, whose monitor delivers a
        // graph cycle after the sink takes the audio; on PulseAudio's pipe
        // sink, which writes a block as it takes it, ahead by a block at most.
        #expect(breaks(frames).isEmpty, "the count goes on exactly: \(breaks(frames).prefix(5))")
        var worstAhead = Int.min, worstBehind = 0, worstJitter = 0.0
        for (i, sample) in samples.enumerated() {
            let heard = Int((sample.position * Double(rate)).rounded())
            let frame = try #require(rig.recorder.recordingFrame(at: sample.wall))
            let sounded = frames.last { $0.at <= frame }?.value ?? 0
            worstAhead = max(worstAhead, heard - sounded)
            worstBehind = max(worstBehind, sounded - heard)
            if i > 0 {
                let previous = samples[i - 1]
                #expect(sample.position >= previous.position, "monotonic: \(previous.position) then \(sample.position)")
                let wall = Double(sample.wall - previous.wall) / 1e9
                worstJitter = max(worstJitter, abs((sample.position - previous.position) - wall))
            }
        }
        print("[service position] 40 samples: at most \(worstAhead) frames ahead of what the sink had played, at most \(worstBehind) behind; "
            + "position step vs wall clock differs by at most \(Int((worstJitter * Double(rate)).rounded())) frames (granted buffer \(buffer) frames)")
        #expect(worstAhead <= 0, "never ahead of what the sink had played")
        #expect(worstBehind <= 2 * buffer + rate / 10, "not far behind either")
        #expect(worstJitter <= 0.03, "smooth: each step follows the wall clock")
        #expect(samples.last!.position - samples.first!.position > 0.5, "it moved")
    }
}
}
