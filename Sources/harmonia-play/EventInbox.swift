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
final class EventInbox: @unchecked Sendable {
    enum Item {
        case event(PlaybackEvent)
        /// SIGINT or SIGTERM arrived.
        case signal(Int32)
        /// A control-protocol request, or the end of a client's input.
        case control(ControlMessage)
        /// A key pressed in the terminal (interactive play).
        case key(Key)
        /// A desktop client's MPRIS `Quit` (DesktopSession).
        case quit
    }

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var items: [Item] = []
    private var head = 0
    private var signalSources: [DispatchSourceSignal] = []

    /// Adds `item`; never blocks for long (safe from the service's observer).
    func post(_ item: Item) {
        lock.withLock {
            items.append(item)
            lock.broadcast()
        }
    }

    /// The oldest item, waiting until there is one.
    func take() -> Item {
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
    func catchTerminationSignals(also: @escaping @Sendable (Int32) -> Void = { _ in }) {
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
