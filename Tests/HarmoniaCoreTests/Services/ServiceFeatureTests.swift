// Range, events, ReplayGain, buffering and volume on scripted sources
// (specs/services.md).
import Foundation
import HarmoniaCore
import HarmoniaTestSupport
import Testing

/// A tag reader with fixed answers, for ReplayGain.
struct FixedTagReader: TagReaderPort {
    let tags: [String: TagBundle]
    func read(url: String) throws(CoreError) -> TagBundle {
        guard let bundle = tags[url] else { throw .notFound("\(url): no tags") }
        return bundle
    }
}

@Suite("PlaybackService features") struct ServiceFeatureTests {
    @Test("playback range: seeks inside, refuses outside, pauses at the end back at the start; load clears it")
    func playbackRange() throws {
        let h = ServiceHarness(["a": .init(frames: 441_000)])
        let s = h.service
        #expect(throws: CoreError.self) { try s.setPlaybackRange(start: 1, end: 2) }
        try s.load(url: "a")
        #expect(throws: CoreError.self) { try s.setPlaybackRange(start: -1, end: 2) }
        #expect(throws: CoreError.self) { try s.setPlaybackRange(start: 10, end: nil) }
        #expect(throws: CoreError.self) { try s.setPlaybackRange(start: 2, end: 2) }
        #expect(throws: CoreError.self) { try s.setPlaybackRange(start: 2, end: 10.5) }
        try s.setPlaybackRange(start: 1, end: 2)
        #expect(s.currentTime() == 1)
        #expect(s.duration() == 10)
        #expect(throws: CoreError.self) { try s.seek(to: 0.5) }
        #expect(throws: CoreError.self) { try s.seek(to: 2.5) }
        try s.seek(to: 1.5)
        try s.play()
        let heard = h.listen(frames: 44_100)
        #expect(heard.count == 22_050)
        #expect(heard.first == 66_150 && heard.last == 88_199)
        #expect(s.state == .paused)
        #expect(s.currentTime() == 1)
        try s.play()
        #expect(h.listen(frames: 10).first == 44_100)
        s.clearPlaybackRange()
        try s.seek(to: 5)
        #expect(s.currentTime() == 5)
        try s.setPlaybackRange(start: 1, end: nil)
        try s.load(url: "a")
        try s.seek(to: 0.25)
        #expect(s.currentTime() == 0.25)
    }

    @Test("position events every interval while playing, none while paused")
    func positionEvents() throws {
        let h = ServiceHarness(["a": .init(frames: 441_000)], configuration: PlaybackConfiguration(positionInterval: 0.25))
        try h.service.load(url: "a")
        try h.service.play()
        let before = h.events.count
        h.listen(frames: 44_100)
        let positions = h.events(after: before).compactMap { if case .position(let s, _) = $0 { s } else { nil } }
        // One every 0.25 s of heard time, each within one 10 ms listening step of its due time.
        #expect(positions.count == 4 || positions.count == 5)
        for (n, seconds) in positions.enumerated() {
            #expect(abs(seconds - 0.25 * Double(n)) <= 0.0101, "event \(n) at \(seconds) s")
        }
        try h.service.pause()
        let paused = h.events.count
        h.listen(frames: 44_100)
        #expect(h.events(after: paused).isEmpty)
    }

    @Test("state, volume and seek events; stop ends the track with reason stopped and closes every session")
    func events() throws {
        let h = ServiceHarness(["a": .init(frames: 441_000)])
        try h.service.load(url: "a")
        try h.service.play()
        h.service.setVolume(1.5)
        h.service.setVolume(-2)
        #expect(h.service.volume == 0)
        try h.service.seek(to: 2)
        h.service.stop()
        // A read in flight when stop() came closes its session when it returns.
        h.settle()
        // A position event also marks the start of play and each seek.
        let names = h.events.map(\.name).filter { $0 != "position" }
        #expect(names == ["queue_changed", "track_started", "state_changed", "state_changed", "volume_changed",
                          "seeked", "track_ended", "state_changed"])
        #expect(h.events.contains(.stateChanged(.playing)))
        #expect(h.events.contains(.volumeChanged(0)))
        #expect(h.events.last == .stateChanged(.stopped))
        #expect(h.decoder.openSessionCount == 0)
    }

    @Test("ReplayGain scales the samples on the decode thread: track, album, preamp, clipping prevention")
    func replayGain() throws {
        let tags = TagBundle(replayGainTrack: -6.0206, replayGainAlbum: 6.0206, replayGainTrackPeak: 0.5, replayGainAlbumPeak: 0.8)
        let reader = FixedTagReader(tags: ["a": tags])
        func firstSamples(_ settings: ReplayGainSettings) throws -> [Float] {
            let h = ServiceHarness(["a": .init(frames: 1_000, base: 1)],
                                   configuration: PlaybackConfiguration(replayGain: settings), tagReader: reader)
            try h.service.load(url: "a")
            try h.service.play()
            return Array(h.listen(frames: 4).prefix(4))
        }
        #expect(try firstSamples(.init(mode: .off)) == [1, 2, 3, 4])
        let track = try firstSamples(.init(mode: .track))
        #expect(abs(track[1] - 1) < 1e-4)
        // +6 dB would exceed full scale for a 0.8 peak: limited to 1/0.8.
        let album = try firstSamples(.init(mode: .album))
        #expect(abs(album[0] - 1.25) < 1e-4)
        let unlimited = try firstSamples(.init(mode: .album, preventClipping: false))
        #expect(abs(unlimited[0] - 2) < 1e-3)
        let preamp = try firstSamples(.init(mode: .track, preampDB: 6.0206))
        #expect(abs(preamp[0] - 1) < 1e-4)
    }

    @Test("tags the decoder gives win over the tag reader: one open per track, gain and title from the decoder")
    func decoderTags() throws {
        let fromDecoder = TagBundle(title: "From the decoder", replayGainTrack: -6.0206)
        let reader = FixedTagReader(tags: ["a": TagBundle(title: "From the reader", replayGainTrack: 6.0206)])
        let h = ServiceHarness(["a": .init(frames: 1_000, base: 1, tags: fromDecoder)],
                               configuration: PlaybackConfiguration(replayGain: .init(mode: .track)), tagReader: reader)
        try h.service.load(url: "a")
        try h.service.play()
        let first = Array(h.listen(frames: 2).prefix(2))
        #expect(abs(first[1] - 1) < 1e-4, "the decoder's −6 dB applied, not the reader's +6 dB (got \(first))")
        #expect(h.service.queue.first?.title == "From the decoder")
        #expect(h.decoder.openedURLs == ["a"])
    }

    @Test("ReplayGain rules without a decoder")
    func replayGainRules() {
        let settings = ReplayGainSettings(mode: .album, preampDB: 0, preventClipping: true)
        #expect(settings.linearGain(for: TagBundle(replayGainTrack: -20)) == Float(pow(10, -1.0)))
        #expect(settings.linearGain(for: nil) == 1)
        #expect(ReplayGainSettings(mode: .track, preampDB: -6.0206).linearGain(for: nil) < 0.51)
        #expect(ReplayGainSettings(mode: .off, preampDB: 12).linearGain(for: TagBundle(replayGainTrack: 3)) == 1)
    }

    @Test("ReplayGain values that are not finite numbers are ignored; the factor is always finite (specs/hardening.md)")
    func replayGainFromHostileTags() {
        let track = ReplayGainSettings(mode: .track, preampDB: 0, preventClipping: true)
        for gain in [Double.nan, .infinity, -.infinity] {
            #expect(track.linearGain(for: TagBundle(replayGainTrack: gain)) == 1)
        }
        #expect(track.linearGain(for: TagBundle(replayGainTrack: 1e300)).isFinite)
        #expect(track.linearGain(for: TagBundle(replayGainTrack: 0, replayGainTrackPeak: .nan)) == 1)
        #expect(track.linearGain(for: TagBundle(replayGainTrack: 0, replayGainTrackPeak: -1)) == 1)
        #expect(ReplayGainSettings(mode: .track, preampDB: .nan).linearGain(for: nil) == 1)
    }

    @Test("frames from seconds never trap: clamped to ±2^53, NaN is 0")
    func clampingFrames() {
        #expect(Int64(clampingFrames: 1.5) == 2)
        #expect(Int64(clampingFrames: 1e300) == maxFramePosition)
        #expect(Int64(clampingFrames: -.infinity) == -maxFramePosition)
        #expect(Int64(clampingFrames: .nan) == 0)
    }

    @Test("a stalled source enters buffering when the output runs dry, and resumes exactly")
    func buffering() async throws {
        // The stall comes before the decode-ahead distance is filled.
        let h = ServiceHarness(["net": .init(frames: 441_000, stallAt: 50_000)])
        let reachedBuffering = LockedValue(false)
        let buffering = ConditionLock()
        h.service.observe { event in
            if event == .stateChanged(.buffering) {
                buffering.withLock { reachedBuffering.withLock { $0 = true }; buffering.broadcast() }
            }
        }
        try h.service.load(url: "net")
        try h.service.play()
        h.decoder.waitUntilStalled("net")
        var heard = h.listen(frames: 60_000, settle: false)
        #expect(heard.count == 50_000)
        buffering.withLock { while !reachedBuffering.withLock({ $0 }) { buffering.wait() } }
        #expect(h.service.state == .buffering)
        h.decoder.release("net")
        // The decode thread writes as soon as the read returns; wait for it
        // through the clock, as the harness does.
        heard += h.listen(frames: 10_000)
        #expect(h.service.state == .playing)
        #expect(isCounting(heard[...]))
        #expect(heard.count > 50_000)
        #expect(h.events.contains { if case .underrun = $0 { true } else { false } })
    }

    @Test("after running dry, sound resumes only with `rebuffer` seconds queued: a trickle stays buffering, silent")
    func rebufferHysteresis() throws {
        // 1.5 s at 44.1 kHz is 66,150 frames.
        let h = ServiceHarness(["net": .init(frames: 441_000, stallAt: 50_000)])
        try h.service.load(url: "net")
        try h.service.play()
        h.decoder.waitUntilStalled("net")
        #expect(h.listen(frames: 60_000, settle: false).count == 50_000)
        h.wait(forState: .buffering)  // the underrun comes through the output's events thread
        #expect(h.service.state == .buffering)
        // A trickle: 40,000 frames (0.9 s) arrive, then the source stalls again.
        h.decoder.moveStall("net", to: 90_000)
        h.decoder.waitUntilStalled("net")
        #expect(h.listen(frames: 4_410, settle: false).isEmpty)  // still gathering: not a note
        #expect(h.service.state == .buffering)
        // Enough arrives: sound resumes at the exact next frame.
        h.decoder.moveStall("net", to: 300_000)
        h.settle()  // the decode thread gathers 1.5 s and resumes the output
        let heard = h.listen(frames: 20_000)
        #expect(h.service.state == .playing)
        #expect(heard.count == 20_000)
        #expect(heard.first == 50_000 && isCounting(heard[...]))
    }
}

@Suite("PlaybackService output failures") struct ServiceOutputFailureTests {
    @Test("an output that cannot open fails the load as the output's error, not the track's, and leaks no session")
    func outputFailure() throws {
        let decoder = CounterDecoder(["a": .init(frames: 1_000), "b": .init(frames: 1_000)])
        let service = DefaultPlaybackService(decoder: decoder, output: FileAudioOutput(path: "/nonexistent-dir/out.f32"),
                                             clock: ManualClock())
        let events = LockedValue<[PlaybackEvent]>([])
        service.observe { event in events.withLock { $0.append(event) } }
        #expect(throws: CoreError.self) { try service.load(url: "a") }
        #expect(decoder.openSessionCount == 0)
        guard case .error(let error) = service.state else { Issue.record("state \(service.state)"); return }
        #expect(error.category == .notFound && error.message.contains("/nonexistent-dir/out.f32"))
        #expect(events.withLock { $0 }.contains(.error(error, url: nil)))
        // Jumping in a queue: the output error ends it at once (every track would fail the same way).
        service.enqueue([Track(url: "a"), Track(url: "b")])
        #expect(throws: error) { try service.jump(to: 0) }
        #expect(decoder.openedURLs == ["a", "a"])
        #expect(decoder.openSessionCount == 0)
    }
}
