// EventHub — specs/services.md §Events
//
// One way to publish events for the service and the outputs alike.

/// Fans events out to any number of `AsyncStream`s and synchronous observers.
/// Thread-safe; `emit` never blocks (each stream buffers its newest 1024) and
/// never allocates on behalf of a caller that holds no subscribers' locks, so
/// it is fine for supervisor threads, but not for a real-time thread.
public final class EventHub<Event: Sendable>: @unchecked Sendable {
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var streams: [Int: AsyncStream<Event>.Continuation] = [:]
    private var observers: [Int: @Sendable (Event) -> Void] = [:]
    private var nextID = 0
    private var finished = false

    /// Creates a hub with no streams and no observers.
    public init() {}

    /// A new stream of every event from now on.
    public func stream() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(1024))
        let id = lock.withLock { () -> Int? in
            guard !finished else { return nil }
            nextID += 1
            streams[nextID] = continuation
            return nextID
        }
        guard let id else {
            continuation.finish()  // after `finish`: a stream that ends at once
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            _ = self.lock.withLock { self.streams.removeValue(forKey: id) }
        }
        return stream
    }

    /// Calls `observer` on the emitting thread for every event; it must return
    /// quickly and must not call back into the service.
    public func observe(_ observer: @escaping @Sendable (Event) -> Void) {
        lock.withLock {
            nextID += 1
            observers[nextID] = observer
        }
    }

    /// Sends `event` to every observer (on this thread) and every stream.
    public func emit(_ event: Event) {
        let (streams, observers) = lock.withLock { finished ? ([], []) : (Array(self.streams.values), Array(self.observers.values)) }
        for observer in observers { observer(event) }
        for continuation in streams { continuation.yield(event) }
    }

    /// Ends every stream, and every stream asked for later; observers get no
    /// more events. Idempotent.
    public func finish() {
        let streams = lock.withLock { () -> [AsyncStream<Event>.Continuation] in
            finished = true
            observers.removeAll()
            return Array(self.streams.values)
        }
        for continuation in streams { continuation.finish() }
    }
}
