// Single mode in the application layer (specs/application.md §Single mode):
// which events make a song border. The pause itself is tested on a real
// server (HarmoniaPlayEdgesTests.singleOneshot).
import HarmoniaControl
import HarmoniaCore
import HarmoniaTestSupport
import Testing

@Suite("PlayerActions single mode")
struct SingleModeTests {
    private func actions() -> PlayerActions {
        let service = DefaultPlaybackService(decoder: CounterDecoder([:]), output: NullAudioOutput(pace: .manual), clock: ManualClock())
        return PlayerActions(service: service)
    }

    private let a = Track(url: "/music/a.flac"), b = Track(url: "/music/b.flac")

    @Test("oneshot is used at a border (a track finished, the next started) and turns off; announced as a queue change")
    func oneshotAtBorder() {
        let actions = actions()
        defer { actions.service.shutdown() }
        let changes = LockedValue(0)
        actions.service.observe { if $0 == .queueChanged { changes.withLock { $0 += 1 } } }
        actions.changeSingle(to: .oneshot)
        #expect(actions.singleMode == .oneshot)
        #expect(changes.withLock { $0 } == 1)
        #expect(!actions.followBorder(.trackEnded(index: 0, track: a, reason: .finished)))
        #expect(actions.followBorder(.trackStarted(index: 1, track: b)))
        #expect(actions.singleMode == .off)
        #expect(changes.withLock { $0 } == 2)
    }

    @Test("no border: a skip, the end of the queue and a later start, repeat one, single off")
    func notBorders() {
        let actions = actions()
        defer { actions.service.shutdown() }
        actions.changeSingle(to: .oneshot)
        // Skipped (next, jump): not a border.
        _ = actions.followBorder(.trackEnded(index: 0, track: a, reason: .skipped))
        #expect(!actions.followBorder(.trackStarted(index: 1, track: b)))
        // The queue ended, then a client played again: not a border.
        _ = actions.followBorder(.trackEnded(index: 1, track: b, reason: .finished))
        _ = actions.followBorder(.queueEnded)
        _ = actions.followBorder(.stateChanged(.stopped))
        #expect(!actions.followBorder(.trackStarted(index: 0, track: a)))
        #expect(actions.singleMode == .oneshot)
        // Repeat one: the engine repeats the track; single stays.
        actions.service.setRepeatMode(.one)
        _ = actions.followBorder(.trackEnded(index: 0, track: a, reason: .finished))
        #expect(!actions.followBorder(.trackStarted(index: 0, track: a)))
        #expect(actions.singleMode == .oneshot)
        // Setting the mode it has changes nothing.
        #expect(!actions.setSingle(.oneshot))
    }
}
