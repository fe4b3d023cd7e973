// The application layer's main loop: one queue, one playback service, and
// every way of driving or showing it plugged in as a frontend
// — specs/application.md
import Dispatch
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// A driving adapter (the JSON-lines transports, MPRIS, the MPD protocol…)
/// or a view of the player (the console lines, the terminal's status line),
/// plugged into `PlayerApplication`'s main loop.
///
/// Threads: every method is called on the main loop, in this order: `open`,
/// `start`, then `show` and the questions, `interrupted`, `shutdown`. A
/// frontend's own threads post work to `app.inbox` (`.job`).
public protocol PlayerFrontend: AnyObject {
    /// Before the queue starts. Throwing ends the run (one failure), as a
    /// control socket that cannot be created does.
    func open(_ app: PlayerApplication) throws(CoreError)
    /// Once the queue has started: begin taking requests.
    func start(_ app: PlayerApplication)
    /// Each event of the service, in order.
    func show(_ event: PlaybackEvent)
    /// Each event with its stamp, the moment it was posted (`EventStamp`):
    /// a frontend whose clients come and go shows it only to the clients
    /// connected before that moment. By default `show(event)`.
    func show(_ event: PlaybackEvent, stamp: EventStamp)
    /// After a job that caused events (a command that changed the player),
    /// with the stamp of the last of them: the moment to derive from the
    /// state what changed (MPD's queue version and modes), as of the change
    /// and not as of the later moment its events are shown.
    func settled(at stamp: EventStamp)
    /// A setting that no playback event carries (the crossfade) changed,
    /// told within the command that changed it, before its reply is sent
    /// (`PlayerActions.setCrossfade`): the state file saves it, MPD's idle
    /// clients hear `options`. Not a queue change.
    func settingsChanged()
    /// True while commands can still come from this frontend: the player
    /// then stays at the end of the queue instead of exiting.
    var waitsForCommands: Bool { get }
    /// Asked when the service stopped: true keeps the player running for
    /// this one stop (a desktop's Stop button, which its Play undoes).
    func takeStopRequest() -> Bool
    /// A termination signal arrived (first thing: a terminal is restored).
    func interrupted()
    /// The run is over; release what `open` and `start` took.
    func shutdown()
    /// An event of the offline downloads (`OfflineDownloads`), to every
    /// client connected when it is shown (it has no `EventStamp`).
    func show(offline event: OfflineEvent)
}

extension PlayerFrontend {
    public func open(_ app: PlayerApplication) throws(CoreError) {}
    public func start(_ app: PlayerApplication) {}
    public func show(_ event: PlaybackEvent) {}
    public func show(_ event: PlaybackEvent, stamp: EventStamp) { show(event) }
    public func settled(at stamp: EventStamp) {}
    public func settingsChanged() {}
    public var waitsForCommands: Bool { false }
    public func takeStopRequest() -> Bool { false }
    public func interrupted() {}
    public func shutdown() {}
    public func show(offline event: OfflineEvent) {}
}

/// The player: plays a queue on `service` and serves its frontends until the
/// queue has ended (`stopped`) with nobody waiting to send commands, playback
/// failed for good (`error`), `quit` was asked, or a termination signal came.
///
/// One main loop (the thread calling `run`) takes everything in arrival
/// order from `inbox`: the service's events (handed over by an observer,
/// never handled on the service's threads), frontends' jobs and signals. A
/// command therefore finishes — and its reply is queued — before the events
/// it caused reach any frontend.
///
/// Threads: configure it (`add`, the closures) before `run`; from then on
/// other threads use only `perform`, `inbox`, `service` and `actions`.
public final class PlayerApplication: @unchecked Sendable {
    public enum Outcome: Equatable, Sendable {
        /// The queue ended; `failures` error events were reported on the way.
        case finished(failures: Int)
        /// SIGINT or SIGTERM: playback was stopped.
        case interrupted(signal: Int32)
        /// `quit` (a control client, the desktop): playback was stopped.
        case quit
    }

    public let service: DefaultPlaybackService
    /// The actions every frontend shares (volume and mute, relative seeks, radio titles).
    public let actions: PlayerActions
    /// What the main loop takes from; frontends post their work here.
    public let inbox = EventInbox()
    /// In the order they see events.
    public private(set) var frontends: [any PlayerFrontend] = []
    /// Called on the first termination signal, from a signal thread: makes
    /// the decoder's opens and reads in flight fail at once, so the main
    /// loop gets to the signal, as specs/inputs.md §Signals says.
    public var interruptIO: @Sendable () -> Void = {}
    /// Called from a signal thread when the main loop has not ended the
    /// process `signalGrace` seconds after a signal (held up where no flag
    /// reaches: a DNS lookup). It must end the process (`_exit`).
    public var abandon: @Sendable (_ signal: Int32) -> Void = { _exit(128 + $0) }
    /// Errors that come with no event (the queue could not start at all):
    /// the console reports them.
    public var reportError: (CoreError) -> Void = { _ in }
    public static let signalGrace = 0.5

    public init(service: DefaultPlaybackService, actions: PlayerActions) {
        self.service = service
        self.actions = actions
        actions.observeSettings { [weak self] in self?.announceSettingsChanged() }
    }

    /// Tells every frontend that a setting no event carries changed
    /// (`PlayerFrontend.settingsChanged`); returns once they all have been
    /// told. Main loop: a command's job, where every frontend's commands
    /// run (never on a frontend's own thread).
    private func announceSettingsChanged() {
        for frontend in frontends { frontend.settingsChanged() }
    }

    // Guarded by `performLock`: the main loop's thread while `run` runs, and
    // whether it has returned (jobs posted after that would never run).
    nonisolated(unsafe) private var mainThread: pthread_t?
    nonisolated(unsafe) private var finished = false

    /// Runs `body` on the main loop and returns its result, so that it is
    /// ordered with every other command and with the events (a network
    /// frontend's command). Called on the main loop itself, or once the run
    /// is over, it runs `body` at once.
    ///
    /// Threads: any; blocks the caller until the main loop has run `body`.
    public func perform<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let direct = performLock.withLock { finished || mainThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
        if direct { return body() }
        let box = PerformResult<T>()
        inbox.post(.job {
            box.set(body())
            return .continue
        })
        // The run may end with the job still queued: then run it here.
        if let value = box.wait(orUntil: { self.finished }) { return value }
        return body()
    }

    /// Shows `event` to every frontend, on the main loop (posted as a job).
    /// Threads: any.
    public func announce(offline event: OfflineEvent) {
        inbox.post(.job { [self] in
            for frontend in frontends { frontend.show(offline: event) }
            return .continue
        })
    }

    /// Adds a frontend; call before `run`.
    public func add(_ frontend: any PlayerFrontend) {
        frontends.append(frontend)
    }

    /// Plays `tracks` in order. Call once, on a fresh service.
    public func run(_ tracks: [Track]) -> Outcome {
        performLock.withLock { mainThread = pthread_self() }
        defer {
            performLock.withLock {
                finished = true
                mainThread = nil
                performLock.broadcast()
            }
        }
        let interruptIO = self.interruptIO, abandon = self.abandon
        inbox.catchTerminationSignals { signo in
            interruptIO()
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.signalGrace) { abandon(signo) }
        }
        // The observer runs on the service's threads, possibly under its lock:
        // it only hands the event over.
        let inbox = self.inbox
        service.observe { inbox.post(.event($0)) }
        var opened: [any PlayerFrontend] = []
        defer { for frontend in opened.reversed() { frontend.shutdown() } }
        for frontend in frontends {
            do throws(CoreError) {
                try frontend.open(self)
            } catch {
                reportError(error)
                return .finished(failures: 1)
            }
            opened.append(frontend)
        }
        service.enqueue(tracks)

        var failures = 0
        var ended = false
        if !tracks.isEmpty { do {
            // Inputs that cannot be opened are reported (error events) and
            // skipped; the call throws only when none from here on opens.
            try service.jump(to: 0)
            try service.play()
        } catch {
            // An error state comes with its events (drained below); anything
            // else leaves no event behind, so it is reported here.
            if case .error = service.state {} else {
                reportError(error)
                failures += 1
                ended = !waitsForCommands
            }
        } }
        // Requests are read once the queue has started.
        for frontend in frontends { frontend.start(self) }

        while !ended {
            let (item, stamp) = inbox.takeStamped()
            switch item {
            case .signal(let signo):
                for frontend in frontends { frontend.interrupted() }  // the terminal first, whatever stopping takes
                service.stop()
                return .interrupted(signal: signo)
            case .job(let job):
                let before = inbox.lastStamp
                let outcome = job()
                let after = inbox.lastStamp
                if after != before { for frontend in frontends { frontend.settled(at: after) } }
                switch outcome {
                case .continue:
                    break
                case .quit:
                    interruptIO()  // an open in flight ends now, not at its timeout
                    service.stop()
                    return .quit
                case .endQueue:
                    service.stop()
                    ended = true
                case .inputClosed:
                    // No command can come from there: end as without it (and at
                    // once when paused: nothing could resume it).
                    if !waitsForCommands {
                        switch service.state {
                        case .stopped, .error, .paused: ended = true
                        default: break
                        }
                    }
                }
            case .event(let event):
                for frontend in frontends { frontend.show(event, stamp: stamp) }
                actions.followBorder(event)
                switch event {
                case .error:
                    failures += 1
                case .network(.streamTitle(let title, _), let url):
                    actions.noteStreamTitle(title, url: url)
                case .stateChanged(.stopped), .stateChanged(.error):
                    // Every frontend is asked (a stop request is taken once).
                    let held = frontends.map { event == .stateChanged(.stopped) && $0.takeStopRequest() }
                    ended = !waitsForCommands && !held.contains(true)
                default:
                    break
                }
            }
        }
        return .finished(failures: failures)
    }

    /// True while any frontend may still send commands.
    private var waitsForCommands: Bool { frontends.contains { $0.waitsForCommands } }
}

/// The result of one `perform`, handed from the main loop to the caller.
/// Guarded by `performLock`, which also guards each application's `finished`.
private final class PerformResult<T: Sendable>: @unchecked Sendable {
    private var value: T?

    func set(_ value: T) {
        performLock.withLock {
            self.value = value
            performLock.broadcast()
        }
    }

    /// The value once set; nil if `gaveUp` (read under the lock) turns true first.
    func wait(orUntil gaveUp: () -> Bool) -> T? {
        performLock.withLock {
            while value == nil && !gaveUp() { performLock.wait() }
            return value
        }
    }
}

/// Guards every `PerformResult` and `PlayerApplication.finished`.
private let performLock = ConditionLock()
