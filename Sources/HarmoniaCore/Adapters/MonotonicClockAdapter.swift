// MonotonicClockAdapter — specs/ports.md §ClockPort
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// `ClockPort` on `CLOCK_MONOTONIC`: unaffected by wall-clock changes.
/// `now()` is a vDSO call: no allocation, no lock, real-time safe.
public struct MonotonicClockAdapter: ClockPort {
    /// Creates the adapter; it holds no state.
    public init() {}

    public func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) &* 1_000_000_000 &+ UInt64(ts.tv_nsec)
    }

    public func sleep(until deadline: UInt64) {
        var ts = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        // An absolute deadline: interruption by a signal simply sleeps again.
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }

    public func wait(on condition: ConditionLock, until deadline: UInt64) {
        condition.wait(untilMonotonic: deadline)
    }
}

/// Monotonic seconds (CLOCK_MONOTONIC), for deadlines and timeouts outside
/// a `ClockPort` (a socket's wait, a client's drain). Any thread.
public func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
