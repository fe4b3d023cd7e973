// ManualClock — specs/ports.md §ClockPort
//
// A ClockPort whose time moves only when its owner says so.

/// A `ClockPort` for deterministic tests and the vector runner. `now()` returns the time set by
/// `advance(by:)`; `sleep(until:)` blocks the calling thread until a test
/// advances the clock past the deadline. Thread-safe.
public final class ManualClock: ClockPort, @unchecked Sendable {
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var time: UInt64
    private var sleepers = 0
    /// Calls to sleep(until:) so far (entries).
    private var sleepEntries = 0

    public init(start: UInt64 = 0) { time = start }

    public func now() -> UInt64 { lock.withLock { time } }

    public func sleep(until deadline: UInt64) {
        lock.withLock {
            sleepers += 1
            sleepEntries += 1
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

    /// Advances time, then waits until the (single) sleeper has woken, done
    /// its work and gone back to sleep: one deterministic step of a thread
    /// paced by this clock.
    public func step(by nanoseconds: UInt64) {
        lock.withLock {
            let entries = sleepEntries
            time &+= nanoseconds
            lock.broadcast()
            while sleepEntries == entries { lock.wait() }
        }
    }

    /// How many times sleep(until:) has been entered so far.
    public var sleepEntryCount: Int { lock.withLock { sleepEntries } }

    /// Blocks until sleep(until:) has been entered again after `count`
    /// entries: the paced thread has re-armed its deadline.
    public func waitForSleepEntry(after count: Int) {
        lock.withLock { while sleepEntries <= count { lock.wait() } }
    }

    /// Blocks until at least `count` threads are inside `sleep(until:)`, so a
    /// test advances time knowing the sleeper waits (no polling, no sleeps).
    public func waitForSleepers(_ count: Int = 1) {
        lock.withLock { while sleepers < count { lock.wait() } }
    }
}
