// The rule on a real playback service's events: a counter decoder, a manual
// clock and a null output of manual pace, so time passes only when the test
// says — specs/listens.md §The rule
import HarmoniaControl
import HarmoniaCore
import HarmoniaTestSupport
import Testing

@Suite("ListenCounter on DefaultPlaybackService's events") struct ListenCounterServiceTests {
    /// A service playing a 60 s track (threshold 30 s), its events fed to a counter.
    final class Rig: @unchecked Sendable {
        let clock = ManualClock()
        let output = NullAudioOutput(pace: .manual)
        let service: DefaultPlaybackService
        let counter = LockedValue(ListenCounter())
        let notices = LockedValue<[ListenNotice]>([])

        init(seconds: Int64 = 60, positionInterval: Double = 0.5) {
            let decoder = CounterDecoder(["/m/a.flac": .init(frames: 44_100 * seconds)])
            var configuration = PlaybackConfiguration()
            configuration.positionInterval = positionInterval
            service = DefaultPlaybackService(decoder: decoder, output: output, clock: clock, configuration: configuration)
            service.observe { [counter, notices] event in
                let found = counter.withLock { $0.observe(event, now: 1_700_000_000) }
                notices.withLock { $0 += found }
            }
            service.enqueue([Track(url: "/m/a.flac")])
        }

        /// Lets `seconds` of audio be heard (5 ms steps, as the vector runner does).
        func hear(_ seconds: Double) {
            var remaining = UInt64((seconds * 1e9).rounded())
            while remaining > 0 {
                let step = min(remaining, 5_000_000)
                _ = output.advance(seconds: Double(step) / 1e9)
                clock.advance(by: step)
                service.waitUntilSettled()
                remaining -= step
            }
        }

        var listens: [Double] {
            notices.withLock { $0 }.compactMap { if case .counted(_, _, let heard, _) = $0 { heard } else { nil } }
        }

        var playingNow: Int { notices.withLock { $0 }.filter { if case .playingNow = $0 { true } else { false } }.count }
    }

    @Test("heard straight through: not at 29 s, once at 30 s (within a report interval)")
    func straight() throws {
        let rig = Rig()
        defer { rig.service.shutdown() }
        try rig.service.jump(to: 0)
        try rig.service.play()
        rig.hear(29)
        #expect(rig.listens.isEmpty && rig.playingNow == 1)
        rig.hear(1.6)
        #expect(rig.listens.count == 1 && (rig.listens.first ?? 0) >= 30 && (rig.listens.first ?? 0) < 30.6)
        rig.hear(30)
        #expect(rig.listens.count == 1)
    }

    @Test("a pause of ten minutes adds nothing; a seek forward skips what it passed")
    func pauseAndSeek() throws {
        let rig = Rig()
        defer { rig.service.shutdown() }
        try rig.service.jump(to: 0)
        try rig.service.play()
        rig.hear(10)
        try rig.service.pause()
        rig.hear(600)
        #expect(rig.listens.isEmpty)
        try rig.service.play()
        rig.hear(5)
        try rig.service.seek(to: 47)
        rig.hear(14)  // to the end: 10 + 5 + 13 heard, 28 s: less than 30
        #expect(rig.listens.isEmpty)
        #expect(rig.service.state == .stopped)
    }

    @Test("a seek back counts the audio heard again")
    func seekBack() throws {
        let rig = Rig()
        defer { rig.service.shutdown() }
        try rig.service.jump(to: 0)
        try rig.service.play()
        rig.hear(20)
        try rig.service.seek(to: 0)
        rig.hear(9)
        #expect(rig.listens.isEmpty)
        rig.hear(2)
        #expect(rig.listens.count == 1)
    }

    @Test("repeat one: each time round is a listen")
    func repeatOne() throws {
        let rig = Rig(seconds: 40)
        defer { rig.service.shutdown() }
        rig.service.setRepeatMode(.one)
        try rig.service.jump(to: 0)
        try rig.service.play()
        rig.hear(121)
        #expect(rig.listens.count == 3 && rig.playingNow == 4)
    }

    @Test("heard audio is counted to the frame at a seek, a pause and a stop, not to the last position report (every 10 s here)")
    func exactAtEachChange() throws {
        let rig = Rig(seconds: 40, positionInterval: 10)  // counts at 20 s heard
        defer { rig.service.shutdown() }
        try rig.service.jump(to: 0)
        try rig.service.play()
        rig.hear(12)  // the last report said 10 s
        try rig.service.seek(to: 0)
        #expect(abs(rig.counter.withLock { $0.heardSeconds } - 12) < 0.001, "\(rig.counter.withLock { $0.heardSeconds })")
        rig.hear(3)
        try rig.service.pause()
        #expect(abs(rig.counter.withLock { $0.heardSeconds } - 15) < 0.001, "\(rig.counter.withLock { $0.heardSeconds })")
        rig.hear(60)
        try rig.service.play()
        rig.hear(5.5)  // 20.5 s heard in all; no report since the seek's
        #expect(rig.listens.isEmpty)
        rig.service.stop()
        #expect(rig.listens.count == 1 && abs((rig.listens.first ?? 0) - 20.5) < 0.001, "\(rig.listens)")
    }
}
