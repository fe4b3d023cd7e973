// The gapless queue on scripted sources: joins, format changes, failures,
// when track events fire, repeat and edits (specs/services.md §Queue).
import Foundation
@testable import HarmoniaCore
import HarmoniaTestSupport
import Testing

@Suite("PlaybackService queue") struct QueueServiceTests {
    static func tracks(_ urls: String...) -> [Track] { urls.map { Track(url: $0) } }

    func started(_ events: [PlaybackEvent]) -> [String] {
        events.compactMap { if case .trackStarted(_, let track) = $0 { track.url } else { nil } }
    }

    func ended(_ events: [PlaybackEvent]) -> [String] {
        events.compactMap { if case .trackEnded(_, let track, let reason) = $0 { "\(track.url):\(reason)" } else { nil } }
    }

    @Test("same format: the next track's first frame follows the last frame, with no gap or overlap")
    func gaplessJoin() throws {
        let h = ServiceHarness(["a": .init(frames: 30_000, base: 0), "b": .init(frames: 50_000, base: 30_000),
                                "c": .init(frames: 7, base: 80_000)])
        h.service.enqueue(Self.tracks("a", "b", "c"))
        try h.service.jump(to: 0)
        try h.service.play()
        let heard = h.listen(frames: 100_000)
        #expect(heard.count == 80_007)
        #expect(heard.first == 0)
        #expect(isCounting(heard[...]))
        #expect(h.service.state == .stopped)
        #expect(started(h.events) == ["a", "b", "c"])
        #expect(ended(h.events) == ["a:finished", "b:finished", "c:finished"])
        #expect(h.decoder.openSessionCount == 0)
    }

    @Test("track events fire when the listener reaches the boundary, not when the decoder does")
    func eventsFollowTheListener() throws {
        let h = ServiceHarness(["a": .init(frames: 20_000), "b": .init(frames: 20_000, base: 20_000)])
        h.service.enqueue(Self.tracks("a", "b"))
        try h.service.jump(to: 0)
        try h.service.play()
        h.listen(frames: 19_845)
        // The decoder has long opened and decoded "b" (it is 2 s ahead)...
        #expect(h.decoder.openedURLs.contains("b"))
        // ...but the listener is still in "a".
        #expect(started(h.events) == ["a"])
        #expect(h.service.currentIndex == 0)
        h.listen(frames: 441)
        #expect(started(h.events) == ["a", "b"])
        #expect(h.service.currentIndex == 1)
        #expect(h.service.currentTime() == 286.0 / 44_100)
    }

    @Test("another rate or channel count: the output is reconfigured at the boundary, every frame kept")
    func formatChange() throws {
        let h = ServiceHarness(["a": .init(frames: 22_050), "b": .init(frames: 48_000, sampleRate: 48_000, channels: 1, base: 22_050)])
        h.service.enqueue(Self.tracks("a", "b"))
        try h.service.jump(to: 0)
        try h.service.play()
        var heard = h.listen(frames: 22_000)
        #expect(h.output.format?.sampleRate == 44_100)
        #expect(started(h.events) == ["a"])
        heard += h.listen(frames: 60_050)
        #expect(h.output.format?.sampleRate == 48_000)
        #expect(h.output.format?.channels == 1)
        #expect(heard.count == 70_050)
        #expect(isCounting(heard[...]))
        #expect(started(h.events) == ["a", "b"])
    }

    @Test("an output that continues in a new rate: the next track follows with no drain or configure; a seek back reconfigures")
    func formatContinued() throws {
        var continuing: FormatContinuingOutput?
        let h = ServiceHarness(["a": .init(frames: 22_050), "b": .init(frames: 48_000, sampleRate: 48_000, base: 22_050)],
                               wrapOutput: { let output = FormatContinuingOutput($0); continuing = output; return output })
        let output = try #require(continuing)
        h.service.enqueue(Self.tracks("a", "b"))
        try h.service.jump(to: 0)
        try h.service.play()
        var heard = h.listen(frames: 10_000)
        // b is already written straight after a (within the decode-ahead), with no configure between.
        #expect(output.calls == ["configure 44100.0", "continue 48000.0"])
        #expect(heard.count == 10_000 && heard.first == 0 && isCounting(heard[...]))
        // Back within a (44.1 kHz) while the output is in b's format: configured for a again.
        try h.service.seek(to: 0.1)
        heard = h.listen(frames: 30_000)
        #expect(output.calls == ["configure 44100.0", "continue 48000.0", "configure 44100.0", "continue 48000.0"])
        #expect(heard.count == 30_000 && heard.first == 4_410)
        #expect(isCounting(heard[...]))   // through the join into b
        #expect(started(h.events) == ["a", "b"])
    }

    @Test("a track that fails to open is reported and skipped; the queue joins around it")
    func failedOpenIsSkipped() throws {
        let h = ServiceHarness(["a": .init(frames: 10_000), "c": .init(frames: 10_000, base: 10_000),
                                "bad": .init(frames: 1, openError: .decodeError("bad: corrupt header"))])
        h.service.enqueue(Self.tracks("a", "bad", "c"))
        try h.service.jump(to: 0)
        try h.service.play()
        let heard = h.listen(frames: 30_000)
        #expect(heard.count == 20_000)
        #expect(isCounting(heard[...]))
        #expect(h.events.contains(.error(.decodeError("bad: corrupt header"), url: "bad")))
        #expect(started(h.events) == ["a", "c"])
        #expect(h.service.state == .stopped)
    }

    @Test("a track that dies mid-way: error event, what decoded is heard, then the next track")
    func failureMidTrack() throws {
        let h = ServiceHarness(["a": .init(frames: 10_000, failAt: 6_000), "b": .init(frames: 10_000, base: 6_000)])
        h.service.enqueue(Self.tracks("a", "b"))
        try h.service.jump(to: 0)
        try h.service.play()
        let heard = h.listen(frames: 20_000)
        #expect(heard.count == 16_000)
        #expect(isCounting(heard[...]))
        #expect(h.events.contains(.error(.decodeError("corrupt packet"), url: "a")))
        #expect(ended(h.events) == ["a:failed", "b:finished"])
        // The order (specs/services.md §Events): the error when the decoder
        // fails, the track's end when the listener reaches the failure, and
        // queueEnded before the last state change.
        let names = h.events.map(\.name)
        let error = try #require(names.firstIndex(of: "error"))
        let failedEnd = try #require(h.events.firstIndex { if case .trackEnded(_, _, .failed) = $0 { true } else { false } })
        #expect(error < failedEnd)
        #expect(names.suffix(2) == ["queue_ended", "state_changed"])
        #expect(h.events.last == .stateChanged(.stopped))
    }

    @Test("Swift-style API: settable volume, repeatMode and shuffle, isPlaying; shutdown finishes every events() stream")
    func swiftStyleAPI() async throws {
        let h = ServiceHarness(["a": .init(frames: 441_000)])
        let service: any PlaybackService = h.service
        service.volume = 0.25
        service.repeatMode = .all
        service.shuffle = true
        #expect(service.volume == 0.25 && service.repeatMode == .all && service.shuffle)
        #expect(!service.isPlaying)
        try service.load(url: "a")
        try service.play()
        #expect(service.isPlaying)
        let events = h.service.events()
        h.service.shutdown()
        h.service.shutdown()  // idempotent
        var received: [PlaybackEvent] = []
        for await event in events { received.append(event) }  // ends: the stream was finished
        #expect(received.last == .stateChanged(.stopped), "\(received)")
        var later = 0
        for await _ in h.service.events() { later += 1 }  // a stream asked for afterwards ends at once
        #expect(later == 0)
        #expect(h.service.state == .stopped)
        #expect(throws: CoreError.self) { try h.service.load(url: "a") }
    }

    @Test("jumping to a bad entry skips to the next good one; a queue of only bad entries ends in error")
    func jumpSkipsBadEntries() throws {
        let h = ServiceHarness(["ok": .init(frames: 1_000), "bad": .init(frames: 1, openError: .unsupported("bad: text"))])
        h.service.enqueue(Self.tracks("bad", "ok"))
        try h.service.jump(to: 0)
        #expect(h.service.currentIndex == 1)
        #expect(h.service.state == .paused)
        let only = ServiceHarness(["bad": .init(frames: 1, openError: .unsupported("bad: text"))])
        only.service.enqueue(Self.tracks("bad", "bad"))
        #expect(throws: CoreError.unsupported("bad: text")) { try only.service.jump(to: 0) }
        #expect(only.service.state == .error(.unsupported("bad: text")))
    }

    @Test("next, previous and jump keep playing or paused; next at the end stops with no entry current")
    func skipping() throws {
        let h = ServiceHarness(["a": .init(frames: 50_000), "b": .init(frames: 50_000, base: 100_000)])
        h.service.enqueue(Self.tracks("a", "b"))
        try h.service.jump(to: 0)
        try h.service.play()
        h.listen(frames: 1_000)
        try h.service.next()
        #expect(h.service.currentIndex == 1)
        #expect(h.service.state == .playing)
        #expect(h.listen(frames: 10).first == 100_000)
        try h.service.pause()
        try h.service.previous()
        #expect(h.service.currentIndex == 0)
        #expect(h.service.state == .paused)
        #expect(h.service.currentTime() == 0)
        try h.service.jump(to: 1)
        try h.service.next()
        #expect(h.service.state == .stopped)
        #expect(h.service.currentIndex == nil, "past the last entry: the queue's end, no entry current")
        #expect(ended(h.events).last == "b:skipped")
    }

    @Test("repeat one replays the track gaplessly; repeat all wraps to the first")
    func repeatModes() throws {
        let h = ServiceHarness(["a": .init(frames: 1_000), "b": .init(frames: 1_000, base: 1_000)])
        h.service.enqueue(Self.tracks("a", "b"))
        h.service.setRepeatMode(.one)
        try h.service.jump(to: 0)
        try h.service.play()
        let one = h.listen(frames: 2_500)
        #expect(one.count == 2_500)
        #expect(Array(one[0..<3]) == [0, 1, 2] && one[1_000] == 0 && one[2_000] == 0)
        h.service.setRepeatMode(.all)
        let all = h.listen(frames: 3_000)
        #expect(all.count == 3_000)
        #expect(all[0] == 500 && all[500] == 1_000 && all[1_500] == 0 && all[2_500] == 1_000)
        #expect(started(h.events) == ["a", "a", "a", "b", "a", "b"])
    }

    @Test("editing what follows replaces audio already decoded for the old next track")
    func editsAfterDecodeAhead() throws {
        let h = ServiceHarness(["a": .init(frames: 20_000), "b": .init(frames: 20_000, base: 100_000),
                                "c": .init(frames: 20_000, base: 200_000)])
        h.service.enqueue(Self.tracks("a", "b", "c"))
        try h.service.jump(to: 0)
        try h.service.play()
        let first = h.listen(frames: 15_000)
        try h.service.remove(at: 1)
        let rest = h.listen(frames: 30_000)
        #expect(isCounting(first[...]) && rest.first == 15_000)
        #expect(rest[4_999] == 19_999)
        #expect(rest[5_000] == 200_000)
        #expect(isCounting(rest[5_000...]))
        #expect(started(h.events) == ["a", "c"])
    }

    @Test("removing the current track goes on with the next; clearing the queue stops")
    func removeCurrent() throws {
        let h = ServiceHarness(["a": .init(frames: 20_000), "b": .init(frames: 20_000, base: 100_000)])
        h.service.enqueue(Self.tracks("a", "b"))
        try h.service.jump(to: 0)
        try h.service.play()
        h.listen(frames: 100)
        try h.service.remove(at: 0)
        #expect(h.service.queue.map(\.url) == ["b"])
        #expect(h.service.currentIndex == 0)
        #expect(h.listen(frames: 10).first == 100_000)
        h.service.clearQueue()
        #expect(h.service.state == .stopped)
        #expect(h.service.queue.isEmpty)
    }

    @Test("a ranged track plays exactly its frames, then the queue goes on (CUE tracks, --start/--end)")
    func rangedTrack() throws {
        let h = ServiceHarness(["f": .init(frames: 441_000), "g": .init(frames: 1_000, base: 1_000_000)])
        h.service.enqueue([Track(url: "f", start: 1, end: 2), Track(url: "g")])
        try h.service.jump(to: 0)
        #expect(h.service.duration() == 1)
        try h.service.play()
        let heard = h.listen(frames: 50_000)
        #expect(heard.count == 45_100)
        #expect(heard.first == 44_100)
        #expect(heard[44_099] == 88_199)
        #expect(heard[44_100] == 1_000_000)
    }
}

@Suite("PlaybackQueue") struct PlaybackQueueTests {
    @Test("shuffle starts with the current track, visits every track once, and off restores the order")
    func shuffle() {
        var queue = PlaybackQueue()
        let tracks = (0..<50).map { Track(url: "\($0)") }
        queue.append(tracks, current: nil)
        queue.setShuffle(true, current: 7)
        var visited = [7]
        var index = 7
        while let next = queue.following(index, automatic: true) {
            visited.append(next)
            index = next
        }
        #expect(visited.count == 50 && Set(visited).count == 50)
        #expect(visited != Array(0..<50))
        queue.setShuffle(false, current: 7)
        #expect(queue.following(7, automatic: true) == 8)
    }

    @Test("following and preceding under repeat modes")
    func repeatRules() {
        var queue = PlaybackQueue()
        queue.append((0..<3).map { Track(url: "\($0)") }, current: nil)
        #expect(queue.following(2, automatic: true) == nil)
        #expect(queue.preceding(0) == nil)
        queue.repeatMode = .all
        #expect(queue.following(2, automatic: true) == 0)
        #expect(queue.preceding(0) == 2)
        queue.repeatMode = .one
        #expect(queue.following(1, automatic: true) == 1)
        #expect(queue.following(1, automatic: false) == 2)
    }
}

/// A null output that continues in a new rate with the same channel count
/// (as an output converting to its own format does), recording its format
/// calls; or, with `continues` false, one that never does, not even for a
/// fade (as an output whose stream has the track's format).
final class FormatContinuingOutput: AudioOutputPort, @unchecked Sendable {
    let base: NullAudioOutput
    let continues: Bool
    private let recorded = LockedValue<[String]>([])
    init(_ base: NullAudioOutput, continues: Bool = true) {
        self.base = base
        self.continues = continues
    }
    var calls: [String] { recorded.withLock { $0 } }

    func configure(sampleRate: Double, channels: Int) throws(CoreError) {
        recorded.withLock { $0.append("configure \(sampleRate)") }
        try base.configure(sampleRate: sampleRate, channels: channels)
    }
    func continueInFormat(sampleRate: Double, channels: Int) throws(CoreError) -> Bool {
        guard continues, channels == base.format?.channels else { return false }
        recorded.withLock { $0.append("continue \(sampleRate)") }
        return true
    }
    func start() throws(CoreError) { try base.start() }
    func stop() { base.stop() }
    func pause() { base.pause() }
    func resume() { base.resume() }
    func flush() { base.flush() }
    func drain() { base.drain() }
    func write(_ frames: UnsafePointer<Float>, frameCount: Int) -> Int { base.write(frames, frameCount: frameCount) }
    func setVolume(_ volume: Float) { base.setVolume(volume) }
    var framesPlayed: Int64 { base.framesPlayed }
    var underrunCount: Int { base.underrunCount }
    var events: AsyncStream<AudioOutputEvent> { base.events }
    func observe(_ handler: @escaping @Sendable (AudioOutputEvent) -> Void) { base.observe(handler) }
}
