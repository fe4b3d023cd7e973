// The decode thread holds the service only for one pass, never across its
// wait (specs/services.md §Threads): an application that lets go of a
// service without calling shutdown() gets it freed, its threads ended.
import HarmoniaCore
import Testing

@Suite("PlaybackService lifetime")
struct ServiceLifetimeTests {
    @Test("a service let go while its decode thread sleeps (playing) is freed")
    func freedWhilePlaying() throws {
        weak var released: DefaultPlaybackService?
        let clock: ManualClock
        do {
            let h = ServiceHarness(["a": .init(frames: 44_100 * 10, base: 1)])
            clock = h.clock
            try h.service.load(url: "a")
            try h.service.play()
            h.listen(frames: 4410)
            // The decode thread is inside its timed wait: past its pass.
            clock.waitForSleepers(1)
            released = h.service
        }
        #expect(released == nil, "the sleeping decode thread kept the service alive")
    }
}
