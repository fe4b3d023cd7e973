// SPSCRingBuffer — specs/realtime.md §SPSCRingBuffer
//
// A lock-free single-producer/single-consumer ring of interleaved Float32
// frames, after rigtorp/SPSCQueue and SFBAudioEngine's ring: free-running
// indices masked by a power-of-two capacity, each index on its own cache
// line, each side caching the other's index and reloading it (acquire) only
// when the ring looks full or empty, its own index published with release.
import Synchronization

/// Lock-free SPSC ring of interleaved Float32 frames.
///
/// - One **producer** thread calls `write`, `writeSpans`/`commitWrite`,
///   `writableFrames` and `requestDiscard`.
/// - One **consumer** thread calls `read`, `readSpans`/`commitRead`,
///   `readableFrames` and `discardReadable`.
/// - `capacity`, `channels` and `framesWritten`/`framesRead` may be read anywhere.
///
/// Nothing allocates, locks or waits after `init`: every method is real-time
/// safe. Which thread is "the producer" may change over time only with a
/// happens-before edge between the old and the new one (a lock, a join).
public final class SPSCRingBuffer: @unchecked Sendable {
    /// Frames the ring holds (a power of two).
    public let capacity: Int
    /// Interleaved samples per frame.
    public let channels: Int
    private let mask: Int
    /// capacity × channels floats, allocated once.
    private let storage: UnsafeMutablePointer<Float>
    /// Cache-line separated control block (see the offsets below).
    private let control: UnsafeMutableRawPointer

    // Offsets in `control`, one 128-byte line each (two 64-byte lines, as
    // adjacent-line prefetchers fetch them in pairs).
    private static let line = 128
    private var writeIndex: UnsafeMutablePointer<Atomic<Int>> { (control + 0 * Self.line).assumingMemoryBound(to: Atomic<Int>.self) }
    private var readIndex: UnsafeMutablePointer<Atomic<Int>> { (control + 1 * Self.line).assumingMemoryBound(to: Atomic<Int>.self) }
    /// Producer-set mark: frames below it are stale; the consumer skips them.
    private var discardMark: UnsafeMutablePointer<Atomic<Int>> { (control + 2 * Self.line).assumingMemoryBound(to: Atomic<Int>.self) }
    /// Producer only: its last view of readIndex.
    private var cachedRead: UnsafeMutablePointer<Int> { (control + 3 * Self.line).assumingMemoryBound(to: Int.self) }
    /// Consumer only: its last view of writeIndex.
    private var cachedWrite: UnsafeMutablePointer<Int> { (control + 4 * Self.line).assumingMemoryBound(to: Int.self) }

    /// Allocates the ring, zero-filled, and its control block: the only call
    /// that allocates (not real-time safe). Traps when either argument is
    /// not positive.
    /// - Parameters:
    ///   - minimumCapacity: frames; rounded up to a power of two (at least 2).
    ///   - channels: samples per frame (≥ 1).
    public init(minimumCapacity: Int, channels: Int) {
        precondition(minimumCapacity > 0 && channels > 0, "SPSCRingBuffer needs a positive capacity and channel count")
        var capacity = 2
        while capacity < minimumCapacity { capacity <<= 1 }
        self.capacity = capacity
        self.channels = channels
        mask = capacity - 1
        storage = .allocate(capacity: capacity * channels)
        storage.initialize(repeating: 0, count: capacity * channels)
        control = .allocate(byteCount: 5 * Self.line, alignment: Self.line)
        for index in 0..<3 {
            (control + index * Self.line).bindMemory(to: Atomic<Int>.self, capacity: 1).initialize(to: Atomic(0))
        }
        for index in 3..<5 {
            (control + index * Self.line).bindMemory(to: Int.self, capacity: 1).initialize(to: 0)
        }
    }

    deinit {
        for index in 0..<3 {
            _ = (control + index * Self.line).assumingMemoryBound(to: Atomic<Int>.self).move()
        }
        control.deallocate()
        storage.deallocate()
    }

    // MARK: Producer

    /// Producer: frames that can be written now.
    public var writableFrames: Int {
        capacity - (writeIndex.pointee.load(ordering: .relaxed) - readIndex.pointee.load(ordering: .acquiring))
    }

    /// Producer: copies up to `frames` frames from `source`; returns how many fit.
    @discardableResult
    public func write(_ source: UnsafePointer<Float>, frames: Int) -> Int {
        let spans = writeSpans(maxFrames: frames)
        copy(to: spans.first.baseAddress, from: source, samples: spans.first.count)
        copy(to: spans.second.baseAddress, from: source + spans.first.count, samples: spans.second.count)
        let count = (spans.first.count + spans.second.count) / channels
        commitWrite(frames: count)
        return count
    }

    /// Producer: up to `maxFrames` frames of free space as two contiguous
    /// spans (the second is empty unless the space wraps). Fill them, then
    /// `commitWrite`.
    public func writeSpans(maxFrames: Int) -> (first: UnsafeMutableBufferPointer<Float>, second: UnsafeMutableBufferPointer<Float>) {
        let w = writeIndex.pointee.load(ordering: .relaxed)
        var free = capacity - (w - cachedRead.pointee)
        if free < maxFrames {
            cachedRead.pointee = readIndex.pointee.load(ordering: .acquiring)
            free = capacity - (w - cachedRead.pointee)
        }
        return spans(at: w, count: min(max(maxFrames, 0), free))
    }

    /// Producer: publishes `frames` frames filled through `writeSpans`.
    public func commitWrite(frames: Int) {
        let w = writeIndex.pointee.load(ordering: .relaxed)
        writeIndex.pointee.store(w + frames, ordering: .releasing)
    }

    /// Producer: marks every frame written so far as stale. The consumer drops
    /// them before its next read; frames written after this call are kept.
    /// Safe while the consumer runs. Their space is reusable once the
    /// consumer has skipped them (or called `discardReadable`).
    public func requestDiscard() {
        discardMark.pointee.store(writeIndex.pointee.load(ordering: .relaxed), ordering: .releasing)
    }

    // MARK: Consumer

    /// Consumer: frames that can be read now (stale frames excluded).
    public var readableFrames: Int {
        let r = max(readIndex.pointee.load(ordering: .relaxed), discardMark.pointee.load(ordering: .acquiring))
        return writeIndex.pointee.load(ordering: .acquiring) - r
    }

    /// Consumer: copies up to `frames` frames into `destination`; returns how many.
    @discardableResult
    public func read(into destination: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        let spans = readSpans(maxFrames: frames)
        if let first = spans.first.baseAddress {
            copy(to: destination, from: first, samples: spans.first.count)
        }
        if let second = spans.second.baseAddress {
            copy(to: destination + spans.first.count, from: second, samples: spans.second.count)
        }
        let count = (spans.first.count + spans.second.count) / channels
        commitRead(frames: count)
        return count
    }

    /// Consumer: up to `maxFrames` readable frames as two contiguous spans.
    /// Drops stale frames first (see `requestDiscard`). Read them, then `commitRead`.
    public func readSpans(maxFrames: Int) -> (first: UnsafeMutableBufferPointer<Float>, second: UnsafeMutableBufferPointer<Float>) {
        let r = skipStale()
        var available = cachedWrite.pointee - r
        if available < maxFrames {
            cachedWrite.pointee = writeIndex.pointee.load(ordering: .acquiring)
            available = cachedWrite.pointee - r
        }
        return spans(at: r, count: max(0, min(maxFrames, available)))
    }

    /// Consumer: releases `frames` frames read through `readSpans`.
    public func commitRead(frames: Int) {
        let r = readIndex.pointee.load(ordering: .relaxed)
        readIndex.pointee.store(r + frames, ordering: .releasing)
    }

    /// Consumer: drops every frame written so far, at once. Call it from the
    /// consumer thread, or from a thread that has locked the consumer out
    /// (for PulseAudio: with the threaded main loop's lock held).
    public func discardReadable() {
        readIndex.pointee.store(writeIndex.pointee.load(ordering: .acquiring), ordering: .releasing)
    }

    // MARK: Anywhere

    /// Frames ever written (producer's index). Monotonic.
    public var framesWritten: Int { writeIndex.pointee.load(ordering: .acquiring) }
    /// Frames ever consumed or discarded (consumer's index). Monotonic.
    public var framesRead: Int { readIndex.pointee.load(ordering: .acquiring) }

    // MARK: Internals

    /// A plain loop, on purpose: ThreadSanitizer instruments it, while the
    /// standard library's pointer copy and a `memcpy` call from Swift are
    /// invisible to it (checked: with the publishing store made relaxed, TSan
    /// reports the race through this loop and stays silent through memcpy).
    /// Optimised builds turn the loop into memcpy anyway.
    @inline(__always)
    private func copy(to destination: UnsafeMutablePointer<Float>?, from source: UnsafePointer<Float>, samples: Int) {
        guard let destination else { return }
        for index in 0..<samples { destination[index] = source[index] }
    }

    /// Consumer: moves the read index past a pending discard mark.
    private func skipStale() -> Int {
        let r = readIndex.pointee.load(ordering: .relaxed)
        let mark = discardMark.pointee.load(ordering: .acquiring)
        guard mark > r else { return r }
        readIndex.pointee.store(mark, ordering: .releasing)
        return mark
    }

    private func spans(at index: Int, count: Int) -> (first: UnsafeMutableBufferPointer<Float>, second: UnsafeMutableBufferPointer<Float>) {
        guard count > 0 else { return (.init(start: nil, count: 0), .init(start: nil, count: 0)) }
        let start = index & mask
        let firstFrames = min(count, capacity - start)
        let first = UnsafeMutableBufferPointer(start: storage + start * channels, count: firstFrames * channels)
        let second = UnsafeMutableBufferPointer(start: firstFrames < count ? storage : nil, count: (count - firstFrames) * channels)
        return (first, second)
    }
}
