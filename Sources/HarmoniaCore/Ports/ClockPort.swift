// ClockPort — specs/ports.md §ClockPort

/// Monotonic time, and the one way services wait for time to pass, so that
/// tests can drive a manual clock instead of sleeping.
///
/// Threads: any thread. `now()` is real-time safe (no allocation, no lock in
/// the monotonic adapter); `sleep(until:)` blocks and is for non-real-time threads.
public protocol ClockPort: Sendable {
    /// Nanoseconds since an unspecified epoch. Never decreases.
    func now() -> UInt64

    /// Blocks the calling thread until `now() >= deadline`. Returns at once
    /// when the deadline has passed.
    func sleep(until deadline: UInt64)

    /// Waits on `condition`, whose lock the caller holds (inside
    /// `withLock`), until its `broadcast()` or until `now() >= deadline`,
    /// whichever comes first: a sleep that another thread can cut short.
    /// May return early (a spurious wake-up): re-check both afterwards.
    /// Returns at once when the deadline has passed.
    func wait(on condition: ConditionLock, until deadline: UInt64)
}

extension ClockPort {
    /// The default: the remaining time of this clock waited as monotonic
    /// time. A clock whose time does not pass at the real rate (a test's
    /// manual clock) implements its own.
    public func wait(on condition: ConditionLock, until deadline: UInt64) {
        let now = now()
        guard deadline > now else { return }
        condition.wait(seconds: Double(deadline - now) / 1e9)
    }

    /// Blocks the calling thread for `nanoseconds` of this clock's time.
    public func sleep(nanoseconds: UInt64) {
        sleep(until: now() &+ nanoseconds)
    }
}
