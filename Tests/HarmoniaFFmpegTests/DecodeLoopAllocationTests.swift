// The decode loop reuses its buffers: specs/ports.md §DecoderPort ("the
// steady-state loop allocates nothing"). Heap allocations are counted inside
// every `read` after the first two, and attributed by who called malloc.
import CMallocCounter
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaTestSupport
import Testing

/// This test's CMallocCounter bank (each counting test has its own: see the header).
private let decodeLoopBank: Int32 = 2

@Suite("FFmpegDecoderAdapter allocations")
struct DecodeLoopAllocationTests {
    @Test("steady-state reads: no heap allocation by our code; FFmpeg's own are reported",
          .enabled(if: hc_malloc_counter_active != 0, "the malloc counter is off under sanitizers"),
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

        hc_malloc_counter_reset(decodeLoopBank)
        hc_malloc_counter_attribute_to(decodeLoopBank, "/libav")
        hc_malloc_counter_mark(decodeLoopBank)  // the first section is counted apart: open one that does nothing
        hc_malloc_counter_mark(0)
        // Full reads only: the last one also meets the end of the stream,
        // whose checks (reading the file's tail) run once per file.
        var reads = 0, decoded = 0, allocations = 0, byFFmpeg = 0
        while true {
            let before = (hc_malloc_counter_allocations(decodeLoopBank), hc_malloc_counter_attributed(decodeLoopBank))
            hc_malloc_counter_mark(decodeLoopBank)
            let got = try decoder.read(handle, into: buffer, maxFrames: frames)
            hc_malloc_counter_mark(0)
            if got < frames { break }
            reads += 1
            decoded += got
            allocations += Int(hc_malloc_counter_allocations(decodeLoopBank) - before.0)
            byFFmpeg += Int(hc_malloc_counter_attributed(decodeLoopBank) - before.1)
        }
        for which in 0..<Int32(min(allocations - byFFmpeg, 4)) where allocations > byFFmpeg {
            var stack = [UnsafeMutableRawPointer?](repeating: nil, count: 10)
            let depth = Int(hc_malloc_counter_stack(decodeLoopBank, which, &stack, 10))
            print("[decode alloc] \(fixture): " + stack.prefix(depth).compactMap { $0.map { String(cString: hc_symbol_name($0)) } }.joined(separator: " < "))
        }
        print("[decode alloc] \(fixture): \(reads) full reads of \(frames) frames (\(decoded) frames): "
            + "\(allocations) heap allocations, \(byFFmpeg) of them by FFmpeg's libraries (packets), \(allocations - byFFmpeg) by our code")
        #expect(reads >= 3, "\(fixture): enough steady-state reads to count")
        #expect(allocations - byFFmpeg == 0, "\(fixture): our decode loop allocates nothing once running")
    }
}
