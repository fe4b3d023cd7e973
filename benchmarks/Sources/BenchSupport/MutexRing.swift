// The peer in the ring-buffer comparison: the straightforward ring a
// programmer writes first — the same interleaved Float32 storage and
// power-of-two capacity as SPSCRingBuffer, every write and read under one
// Synchronization.Mutex (a futex on Linux).
import Synchronization

public final class MutexRing: @unchecked Sendable {
    public let capacity: Int
    public let channels: Int
    private let mask: Int
    private let storage: UnsafeMutablePointer<Float>
    /// (write index, read index), free-running.
    private let indices = Mutex<(write: Int, read: Int)>((0, 0))

    public init(minimumCapacity: Int, channels: Int) {
        var capacity = 2
        while capacity < minimumCapacity { capacity <<= 1 }
        self.capacity = capacity
        self.channels = channels
        mask = capacity - 1
        storage = .allocate(capacity: capacity * channels)
        storage.initialize(repeating: 0, count: capacity * channels)
    }

    deinit { storage.deallocate() }

    /// Copies up to `frames` frames from `source`; returns how many fit.
    @discardableResult
    public func write(_ source: UnsafePointer<Float>, frames: Int) -> Int {
        indices.withLock { indices in
            let count = min(frames, capacity - (indices.write - indices.read))
            guard count > 0 else { return 0 }
            let start = indices.write & mask
            let first = min(count, capacity - start)
            (storage + start * channels).update(from: source, count: first * channels)
            if first < count {
                storage.update(from: source + first * channels, count: (count - first) * channels)
            }
            indices.write += count
            return count
        }
    }

    /// Copies up to `frames` frames into `destination`; returns how many.
    @discardableResult
    public func read(into destination: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        indices.withLock { indices in
            let count = min(frames, indices.write - indices.read)
            guard count > 0 else { return 0 }
            let start = indices.read & mask
            let first = min(count, capacity - start)
            destination.update(from: storage + start * channels, count: first * channels)
            if first < count {
                (destination + first * channels).update(from: storage, count: (count - first) * channels)
            }
            indices.read += count
            return count
        }
    }
}
