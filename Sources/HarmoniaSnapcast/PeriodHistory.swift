// SnapcastOutputAdapter's position record — specs/snapcast.md §Position

/// Per period sent: its stream frames and the input frames counted by its
/// end. A ring of preallocated entries, guarded by the owner's lock.
final class PeriodHistory {
    private let capacity: Int
    private let streamStart: UnsafeMutablePointer<Int64>
    private let streamEnd: UnsafeMutablePointer<Int64>
    private let countedStart: UnsafeMutablePointer<Int64>
    private let countedEnd: UnsafeMutablePointer<Int64>
    private var head = 0
    private var count = 0

    init(minimumCapacity: Int) {
        var capacity = 64
        while capacity < minimumCapacity { capacity <<= 1 }
        self.capacity = capacity
        streamStart = .allocate(capacity: capacity)
        streamEnd = .allocate(capacity: capacity)
        countedStart = .allocate(capacity: capacity)
        countedEnd = .allocate(capacity: capacity)
    }

    deinit {
        streamStart.deallocate()
        streamEnd.deallocate()
        countedStart.deallocate()
        countedEnd.deallocate()
    }

    func append(streamStart s: Int64, streamEnd e: Int64, countedStart a: Int64, countedEnd b: Int64) {
        if count == capacity {  // the oldest was surely heard long ago
            head = (head + 1) & (capacity - 1)
            count -= 1
        }
        let slot = (head + count) & (capacity - 1)
        streamStart[slot] = s
        streamEnd[slot] = e
        countedStart[slot] = a
        countedEnd[slot] = b
        count += 1
    }

    /// Counts nothing above `value` any more: the pipeline's frames are
    /// heard but no longer counted (flush, stop, configure).
    func cap(at value: Int64) {
        for i in 0..<count {
            let slot = (head + i) & (capacity - 1)
            countedStart[slot] = min(countedStart[slot], value)
            countedEnd[slot] = min(countedEnd[slot], value)
        }
    }

    func removeAll() {
        head = 0
        count = 0
    }

    /// The counted frames heard at stream frame `frame`: entries wholly
    /// before it are dropped; within one, linear. `floor` before any.
    func heard(atStreamFrame frame: Int64, floor: Int64) -> Int64 {
        var value = floor
        while count > 0 && streamEnd[head] <= frame {
            value = max(value, countedEnd[head])
            head = (head + 1) & (capacity - 1)
            count -= 1
        }
        if count > 0, streamStart[head] <= frame {
            let a = countedStart[head], b = countedEnd[head]
            let span = streamEnd[head] - streamStart[head]
            value = max(value, a + (b - a) * (frame - streamStart[head]) / max(1, span))
        }
        return value
    }
}
