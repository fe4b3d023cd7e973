// Two threads, one ring: the producer writes blocks of `block` frames until
// `totalFrames` have gone in, the consumer reads blocks until they have all
// come out. A side that finds the ring full (empty) yields the CPU and
// retries, as both rings are measured the same way.
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaCore
import Synchronization

public struct PumpResult: Sendable {
    public var frames: Int
    public var seconds: Double
    /// Sum of the first-channel sample of every frame read: keeps the copies honest
    /// and checks that every frame came through (see `expectedChecksum`).
    public var checksum: Double
    public var framesPerSecond: Double { Double(frames) / seconds }
}

/// What both rings offer: the two rings are measured through the same code.
public protocol FrameRing: AnyObject, Sendable {
    func write(_ source: UnsafePointer<Float>, frames: Int) -> Int
    func read(into destination: UnsafeMutablePointer<Float>, frames: Int) -> Int
}

extension SPSCRingBuffer: FrameRing {}
extension MutexRing: FrameRing {}

/// Frames per second through SPSCRingBuffer.
public func pumpSPSC(capacity: Int, channels: Int, block: Int, totalFrames: Int) -> PumpResult {
    pump(SPSCRingBuffer(minimumCapacity: capacity, channels: channels), channels: channels, block: block, totalFrames: totalFrames)
}

/// Frames per second through MutexRing.
public func pumpMutex(capacity: Int, channels: Int, block: Int, totalFrames: Int) -> PumpResult {
    pump(MutexRing(minimumCapacity: capacity, channels: channels), channels: channels, block: block, totalFrames: totalFrames)
}

/// The checksum a complete, in-order pass produces.
public func expectedChecksum(block: Int, totalFrames: Int) -> Double {
    // The producer writes frame n with the value n % 1024 in every sample.
    // The consumer sums every sample of every frame: computed the same way.
    let periods = Double(totalFrames / 1024), rest = Double(totalFrames % 1024)
    return periods * (1023 * 1024 / 2) + rest * (rest - 1) / 2
}

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

@inline(never)
func pump<Ring: FrameRing>(_ ring: Ring, channels: Int, block: Int, totalFrames: Int) -> PumpResult {
    // Source: 1024 frames of a ramp, repeated, so a block starting at frame
    // n carries n % 1024, n % 1024 + 1, …
    let period = 1024
    let source = UnsafeMutablePointer<Float>.allocate(capacity: (period + block) * channels)
    for frame in 0..<(period + block) {
        for channel in 0..<channels { source[frame * channels + channel] = Float(frame % period) }
    }
    let start = StartFlag()
    let producer = spawnThread {
        while !start.flag.load(ordering: .acquiring) {}
        var written = 0
        while written < totalFrames {
            let n = ring.write(source + (written % period) * channels, frames: min(block, totalFrames - written))
            if n == 0 { sched_yield() }
            written += n
        }
    }
    let destination = UnsafeMutablePointer<Float>.allocate(capacity: block * channels)
    var read = 0
    var checksum = 0.0
    let t0 = now()
    start.flag.store(true, ordering: .releasing)
    while read < totalFrames {
        let n = ring.read(into: destination, frames: block)
        if n == 0 { sched_yield(); continue }
        // One sample per frame of the first channel: cheap, but touches every frame.
        var blockSum: Float = 0
        for frame in 0..<n { blockSum += destination[frame * channels] }
        checksum += Double(blockSum)
        read += n
    }
    let t1 = now()
    pthread_join(producer, nil)
    source.deallocate()
    destination.deallocate()
    return PumpResult(frames: totalFrames, seconds: t1 - t0, checksum: checksum)
}

private final class StartFlag: Sendable {
    let flag = Atomic<Bool>(false)
}

private final class ThreadBody {
    let body: () -> Void
    init(_ body: @escaping () -> Void) { self.body = body }
}

/// Starts a POSIX thread running `body`; join it with pthread_join.
public func spawnThread(_ body: @escaping () -> Void) -> pthread_t {
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { context in
        Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().body()
        return nil
    }, context)
    precondition(rc == 0, "pthread_create failed: \(rc)")
    return thread
}
