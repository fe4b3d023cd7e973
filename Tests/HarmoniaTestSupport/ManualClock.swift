// ManualClock: a ClockPort whose time moves only when a test says so.
import HarmoniaCore

/// A `ClockPort` for deterministic tests. `now()` returns the time set by
/// `advance(by:)`; `sleep(until:)` blocks the calling thread until a test
/// advances the clock past the deadline. Thread-safe.
public final class ManualClock: ClockPort, @unchecked Sendable {
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var time: UInt64
    private var sleepers = 0

    public init(start: UInt64 = 0) { time = start }

    public func now() -> UInt64 { lock.withLock { time } }

    public func sleep(until deadline: UInt64) {
        lock.withLock {
            sleepers += 1
            lock.broadcast()
            while time < deadline { lock.wait() }
            sleepers -= 1
            lock.broadcast()
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has passed.
    public func advance(by nanoseconds: UInt64) {
        lock.withLock {
            time &+= nanoseconds
            lock.broadcast()
        }
    }

    /// Blocks until at least `count` threads are inside `sleep(until:)`, so a
    /// test advances time knowing the sleeper waits (no polling, no sleeps).
    public func waitForSleepers(_ count: Int = 1) {
        lock.withLock { while sleepers < count { lock.wait() } }
    }
}
