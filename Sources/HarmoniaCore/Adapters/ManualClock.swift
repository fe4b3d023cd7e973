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
    /// Calls to sleep(until:) and wait(on:until:) so far (entries).
    private var sleepEntries = 0
    /// Threads in wait(on:until:): woken through their own condition when
    /// time passes their deadline.
    private var conditionWaiters: [(ticket: Int, condition: ConditionLock, deadline: UInt64)] = []
    private var nextTicket = 0

    /// Creates a clock that reads `start` nanoseconds; its time moves only
    /// through `advance(by:)` and `step(by:)`.
    public init(start: UInt64 = 0) {
        time = start
        // A waiter's registration allocates nothing (a decode thread's
        // allocation count stays zero in tests).
        conditionWaiters.reserveCapacity(16)
    }

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

    /// Waits on `condition` (held by the caller) until its broadcast or until
    /// a test advances the clock past `deadline`. Counts as a sleep for
    /// `waitForSleepers`, `waitForSleepEntry` and `step`.
    public func wait(on condition: ConditionLock, until deadline: UInt64) {
        // Lock order: the caller's condition, then the clock's lock. advance
        // wakes waiters after releasing the clock's lock, and its broadcast
        // needs the condition's lock, which this thread holds until it waits:
        // no wake-up is lost.
        let ticket = lock.withLock { () -> Int? in
            sleepEntries += 1
            lock.broadcast()
            guard time < deadline else { return nil }
            nextTicket += 1
            conditionWaiters.append((nextTicket, condition, deadline))
            sleepers += 1
            return nextTicket
        }
        guard let ticket else { return }
        condition.wait()
        lock.withLock {
            // A plain loop: removeAll(where:) allocates its closure's context.
            var index = 0
            while index < conditionWaiters.count {
                if conditionWaiters[index].ticket == ticket { conditionWaiters.remove(at: index) } else { index += 1 }
            }
            sleepers -= 1
            lock.broadcast()
        }
    }

    /// Moves time forward and wakes every sleeper whose deadline has passed.
    public func advance(by nanoseconds: UInt64) {
        let due = lock.withLock { () -> [ConditionLock] in
            time &+= nanoseconds
            lock.broadcast()
            return dueConditions()
        }
        for condition in due { condition.withLock { condition.broadcast() } }
    }

    /// Conditions of waiters whose deadline has passed. Call with `lock` held.
    private func dueConditions() -> [ConditionLock] {
        conditionWaiters.filter { $0.deadline <= time }.map(\.condition)
    }

    /// Advances time, then waits until the (single) sleeper has woken, done
    /// its work and gone back to sleep: one deterministic step of a thread
    /// paced by this clock.
    public func step(by nanoseconds: UInt64) {
        let (entries, due) = lock.withLock { () -> (Int, [ConditionLock]) in
            time &+= nanoseconds
            lock.broadcast()
            return (sleepEntries, dueConditions())
        }
        for condition in due { condition.withLock { condition.broadcast() } }
        lock.withLock { while sleepEntries == entries { lock.wait() } }
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
