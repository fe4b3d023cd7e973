// SPSCRingBuffer: specs/realtime.md §SPSCRingBuffer. These tests also run
// under ThreadSanitizer (`make test`).
import Foundation
import HarmoniaCore
import HarmoniaTestSupport
import Synchronization
import Testing

@Suite("SPSCRingBuffer")
struct SPSCRingBufferTests {
    private func frames(_ values: [Float]) -> [Float] { values }

    @Test("capacity rounds up to a power of two; a new ring is empty")
    func capacity() {
        #expect(SPSCRingBuffer(minimumCapacity: 1, channels: 1).capacity == 2)
        #expect(SPSCRingBuffer(minimumCapacity: 1000, channels: 2).capacity == 1024)
        #expect(SPSCRingBuffer(minimumCapacity: 1024, channels: 2).capacity == 1024)
        let ring = SPSCRingBuffer(minimumCapacity: 8, channels: 2)
        #expect(ring.readableFrames == 0)
        #expect(ring.writableFrames == 8)
        var out = [Float](repeating: -1, count: 4)
        #expect(ring.read(into: &out, frames: 2) == 0)
        #expect(out == [-1, -1, -1, -1])
    }

    @Test("full: a write takes only what fits; empty: a read returns only what is there")
    func fullAndEmpty() {
        let ring = SPSCRingBuffer(minimumCapacity: 4, channels: 2)
        let data: [Float] = (0..<12).map(Float.init)
        #expect(ring.write(data, frames: 6) == 4)          // only 4 frames fit
        #expect(ring.writableFrames == 0)
        #expect(ring.write(data, frames: 1) == 0)
        var out = [Float](repeating: 0, count: 12)
        #expect(ring.read(into: &out, frames: 3) == 3)     // partial read
        #expect(Array(out[0..<6]) == [0, 1, 2, 3, 4, 5])
        #expect(ring.readableFrames == 1)
        #expect(ring.read(into: &out, frames: 6) == 1)     // asks for more than there is
        #expect(Array(out[0..<2]) == [6, 7])
        #expect(ring.read(into: &out, frames: 6) == 0)
        #expect(ring.framesWritten == 4 && ring.framesRead == 4)
    }

    @Test("wrap-around: data crossing the end comes back in order, through two spans")
    func wrapAround() {
        let ring = SPSCRingBuffer(minimumCapacity: 8, channels: 1)
        var next: Float = 0, expected: Float = 0
        var out = [Float](repeating: 0, count: 8)
        for round in 0..<50 {
            let n = 1 + round % 7
            let chunk = (0..<n).map { _ in defer { next += 1 }; return next }
            #expect(ring.write(chunk, frames: n) == n)
            if round % 3 == 0 {
                let spans = ring.readSpans(maxFrames: 8)
                let count = spans.first.count + spans.second.count
                let all = Array(spans.first) + Array(spans.second)
                #expect(all == (0..<count).map { expected + Float($0) })
                expected += Float(count)
                ring.commitRead(frames: count)
            } else {
                let got = ring.read(into: &out, frames: 8)
                #expect(Array(out[0..<got]) == (0..<got).map { expected + Float($0) })
                expected += Float(got)
            }
        }
        #expect(ring.framesWritten > 3 * ring.capacity)  // it really wrapped
    }

    @Test("writeSpans/commitWrite fill the ring in place")
    func writeInPlace() {
        let ring = SPSCRingBuffer(minimumCapacity: 4, channels: 1)
        #expect(ring.write([9, 9, 9], frames: 3) == 3)
        var sink = [Float](repeating: 0, count: 3)
        #expect(ring.read(into: &sink, frames: 3) == 3)   // indices at 3: free space wraps
        let spans = ring.writeSpans(maxFrames: 10)
        #expect(spans.first.count == 1 && spans.second.count == 3)
        for i in spans.first.indices { spans.first[i] = 1 }
        for i in spans.second.indices { spans.second[i] = Float(2 + i) }
        ring.commitWrite(frames: 4)
        var out = [Float](repeating: 0, count: 4)
        #expect(ring.read(into: &out, frames: 4) == 4)
        #expect(out == [1, 2, 3, 4])
    }

    @Test("requestDiscard drops what was written before it, keeps what comes after")
    func producerDiscard() {
        let ring = SPSCRingBuffer(minimumCapacity: 16, channels: 1)
        ring.write([1, 2, 3, 4], frames: 4)
        var out = [Float](repeating: 0, count: 16)
        #expect(ring.read(into: &out, frames: 1) == 1)     // 1 consumed
        ring.requestDiscard()                               // 2, 3, 4 are stale
        #expect(ring.readableFrames == 0)
        ring.write([7, 8], frames: 2)
        #expect(ring.readableFrames == 2)
        #expect(ring.read(into: &out, frames: 16) == 2)
        #expect(Array(out[0..<2]) == [7, 8])
        ring.requestDiscard()                               // nothing stale: no effect
        #expect(ring.readableFrames == 0)
        ring.write([5], frames: 1)
        #expect(ring.read(into: &out, frames: 16) == 1 && out[0] == 5)
    }

    @Test("discardReadable (consumer side) empties the ring at once and frees the space")
    func consumerDiscard() {
        let ring = SPSCRingBuffer(minimumCapacity: 4, channels: 2)
        ring.write([Float](repeating: 1, count: 8), frames: 4)
        #expect(ring.writableFrames == 0)
        ring.discardReadable()
        #expect(ring.readableFrames == 0)
        #expect(ring.writableFrames == 4)
        ring.write([Float](repeating: 2, count: 8), frames: 4)
        var out = [Float](repeating: 0, count: 8)
        #expect(ring.read(into: &out, frames: 4) == 4 && out.allSatisfy { $0 == 2 })
    }

    /// Two threads, a counter signal: no frame lost, duplicated or reordered.
    /// Each frame carries its index in two exactly representable halves.
    /// Producer and consumer are both real threads, as in playback (decode
    /// thread, audio thread); the test only waits for them to finish.
    static func stress(frames total: Int, capacity: Int) -> (received: Int, errors: Int) {
        let ring = SPSCRingBuffer(minimumCapacity: capacity, channels: 2)
        let result = LockedValue((received: 0, errors: 0))
        Threads.run([{
            let chunk = 509  // prime: chunks never line up with the capacity
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: chunk * 2)
            defer { buffer.deallocate() }
            var sent = 0
            while sent < total {
                let n = min(chunk, total - sent)
                for i in 0..<n {
                    let value = sent + i
                    buffer[2 * i] = Float(value & 0xFFFF)
                    buffer[2 * i + 1] = Float(value >> 16)
                }
                var offset = 0
                while offset < n {
                    offset += ring.write(buffer + 2 * offset, frames: n - offset)  // spins when full
                }
                sent += n
            }
        }, {
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 1024 * 2)
            defer { buffer.deallocate() }
            var received = 0, errors = 0
            while received < total {
                let n = ring.read(into: buffer, frames: 1 + received % 1023)
                for i in 0..<n {
                    let value = Int(buffer[2 * i]) | Int(buffer[2 * i + 1]) << 16
                    if value != received + i { errors += 1 }
                }
                received += n
            }
            result.withLock { $0 = (received, errors) }
        }])
        return result.withLock { $0 }
    }

    @Test("two threads, a counter signal: no loss, no duplicate, no reorder")
    func twoThreadStress() {
        // Hundreds of millions of frames normally; fewer under ThreadSanitizer,
        // which checks every access and slows them twentyfold.
        let sanitized = ProcessInfo.processInfo.environment["HARMONIA_TSAN"] != nil
        let total = sanitized ? 4_000_000 : 200_000_000
        let result = Self.stress(frames: total, capacity: 4096)
        #expect(result.received == total)
        #expect(result.errors == 0)
    }

    @Test("two threads with discards: after a discard only newer frames arrive, still in order")
    func stressWithDiscard() {
        let ring = SPSCRingBuffer(minimumCapacity: 256, channels: 1)
        let rounds = 2_000
        let done = Atomic<Bool>(false)
        let seen = LockedValue((last: Float(-1), ordered: true, count: 0))
        Threads.run([{
            var value = 0
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 64)
            defer { buffer.deallocate() }
            for round in 0..<rounds {
                if round % 10 == 0 { ring.requestDiscard() }
                for i in 0..<64 { buffer[i] = Float(value + i) }
                var offset = 0
                while offset < 64 { offset += ring.write(buffer + offset, frames: 64 - offset) }
                value += 64
            }
            done.store(true, ordering: .releasing)
        }, {
            var last: Float = -1, ordered = true, count = 0
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 100)
            defer { buffer.deallocate() }
            while true {
                let finished = done.load(ordering: .acquiring)
                let n = ring.read(into: buffer, frames: 37)
                for i in 0..<n {
                    if buffer[i] <= last { ordered = false }
                    last = buffer[i]
                }
                count += n
                if finished && n == 0 && ring.readableFrames == 0 { break }
            }
            seen.withLock { $0 = (last, ordered, count) }
        }])
        let result = seen.withLock { $0 }
        #expect(result.ordered)
        #expect(result.last == Float(rounds * 64 - 1))  // the last frame always arrives
        #expect(result.count <= rounds * 64)
    }
}
