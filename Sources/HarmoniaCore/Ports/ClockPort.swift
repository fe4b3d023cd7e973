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
}

extension ClockPort {
    /// Blocks the calling thread for `nanoseconds` of this clock's time.
    public func sleep(nanoseconds: UInt64) {
        sleep(until: now() &+ nanoseconds)
    }
}
