// The service's decode loop reuses its buffers (specs/services.md §Threads):
// once playing, the decode thread's own work between two reads (gain, the
// write into the output's ring, the timeline) allocates nothing. The decoder
// is a scripted one; the FFmpeg adapter's reads are counted on their own
// (HarmoniaFFmpegTests/DecodeLoopAllocationTests).
import HarmoniaCore
import HarmoniaTestSupport
import Testing

private let bank = MallocCounterBank(3)

/// Marks the decode thread as counted everywhere except inside `read`, while `counting`.
private final class ReadExcludingDecoder: DecoderPort, @unchecked Sendable {
    let inner: CounterDecoder
    let counting = LockedValue(false)
    init(_ inner: CounterDecoder) { self.inner = inner }

    func read(_ handle: DecodeHandle, into buffer: UnsafeMutablePointer<Float>, maxFrames: Int) throws(CoreError) -> Int {
        bank.leave()
        defer { if counting.withLock({ $0 }) { bank.enter() } }
        return try inner.read(handle, into: buffer, maxFrames: maxFrames)
    }
    func open(url: String) throws(CoreError) -> DecodeHandle { try inner.open(url: url) }
    func info(_ handle: DecodeHandle) throws(CoreError) -> StreamInfo { try inner.info(handle) }
    func seek(_ handle: DecodeHandle, toFrame frame: Int64) throws(CoreError) { try inner.seek(handle, toFrame: frame) }
    func position(_ handle: DecodeHandle) throws(CoreError) -> Int64 { try inner.position(handle) }
    func close(_ handle: DecodeHandle) { inner.close(handle) }
}

@Suite("Decode thread allocations")
struct DecodeThreadAllocationTests {
    @Test("playing with ReplayGain: no heap allocation on the decode thread between reads",
          .enabled(if: MallocCounterBank.isActive, "the malloc counter is off under sanitizers"))
    func noAllocationBetweenReads() throws {
        var wrapper: ReadExcludingDecoder?
        let configuration = PlaybackConfiguration(positionInterval: 0, replayGain: .init(mode: .track, preampDB: -6))
        let h = ServiceHarness(["a": .init(frames: 44_100 * 30, base: 1)], configuration: configuration) { decoder in
            let marking = ReadExcludingDecoder(decoder)
            wrapper = marking
            return marking
        }
        let marking = try #require(wrapper)
        try h.service.load(url: "a")
        try h.service.play()
        h.listen(frames: 44_100)              // warm-up: one second

        bank.reset(skippingFirstSection: true)
        let readsBefore = h.decoder.readCount
        marking.counting.withLock { $0 = true }
        h.listen(frames: 44_100 * 10)          // ten seconds of play, the decode thread refilling throughout
        let allocations = bank.allocations
        marking.counting.withLock { $0 = false }
        let reads = h.decoder.readCount - readsBefore
        for stack in bank.unattributedStacks() { print("[decode thread alloc] " + stack) }
        print("[decode thread alloc] \(reads) reads in 10 s of play: \(allocations) heap allocations between them")
        // Ten seconds in reads of up to `chunkFrames` (16384: 27 reads), refilled in batches.
        #expect(reads >= 44_100 * 10 / configuration.chunkFrames - 2, "the decode thread kept reading")
        #expect(allocations == 0, "the decode loop reuses its buffers")
        h.service.stop()
    }
}
