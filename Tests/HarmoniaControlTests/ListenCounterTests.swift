// The rule on heard audio, at its edges — specs/listens.md §The rule
import Foundation
import HarmoniaControl
import HarmoniaCore
import Testing

@Suite("ListenCounter: what counts as a listen") struct ListenCounterTests {
    static let id = UUID()
    static func track(_ duration: Double?) -> Track { Track(url: "/m/a.flac", id: id, title: "T", artist: "A", duration: duration) }

    /// A counter playing `track` from its start at wall-clock `start`.
    static func playing(_ track: Track, start: Double = 1_700_000_000) -> (ListenCounter, [ListenNotice]) {
        var counter = ListenCounter()
        var notices = counter.observe(.trackStarted(index: 0, track: track), now: start)
        notices += counter.observe(.stateChanged(.playing), now: start + 0.25)
        return (counter, notices)
    }

    /// Position reports every 0.5 s from `from` to `to` (heard).
    static func hear(_ counter: inout ListenCounter, from: Double, to: Double, duration: Double) -> [ListenNotice] {
        var notices: [ListenNotice] = []
        var position = from
        while position < to {
            position = min(position + 0.5, to)
            notices += counter.observe(.position(seconds: position, duration: duration), now: 0)
        }
        return notices
    }

    static func counted(_ notices: [ListenNotice]) -> [(listenedAt: Int64, heard: Double)] {
        notices.compactMap { if case .counted(_, let at, let heard, _) = $0 { (at, heard) } else { nil } }
    }

    @Test("thresholds: half the length, at most 4 min; never under 30 s")
    func thresholds() {
        #expect(ListenRule.threshold(duration: 29.99) == nil)
        #expect(ListenRule.threshold(duration: nil) == nil)
        #expect(ListenRule.threshold(duration: .nan) == nil)
        #expect(ListenRule.threshold(duration: 30) == 15)
        #expect(ListenRule.threshold(duration: 200) == 100)
        #expect(ListenRule.threshold(duration: 480) == 240)
        #expect(ListenRule.threshold(duration: 3600) == 240)
    }

    @Test("49 % heard then stopped: nothing; 51 %: one listen, first heard when play started")
    func halfway() {
        var (counter, notices) = Self.playing(Self.track(100))
        #expect(notices == [.playingNow(Self.track(100), at: 1_700_000_000)])
        #expect(Self.counted(Self.hear(&counter, from: 0, to: 49, duration: 100)).isEmpty)
        #expect(Self.counted(counter.observe(.trackEnded(index: 0, track: Self.track(100), reason: .stopped), now: 0)).isEmpty)

        (counter, _) = Self.playing(Self.track(100))
        let heard = Self.counted(Self.hear(&counter, from: 0, to: 51, duration: 100))
        #expect(heard.count == 1 && heard[0].listenedAt == 1_700_000_000 && heard[0].heard == 50)
        // It counts once: the rest of the track adds nothing.
        #expect(Self.counted(Self.hear(&counter, from: 51, to: 100, duration: 100)).isEmpty)
        #expect(Self.counted(counter.observe(.trackEnded(index: 0, track: Self.track(100), reason: .finished), now: 0)).isEmpty)
    }

    @Test("a long file counts at 4 minutes heard")
    func fourMinutes() {
        var (counter, _) = Self.playing(Self.track(1200))
        #expect(Self.counted(Self.hear(&counter, from: 0, to: 239.5, duration: 1200)).isEmpty)
        #expect(Self.counted(Self.hear(&counter, from: 239.5, to: 240, duration: 1200)).count == 1)
    }

    @Test("under 30 s never counts, even heard whole")
    func short() {
        var (counter, _) = Self.playing(Self.track(29.5))
        var notices = Self.hear(&counter, from: 0, to: 29.5, duration: 29.5)
        notices += counter.observe(.trackEnded(index: 0, track: Self.track(29.5), reason: .finished), now: 0)
        #expect(Self.counted(notices).isEmpty)
    }

    @Test("paused time counts nothing; heard audio either side of a pause adds up")
    func pause() {
        var (counter, _) = Self.playing(Self.track(100))
        _ = Self.hear(&counter, from: 0, to: 30, duration: 100)
        _ = counter.observe(.stateChanged(.paused), now: 0)
        // Paused for an hour: no position moves.
        #expect(Self.counted(counter.observe(.stateChanged(.playing), now: 3600)).isEmpty)
        #expect(counter.heardSeconds == 30)
        #expect(Self.counted(Self.hear(&counter, from: 30, to: 49.5, duration: 100)).isEmpty)
        #expect(Self.counted(Self.hear(&counter, from: 49.5, to: 50, duration: 100)).count == 1)
    }

    @Test("a seek forward does not count what it skipped")
    func seekForward() {
        var (counter, _) = Self.playing(Self.track(100))
        _ = Self.hear(&counter, from: 0, to: 10, duration: 100)
        counter.seeked(to: 80)
        _ = counter.observe(.position(seconds: 80, duration: 100), now: 0)
        var notices = Self.hear(&counter, from: 80, to: 100, duration: 100)
        notices += counter.observe(.trackEnded(index: 0, track: Self.track(100), reason: .finished), now: 0)
        #expect(Self.counted(notices).isEmpty)
        #expect(counter.heardSeconds == 0)  // the track is over
    }

    @Test("a seek back counts the audio heard twice, up to the track's length")
    func seekBack() {
        var (counter, _) = Self.playing(Self.track(60))
        _ = Self.hear(&counter, from: 0, to: 20, duration: 60)
        counter.seeked(to: 0)
        #expect(Self.counted(Self.hear(&counter, from: 0, to: 9.5, duration: 60)).isEmpty)
        #expect(counter.heardSeconds == 29.5)
        #expect(Self.counted(Self.hear(&counter, from: 9.5, to: 10, duration: 60)).count == 1)
        // Over and over: never more than the length.
        for _ in 0..<5 {
            counter.seeked(to: 0)
            _ = Self.hear(&counter, from: 0, to: 60, duration: 60)
        }
        #expect(counter.heardSeconds == 60)
    }

    @Test("a position going back without a seek event counts nothing for that step")
    func backwards() {
        var (counter, _) = Self.playing(Self.track(100))
        _ = Self.hear(&counter, from: 0, to: 20, duration: 100)
        _ = counter.observe(.position(seconds: 5, duration: 100), now: 0)
        #expect(counter.heardSeconds == 20)
    }

    @Test("repeat one: each time round is a new listen, with its own listened_at")
    func repeatOne() {
        let track = Self.track(40)
        var (counter, _) = Self.playing(track, start: 1_700_000_000)
        var listens: [(listenedAt: Int64, heard: Double)] = []
        for round in 0..<3 {
            if round > 0 {
                let notices = counter.observe(.trackStarted(index: 0, track: track), now: 1_700_000_000 + Double(round) * 40)
                #expect(notices == [.playingNow(track, at: 1_700_000_000 + Int64(round) * 40)])
            }
            listens += Self.counted(Self.hear(&counter, from: 0, to: 39.8, duration: 40))
            listens += Self.counted(counter.observe(.trackEnded(index: 0, track: track, reason: .finished), now: 0))
        }
        #expect(listens.map(\.listenedAt) == [1_700_000_000, 1_700_000_040, 1_700_000_080])
    }

    @Test("a track that played through to its end without position reports (a fast file output) counts whole")
    func finishedWithoutTicks() {
        var (counter, _) = Self.playing(Self.track(45))
        let notices = counter.observe(.trackEnded(index: 0, track: Self.track(45), reason: .finished), now: 0)
        #expect(Self.counted(notices).first?.heard == 45)
    }

    @Test("a track made current while paused is first heard when play starts; never heard, never a listen")
    func startedPaused() {
        var counter = ListenCounter()
        #expect(counter.observe(.trackStarted(index: 0, track: Self.track(100)), now: 100).isEmpty)
        #expect(counter.observe(.stateChanged(.playing), now: 1_700_000_500) == [.playingNow(Self.track(100), at: 1_700_000_500)])
        counter = ListenCounter()
        _ = counter.observe(.trackStarted(index: 0, track: Self.track(100)), now: 100)
        #expect(Self.counted(counter.observe(.trackEnded(index: 0, track: Self.track(100), reason: .finished), now: 0)).isEmpty)
    }

    @Test("a track that failed mid-way counts only what was heard")
    func failed() {
        var (counter, _) = Self.playing(Self.track(100))
        _ = Self.hear(&counter, from: 0, to: 40, duration: 100)
        #expect(Self.counted(counter.observe(.trackEnded(index: 0, track: Self.track(100), reason: .failed), now: 0)).isEmpty)
    }

    @Test("the length comes from position reports when the track did not say")
    func lengthFromPositions() {
        var (counter, _) = Self.playing(Self.track(nil))
        #expect(Self.counted(Self.hear(&counter, from: 0, to: 31, duration: 60)).count == 1)
    }

    @Test("retry delays: 1 s doubling to 5 min, jittered 75–125 %, never above 5 min")
    func retryPolicy() {
        let policy = ListenRetryPolicy()
        #expect(policy.delay(afterFailures: 1, jitter: 0.5) == 1)
        #expect(policy.delay(afterFailures: 2, jitter: 0.5) == 2)
        #expect(policy.delay(afterFailures: 4, jitter: 0) == 6)
        #expect(policy.delay(afterFailures: 4, jitter: 1) == 10)
        #expect(policy.delay(afterFailures: 9, jitter: 0.5) == 256)
        #expect(policy.delay(afterFailures: 10, jitter: 1) == 300)
        #expect(policy.delay(afterFailures: Int.max, jitter: .nan) == 300)
        #expect(policy.delay(afterFailures: 0, jitter: 0.5) == 1)
    }
}
