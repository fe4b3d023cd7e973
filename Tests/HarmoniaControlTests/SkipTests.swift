// Next and previous in the application layer, the one skip of every frontend
// (specs/application.md §Next and previous). Compared with real MPD on a
// real server by HarmoniaPlayEdgesTests (Tests/MPD/session_edges.txt).
import HarmoniaControl
import HarmoniaCore
import HarmoniaTestSupport
import Testing

@Suite("PlayerActions next and previous")
struct SkipTests {
    /// Actions on a service whose queue holds a, b and c (counter tracks of 50,000 frames).
    private func actions() -> PlayerActions {
        let sources: [String: CounterDecoder.Source] = ["a": .init(frames: 50_000), "b": .init(frames: 50_000),
                                                        "c": .init(frames: 50_000)]
        let service = DefaultPlaybackService(decoder: CounterDecoder(sources), output: NullAudioOutput(pace: .manual),
                                             clock: ManualClock())
        service.enqueue(["a", "b", "c"].map { Track(url: $0) })
        return PlayerActions(service: service)
    }

    @Test("from paused, next and previous play the entry they go to; playing stays playing")
    func fromPaused() throws {
        let actions = actions(), service = actions.service
        defer { service.shutdown() }
        try service.jump(to: 0)
        try service.play()
        try service.pause()
        try actions.next()
        #expect(service.currentIndex == 1)
        #expect(service.state == .playing)
        try service.pause()
        try actions.previous()
        #expect(service.currentIndex == 0)
        #expect(service.state == .playing)
        try actions.next()
        #expect(service.currentIndex == 1)
        #expect(service.state == .playing)
        // At the first entry, previous restarts it, playing.
        try service.jump(to: 0)
        try service.pause()
        try actions.previous()
        #expect(service.currentIndex == 0)
        #expect(service.state == .playing)
    }

    @Test("past the last entry, next stops with no entry current; stopped, a skip fails and the player stays stopped")
    func endAndStopped() throws {
        let actions = actions(), service = actions.service
        defer { service.shutdown() }
        try service.jump(to: 2)
        try service.play()
        try service.pause()
        try actions.next()
        #expect(service.state == .stopped)
        #expect(service.currentIndex == nil)
        #expect(throws: CoreError.self) { try actions.next() }
        #expect(throws: CoreError.self) { try actions.previous() }
        #expect(service.state == .stopped)
        // Play then starts the queue again from its first entry, as MPD's does.
        try actions.play()
        #expect(service.currentIndex == 0)
    }
}
