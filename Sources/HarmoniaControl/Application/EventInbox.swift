// What the playing command waits for: the service's events (handed over by
// a synchronous observer), control requests, keys and termination signals,
// in arrival order.
import Dispatch
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// When an event happened, as a number: each event posted to an
/// `EventInbox` takes the next stamp at the moment it is posted — which is
/// the moment the service emitted it (the observer posts synchronously).
/// A client that notes `EventInbox.lastStamp` when it connects is owed
/// exactly the events with a greater stamp: the changes made after it came,
/// never one made before, even when the main loop shows that one later
/// (specs/application.md §Event stamps).
public struct EventStamp: Comparable, Hashable, Sendable, CustomStringConvertible {
    public let value: UInt64
    public init(_ value: UInt64) { self.value = value }
    /// Before every event.
    public static let zero = EventStamp(0)
    public static func < (a: EventStamp, b: EventStamp) -> Bool { a.value < b.value }
    public var description: String { String(value) }
}

/// A first-in first-out inbox that any thread posts to and one thread takes
/// from, blocking on a condition until something arrives (no polling).
/// Events are stamped as they are posted (`EventStamp`).
public final class EventInbox: @unchecked Sendable {
    public enum Item: Sendable {
        case event(PlaybackEvent)
        /// SIGINT or SIGTERM arrived.
        case signal(Int32)
        /// A frontend's work, run on the main loop (a control request, a key,
        /// the desktop's Quit); what it returns tells the loop how to go on.
        case job(@Sendable () -> JobOutcome)
    }

    /// What the main loop does after a job.
    public enum JobOutcome: Sendable {
        case `continue`
        /// Stop playback and end the run (`quit`).
        case quit
        /// Stop playback and end as if the queue had played out (the terminal's q).
        case endQueue
        /// A source of commands ended (standard input): end when nothing else
        /// waits to send commands and nothing is playing.
        case inputClosed
    }

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var items: [(item: Item, stamp: EventStamp)] = []
    private var head = 0
    private var stamped = EventStamp.zero
    public init() {}

    private var signalSources: [DispatchSourceSignal] = []

    /// Adds `item`; never blocks for long (safe from the service's observer).
    /// An event takes the next stamp here, under the inbox's lock.
    public func post(_ item: Item) {
        lock.withLock {
            if case .event = item { stamped = EventStamp(stamped.value &+ 1) }
            items.append((item, stamped))
            lock.broadcast()
        }
    }

    /// The stamp of the last event posted (`.zero` before the first). Any
    /// thread: a client notes it when it connects (`EventStamp`).
    public var lastStamp: EventStamp { lock.withLock { stamped } }

    /// The oldest item, waiting until there is one.
    public func take() -> Item { takeStamped().item }

    /// The oldest item with its stamp (for an event, its own; for anything
    /// else, the last event's posted before it), waiting until there is one.
    public func takeStamped() -> (item: Item, stamp: EventStamp) {
        lock.withLock {
            while head == items.count { lock.wait() }
            let entry = items[head]
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            }
            return entry
        }
    }

    /// Delivers SIGINT and SIGTERM here instead of killing the process;
    /// `also` then runs on a global queue (after the item is posted), for
    /// what must happen even while the taking thread is held up.
    /// Returns once the sources are registered: until then an ignored signal
    /// would be lost (libdispatch registers them asynchronously).
    public func catchTerminationSignals(also: @escaping @Sendable (Int32) -> Void = { _ in }) {
        var sources: [DispatchSourceSignal] = []
        let registered = DispatchSemaphore(value: 0)
        for signo in [SIGINT, SIGTERM] {
            signal(signo, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signo, queue: .global())
            source.setEventHandler { [weak self] in
                self?.post(.signal(signo))
                also(signo)
            }
            source.setRegistrationHandler { registered.signal() }
            source.resume()
            sources.append(source)
        }
        for _ in sources { _ = registered.wait(timeout: .now() + 1) }
        lock.withLock { signalSources = sources }
    }
}
