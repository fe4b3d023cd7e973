// The decode loop reuses its buffers: specs/ports.md §DecoderPort ("the
// steady-state loop allocates nothing"). Heap allocations are counted inside
// every `read` after the first two, and attributed by who called malloc.
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaTestSupport
import Testing

private let bank = MallocCounterBank(2)

@Suite("FFmpegDecoderAdapter allocations")
struct DecodeLoopAllocationTests {
    @Test("steady-state reads: no heap allocation by our code; FFmpeg's own are reported",
          .enabled(if: MallocCounterBank.isActive, "the malloc counter is off under sanitizers"),
          .serialized, arguments: Fixtures.all)  // one bank: one case at a time
    func steadyStateReads(fixture: Fixture) throws {
        let decoder = FFmpegDecoderAdapter()
        let handle = try decoder.open(url: fixture.path)
        defer { decoder.close(handle) }
        let channels = try decoder.info(handle).channels
        let frames = 1024
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: frames * channels)
        defer { buffer.deallocate() }
        // Warm-up: the first reads may size what the session reuses after.
        for _ in 0..<2 { _ = try decoder.read(handle, into: buffer, maxFrames: frames) }

        bank.reset(attributingTo: "/libav", skippingFirstSection: true)
        // Full reads only: the last one also meets the end of the stream,
        // whose checks (reading the file's tail) run once per file.
        var reads = 0, decoded = 0, allocations = 0, byFFmpeg = 0
        while true {
            let before = (bank.allocations, bank.attributed)
            bank.enter()
            let got = try decoder.read(handle, into: buffer, maxFrames: frames)
            bank.leave()
            if got < frames { break }
            reads += 1
            decoded += got
            allocations += bank.allocations - before.0
            byFFmpeg += bank.attributed - before.1
        }
        for stack in bank.unattributedStacks() where allocations > byFFmpeg { print("[decode alloc] \(fixture): " + stack) }
        print("[decode alloc] \(fixture): \(reads) full reads of \(frames) frames (\(decoded) frames): "
            + "\(allocations) heap allocations, \(byFFmpeg) of them by FFmpeg's libraries (packets), \(allocations - byFFmpeg) by our code")
        #expect(reads >= 3, "\(fixture): enough steady-state reads to count")
        #expect(allocations - byFFmpeg == 0, "\(fixture): our decode loop allocates nothing once running")
    }
}
