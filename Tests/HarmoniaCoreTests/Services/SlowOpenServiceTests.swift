// A slow open (a network source that does not answer) holds no lock:
// control calls are answered while it is in flight, and the call that opens
// is superseded by a later stop (specs/services.md §Threads).
import Dispatch
import Foundation
import HarmoniaCore
import HarmoniaTestSupport
import Testing

@Suite("PlaybackService slow opens") struct SlowOpenServiceTests {
    /// Runs `body` on a thread of its own; true when it returned before the
    /// (generous) deadline, false when it is still blocked (a held lock).
    private func returns(_ body: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread { body(); done.signal() }.start()
        return done.wait(timeout: .now() + 10) == .success
    }

    @Test("pause and stop are answered while jump's open is in flight; the stop supersedes the jump, whose session is closed")
    func stopDuringJump() throws {
        // "a" is longer than the decode-ahead distance (2 s), so the decode
        // thread never opens "net" early: the stalled open is the jump's.
        let h = ServiceHarness(["a": .init(frames: 441_000), "net": .init(frames: 441_000, stallOpen: true)])
        h.service.enqueue([Track(url: "a"), Track(url: "net")])
        try h.service.jump(to: 0)
        try h.service.play()
        let jumped = LockedValue<CoreError?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread { [service = h.service] in
            do throws(CoreError) { try service.jump(to: 1) } catch { jumped.withLock { $0 = error } }
            done.signal()
        }.start()
        h.decoder.waitUntilStalled("net")

        let answered1 = returns { [service = h.service] in try? service.pause() }
        #expect(answered1)
        #expect(h.service.state == .paused)
        let answered2 = returns { [service = h.service] in _ = service.queue; _ = service.currentTime() }
        #expect(answered2)
        let answered3 = returns { [service = h.service] in service.stop() }
        #expect(answered3)
        #expect(h.service.state == .stopped)

        h.decoder.release("net")
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(jumped.withLock { $0 } == nil, "a superseded jump returns without an error")
        h.settle()
        #expect(h.service.state == .stopped)
        #expect(h.decoder.openSessionCount == 0, "the superseded open's session is closed")
    }

    @Test("a pause made while jump opens is kept: the track opens paused")
    func pauseDuringJump() throws {
        // "a" is longer than the decode-ahead distance (2 s), so the decode
        // thread never opens "net" early: the stalled open is the jump's.
        let h = ServiceHarness(["a": .init(frames: 441_000), "net": .init(frames: 441_000, stallOpen: true)])
        h.service.enqueue([Track(url: "a"), Track(url: "net")])
        try h.service.jump(to: 0)
        try h.service.play()
        let done = DispatchSemaphore(value: 0)
        Thread { [service = h.service] in try? service.jump(to: 1); done.signal() }.start()
        h.decoder.waitUntilStalled("net")
        let answered4 = returns { [service = h.service] in try? service.pause() }
        #expect(answered4)
        h.decoder.release("net")
        #expect(done.wait(timeout: .now() + 10) == .success)
        #expect(h.service.state == .paused)
        #expect(h.service.currentIndex == 1)
    }

    @Test("the decode thread opens the next track with the engine released: stop is answered, the open is dropped")
    func stopDuringEarlyOpen() throws {
        // "a" ends within the decode-ahead distance at once: the next is opened early.
        let h = ServiceHarness(["a": .init(frames: 4_410), "net": .init(frames: 441_000, stallOpen: true)])
        h.service.enqueue([Track(url: "a"), Track(url: "net")])
        try h.service.jump(to: 0)
        try h.service.play()
        h.decoder.waitUntilStalled("net")
        let answered5 = returns { [service = h.service] in try? service.pause() }
        #expect(answered5)
        #expect(h.service.state == .paused)
        let answered6 = returns { [service = h.service] in service.stop() }
        #expect(answered6)
        h.decoder.release("net")
        h.settle()
        #expect(h.service.state == .stopped)
        #expect(h.decoder.openSessionCount == 0)
    }
}
