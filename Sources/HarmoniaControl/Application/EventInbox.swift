// What the playing command waits for: the service's events (handed over by
// a synchronous observer), control requests, keys and termination signals,
// in arrival order.
import Dispatch
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// A first-in first-out inbox that any thread posts to and one thread takes
/// from, blocking on a condition until something arrives (no polling).
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
    private var items: [Item] = []
    private var head = 0
    public init() {}

    private var signalSources: [DispatchSourceSignal] = []

    /// Adds `item`; never blocks for long (safe from the service's observer).
    public func post(_ item: Item) {
        lock.withLock {
            items.append(item)
            lock.broadcast()
        }
    }

    /// The oldest item, waiting until there is one.
    public func take() -> Item {
        lock.withLock {
            while head == items.count { lock.wait() }
            let item = items[head]
            head += 1
            if head == items.count {
                items.removeAll(keepingCapacity: true)
                head = 0
            }
            return item
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
