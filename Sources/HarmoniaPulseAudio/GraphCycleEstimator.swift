// PulseAudioOutputAdapter: the PipeWire graph's cycle, learned from the
// read index — specs/realtime.md §PipeWire (through pipewire-pulse)
//
// pipewire-pulse takes a stream's audio a whole graph cycle (quantum) at a
// time and reports neither the cycle nor the delay it holds. The cycle is the
// shortest latency any node of the graph asks for, so another client (a
// browser, a recorder at 10 ms) shortens it under us; the stream's own
// `node.latency` only bounds it from above. Between two timing updates the
// read index has advanced by a whole number of cycles — nearly always: an
// update that lands as the cycle changes, or a short read, is not — and
// PipeWire keeps its quantum a power of two (`clock.power-of-two-quantum`).
// So the cycle is the largest power of two that divides nearly every recent
// advance. A value type: the adapter keeps one per stream, on the main loop
// thread.

/// Learns the graph's cycle, in stream frames, from successive read indexes.
/// No allocation (a fixed window); every input is an outside number, checked.
package struct GraphCycleEstimator: Sendable {
    /// Advances kept: 2 s of updates at PipeWire's quickest steady interval,
    /// few enough to follow a cycle that changes.
    package static let window = 8
    /// The smallest cycle believed (PipeWire's smallest default quantum).
    package static let smallestCycle: Int64 = 32

    private var lastReadIndex: Int64?
    private var advances: (Int64, Int64, Int64, Int64, Int64, Int64, Int64, Int64) = (0, 0, 0, 0, 0, 0, 0, 0)
    private var count = 0
    private var next = 0
    private var limit: Int64 = 0
    /// The cycle last agreed on, kept while the advances do not agree on
    /// another.
    private(set) var learned: Int64?

    package init() {}

    /// Forgets everything (a new stream).
    package mutating func reset() { self = GraphCycleEstimator() }

    /// Takes the next index as a new start, keeping what was learned (a
    /// flush: the read index may move by other than whole cycles once).
    package mutating func rebase() { lastReadIndex = nil }

    /// A timing update's read index, in frames, and the largest cycle
    /// possible (the stream's own latency; below 32, as on PulseAudio,
    /// nothing is learned). A step back or a huge step (a corrupt index)
    /// starts again from this index.
    package mutating func observe(readIndexFrames index: Int64, atMost limit: Int64) {
        defer { lastReadIndex = index }
        self.limit = limit
        guard let last = lastReadIndex else { return }
        let (advance, overflow) = index.subtractingReportingOverflow(last)
        guard !overflow, advance >= 0, advance <= 1 << 40 else {
            (count, next) = (0, 0)
            return
        }
        guard advance > 0 else { return }  // no cycle between the two updates
        withUnsafeMutableBytes(of: &advances) { raw in
            raw.storeBytes(of: advance, toByteOffset: next * MemoryLayout<Int64>.stride, as: Int64.self)
        }
        next = (next + 1) % Self.window
        count = min(count + 1, Self.window)
        if let agreed = vote() { learned = agreed }
    }

    /// The cycle in frames: the one learned, if it is within the bound; nil
    /// before the advances first agreed.
    package var cycle: Int64? {
        guard let learned, learned <= limit else { return nil }
        return learned
    }

    /// The largest power of two up to the bound that divides every advance
    /// but at most one of a full window (all of them, from four, before the
    /// window is full). A double cycle divides an advance one time in two,
    /// so it passes a full window's vote about one time in thirty.
    private func vote() -> Int64? {
        guard count >= 4, limit >= Self.smallestCycle else { return nil }
        let needed = count == Self.window ? count - 1 : count
        var candidate: Int64 = 1 << (63 - limit.leadingZeroBitCount)  // the largest power of two ≤ limit
        while candidate >= Self.smallestCycle {
            var divided = 0
            withUnsafeBytes(of: advances) { raw in
                for slot in 0..<count where raw.load(fromByteOffset: slot * MemoryLayout<Int64>.stride, as: Int64.self) % candidate == 0 {
                    divided += 1
                }
            }
            if divided >= needed { return candidate }
            candidate >>= 1
        }
        return nil
    }
}
