// ordo-one/benchmark suite: allocations per write and read through
// SPSCRingBuffer (must be 0) and, as a peer, the mutex ring, counted by the
// package's malloc interposer. Each iteration writes one block of 256 stereo
// frames and reads it back, on one thread: the steady state of both sides.
import Benchmark
import BenchSupport
import HarmoniaCore

let blockFrames = 256
let channels = 2
let operationsPerIteration = 1000

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.wallClock, .throughput, .mallocCountTotal],
        warmupIterations: 10,
        scalingFactor: .one,
        maxDuration: .seconds(2),
        maxIterations: 2000
    )

    Benchmark("SPSCRingBuffer write+read 256 frames x1000") { benchmark in
        writeAndRead(SPSCRingBuffer(minimumCapacity: 8192, channels: channels), benchmark)
    }

    Benchmark("MutexRing write+read 256 frames x1000") { benchmark in
        writeAndRead(MutexRing(minimumCapacity: 8192, channels: channels), benchmark)
    }

    // Control: proves the counter counts — one heap allocation per
    // write/read pair must read as 1000 per iteration.
    Benchmark("control: one allocation per write+read x1000") { benchmark in
        writeAndRead(SPSCRingBuffer(minimumCapacity: 8192, channels: channels), benchmark, allocatingEachRead: true)
    }
}

/// One iteration: `operationsPerIteration` writes of one block into `ring`
/// and reads of it back, measured; with `allocatingEachRead` (the control)
/// each read goes into a freshly allocated buffer.
func writeAndRead(_ ring: some FrameRing, _ benchmark: Benchmark, allocatingEachRead: Bool = false) {
    let block = UnsafeMutablePointer<Float>.allocate(capacity: blockFrames * channels)
    block.initialize(repeating: 0.5, count: blockFrames * channels)
    defer { block.deallocate() }
    benchmark.startMeasurement()
    for _ in 0..<operationsPerIteration {
        let destination = allocatingEachRead ? .allocate(capacity: blockFrames * channels) : block
        blackHole(ring.write(block, frames: blockFrames))
        blackHole(ring.read(into: destination, frames: blockFrames))
        if allocatingEachRead { destination.deallocate() }
    }
    benchmark.stopMeasurement()
}
