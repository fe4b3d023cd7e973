// ConditionLock: a mutex with a condition variable, for non-real-time threads
// that wait for a state change (a decode thread waiting for work, a manual
// clock's sleepers). Never use it on a real-time thread.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A pthread mutex and condition variable at stable heap addresses.
/// `withLock` runs a body under the mutex; `wait()` (only inside `withLock`)
/// releases the mutex until `broadcast()` is called.
public final class ConditionLock: @unchecked Sendable {
    // Allocated once in init, freed in deinit; the addresses never move.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private let condition: UnsafeMutablePointer<pthread_cond_t>

    /// Allocates and initialises the mutex and a condition variable whose
    /// timed waits use `CLOCK_MONOTONIC`. Allocates: not for real-time threads.
    public init() {
        mutex = .allocate(capacity: 1)
        condition = .allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Runs `body` with the mutex held.
    public func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }

    /// Waits for a `broadcast`. Call only inside `withLock`; re-check the
    /// condition afterwards (wake-ups may be spurious).
    public func wait() {
        pthread_cond_wait(condition, mutex)
    }

    /// Runs `body` with the mutex released; call only inside `withLock`.
    /// For a thread that must not hold the lock across slow work (I/O).
    public func withLockReleased<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_mutex_unlock(mutex)
        defer { pthread_mutex_lock(mutex) }
        return try body()
    }

    /// Waits for a `broadcast` or until `seconds` have passed (monotonic).
    /// Call only inside `withLock`; re-check the condition afterwards.
    public func wait(seconds: Double) {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let total = Double(now.tv_sec) + Double(now.tv_nsec) / 1e9 + max(0, min(seconds, 1e6))
        var deadline = timespec(tv_sec: Int(total), tv_nsec: Int((total - total.rounded(.down)) * 1e9))
        pthread_cond_timedwait(condition, mutex, &deadline)
    }

    /// Waits for a `broadcast` or until CLOCK_MONOTONIC reaches `deadline`
    /// (nanoseconds). Call only inside `withLock`; re-check the condition afterwards.
    public func wait(untilMonotonic deadline: UInt64) {
        var time = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
        pthread_cond_timedwait(condition, mutex, &time)
    }

    /// Wakes every waiter.
    public func broadcast() {
        pthread_cond_broadcast(condition)
    }
}
