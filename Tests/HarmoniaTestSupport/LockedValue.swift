// A value behind a lock, for test helpers shared between parallel tests.
//
// A pthread mutex (ConditionLock), not Synchronization.Mutex: on Linux the
// Mutex locks with futexes inside the standard library, which
// ThreadSanitizer does not see, so two threads using a LockedValue were
// reported as a race (found reading a SinkRecorder while it records).
import HarmoniaCore

public final class LockedValue<Value: Sendable>: @unchecked Sendable {
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var value: Value
    public init(_ value: Value) { self.value = value }
    public func withLock<T: Sendable>(_ body: (inout Value) -> T) -> T { lock.withLock { body(&value) } }
}
