// The service's rules on scripted sources (specs/services.md). Vectors in
// specs/vectors check the same rules against the real adapters.
import Foundation
import HarmoniaCore
import HarmoniaTestSupport
import Testing

@Suite("PlaybackService") struct PlaybackServiceTests {
    static let second: Int64 = 44_100

    @Test("the reference's state table, stopped and paused rows")
    func stateTable() throws {
        let h = ServiceHarness(["a": .init(frames: 3 * Self.second)])
        let s = h.service
        #expect(s.state == .stopped)
        #expect(throws: CoreError.self) { try s.play() }
        try s.pause()
        s.stop()
        #expect(s.state == .stopped)
        #expect(throws: CoreError.invalidState("seek: nothing is loaded; load a file first")) { try s.seek(to: 1) }
        try s.load(url: "a")
        #expect(s.state == .paused)
        #expect(s.duration() == 3)
        #expect(s.currentTime() == 0)
        try s.pause()
        #expect(s.state == .paused)
        try s.play()
        #expect(s.state == .playing)
        try s.play()
        #expect(s.state == .playing)
        try s.pause()
        #expect(s.state == .paused)
        s.stop()
        #expect(s.state == .stopped)
        #expect(s.currentTime() == 0)
        #expect(s.duration() == 0)
    }

    @Test("a failed load enters error; play, pause and seek throw invalidState; load recovers")
    func errorState() throws {
        let h = ServiceHarness(["good": .init(frames: Self.second),
                                "bad": .init(frames: 1, openError: .unsupported("bad: not audio"))])
        let s = h.service
        #expect(throws: CoreError.unsupported("bad: not audio")) { try s.load(url: "bad") }
        #expect(s.state == .error(.unsupported("bad: not audio")))
        #expect(h.events.contains(.error(.unsupported("bad: not audio"), url: "bad")))
        #expect(throws: CoreError.self) { try s.play() }
        #expect(throws: CoreError.self) { try s.pause() }
        #expect(throws: CoreError.self) { try s.seek(to: 0) }
        #expect(throws: CoreError.notFound("missing: no such file")) { try s.load(url: "missing") }
        try s.load(url: "good")
        #expect(s.state == .paused)
        s.stop()
        #expect(s.state == .stopped)
    }

    @Test("pause then play loses and repeats no frame; position frozen while paused")
    func pauseResumeIsExact() throws {
        let h = ServiceHarness(["a": .init(frames: 10 * Self.second)])
        try h.service.load(url: "a")
        try h.service.play()
        var heard = h.listen(frames: 30_000)
        try h.service.pause()
        let frozen = h.service.currentTime()
        #expect(h.listen(frames: 20_000).isEmpty)
        #expect(h.service.currentTime() == frozen)
        #expect(frozen == Double(heard.count) / 44_100)
        try h.service.play()
        heard += h.listen(frames: 30_000)
        #expect(heard.count == 60_000)
        #expect(heard.first == 0)
        #expect(isCounting(heard[...]))
        #expect(h.service.currentTime() == 60_000.0 / 44_100)
    }

    @Test("seek is sample-accurate: the next frame heard is the sought one; seeking paused stays paused")
    func seekIsExact() throws {
        let h = ServiceHarness(["a": .init(frames: 10 * Self.second)])
        try h.service.load(url: "a")
        try h.service.play()
        h.listen(frames: 10_000)
        try h.service.seek(to: 5)
        #expect(h.service.currentTime() == 5)
        #expect(h.events.contains(.seekCompleted(seconds: 5)))
        let heard = h.listen(frames: 5_000)
        #expect(heard.first == Float(5 * Self.second))
        #expect(isCounting(heard[...]))
        try h.service.pause()
        try h.service.seek(to: 1.5)
        #expect(h.service.state == .paused)
        #expect(h.service.currentTime() == 1.5)
        try h.service.play()
        #expect(h.listen(frames: 100).first == Float(Self.second * 3 / 2))
        #expect(throws: CoreError.self) { try h.service.seek(to: -1) }
        #expect(throws: CoreError.self) { try h.service.seek(to: 10.5) }
        #expect(throws: CoreError.self) { try h.service.seek(to: .nan) }
    }

    @Test("position advances with what is heard, not with what is decoded")
    func positionIsHeard() throws {
        let h = ServiceHarness(["a": .init(frames: 10 * Self.second)])
        try h.service.load(url: "a")
        try h.service.play()
        h.listen(frames: 4410)
        #expect(h.service.currentTime() == 0.1)
        h.listen(frames: 44_100)
        #expect(h.service.currentTime() == 1.1)
    }
}
