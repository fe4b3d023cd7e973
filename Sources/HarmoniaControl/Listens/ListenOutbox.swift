// ListenOutbox: delivers the history's undelivered listens to the reporting
// service, through any outage — specs/listens.md §Outbox, §Retries
//
// The outbox is the store's table: a listen is marked delivered only after
// the service accepted the request carrying it. One request at a time, on
// the outbox's own thread (`start`) or on the caller's (`deliverBacklog`),
// never on the player's main loop.
import Foundation
import HarmoniaCore

/// When to try again after failures: 1 s doubling to 5 min, with jitter.
public struct ListenRetryPolicy: Sendable, Equatable {
    public var first: Double
    public var longest: Double

    public init(first: Double = 1, longest: Double = 300) {
        self.first = first
        self.longest = longest
    }

    /// Seconds to wait after `failures` (≥ 1) failures in a row; `jitter` in
    /// [0, 1] spreads it over 75 %…125 % of the doubled delay, at most `longest`.
    public func delay(afterFailures failures: Int, jitter: Double) -> Double {
        let doublings = Double(min(max(failures, 1) - 1, 30))
        let base = min(first * pow2(doublings), longest)
        let spread = 0.75 + 0.5 * min(max(jitter.isFinite ? jitter : 0.5, 0), 1)
        return min(base * spread, longest)
    }

    private func pow2(_ n: Double) -> Double {
        var value = 1.0
        for _ in 0..<Int(n) { value *= 2 }
        return value
    }
}

/// Delivers listens from a `ListenStorePort` through a `ListenReporterPort`.
///
/// Threads: `recorded`, `playingNow`, `finish` and `stop` from any thread;
/// `step` and `deliverBacklog` from one thread at a time, and not while
/// `start`'s thread runs.
public final class ListenOutbox: @unchecked Sendable {
    /// What one `step` did.
    public enum Progress: Sendable, Equatable {
        /// Nothing to send.
        case idle
        /// A request was answered (accepted or rejected): more may follow at once.
        case sent
        /// Failed or throttled: nothing before `until` (monotonic seconds).
        case waiting(until: Double, rateLimited: Bool)
        /// The token was refused: nothing more until it changes.
        case unauthorized
    }

    /// Most listens in one request (ListenBrainz's MAX_LISTENS_PER_REQUEST).
    public static let batchLimit = 1000

    private let store: any ListenStorePort
    private let reporter: any ListenReporterPort
    private let policy: ListenRetryPolicy
    private let clock: @Sendable () -> Double
    private let jitter: @Sendable () -> Double
    private let report: @Sendable (String) -> Void
    /// Unix seconds this outbox began: a listen first heard since then was heard by this process.
    private let liveSince: Int64
    private let lock = ConditionLock()

    // Guarded by `lock`.
    private var live = Set<Int64>()
    private var nowPlaying: ListenMetadata?
    private var notBefore = 0.0
    private var rateLimitedUntil = 0.0
    private var failures = 0
    private var batch = ListenOutbox.batchLimit
    private var refused = false
    private var mayHaveWork = true
    /// Counts `recorded` and `playingNow` calls: news that came during a step.
    private var news = 0
    private var urgent = false
    private var stopped = false
    private var running = false
    private var busy = false
    private var thread: Thread?
    private var reportedStoreError = false
    /// Listens accepted by the service through this outbox. Guarded by `lock`.
    private var delivered = 0

    /// Listens accepted by the service through this outbox.
    public var deliveredCount: Int { lock.withLock { delivered } }

    /// - Parameters: `clock` monotonic seconds; `jitter` a number in [0, 1];
    ///   `report` one line for the user (a refused token, a store failure).
    public init(store: any ListenStorePort, reporter: any ListenReporterPort, policy: ListenRetryPolicy = ListenRetryPolicy(),
                clock: @escaping @Sendable () -> Double = monotonicSeconds,
                jitter: @escaping @Sendable () -> Double = { Double.random(in: 0...1) },
                report: @escaping @Sendable (String) -> Void,
                liveSince: Int64 = Int64(Date().timeIntervalSince1970)) {
        self.liveSince = liveSince
        self.store = store
        self.reporter = reporter
        self.policy = policy
        self.clock = clock
        self.jitter = jitter
        self.report = report
    }

    /// A listen was recorded by this process: sent as `single` when it goes alone.
    public func recorded(id: Int64) {
        lock.withLock {
            live.insert(id)
            news &+= 1
            mayHaveWork = true
            lock.broadcast()
        }
    }

    /// A track started being heard: its "playing now" goes out next (only the latest is kept).
    public func playingNow(_ metadata: ListenMetadata) {
        lock.withLock {
            nowPlaying = metadata
            news &+= 1
            mayHaveWork = true
            lock.broadcast()
        }
    }

    /// Sends at most one request (none while a 429's wait lasts). `timeout`: the request's limit in seconds.
    public func step(timeout: Double) -> Progress {
        let throttled = lock.withLock { rateLimitedUntil }
        // After a 429, no request of any kind before its reset time.
        if clock() < throttled { return .waiting(until: throttled, rateLimited: true) }
        let (notice, single, limit, blocked, seen) = lock.withLock {
            let notice = nowPlaying
            nowPlaying = nil
            return (notice, live, batch, refused, news)
        }
        if blocked {
            guard reporter.credentialsChanged() else { return .unauthorized }
            lock.withLock { refused = false }
        }
        if let notice {
            // Not kept: a failed "playing now" is old news by the next try.
            let outcome = reporter.submit(.playingNow(notice), timeout: timeout)
            if case .accepted = outcome { return .sent }
            if case .rejected = outcome { return .sent }
            return settle(outcome, ids: [])
        }
        let listens: [ListenRecord]
        do {
            listens = try store.undelivered(limit: limit)
            guard !listens.isEmpty else {
                lock.withLock { mayHaveWork = news != seen }
                return .idle
            }
            try store.mark(listens.map(\.id), .sending, error: nil)
        } catch {
            return storeFailed(error)
        }
        let ids = listens.map(\.id)
        // Alone and heard by this process (recorded now, or first heard since this outbox began: the
        // initial backlog step may read a row the main loop committed before it called `recorded`).
        let alone = listens.count == 1 && (single.contains(ids[0]) || listens[0].listenedAt >= liveSince)
        let outcome = reporter.submit(.listens(listens, single: alone), timeout: timeout)
        return settle(outcome, ids: ids)
    }

    /// What an answer means for the listens `ids` of its request.
    private func settle(_ outcome: ListenReportOutcome, ids: [Int64]) -> Progress {
        do {
            switch outcome {
            case .accepted:
                try store.mark(ids, .delivered, error: nil)
                lock.withLock {
                    live.subtract(ids)
                    failures = 0
                    delivered += ids.count
                    batch = min(Self.batchLimit, batch * 2)
                }
                return .sent
            case .rejected(let reason):
                if ids.count == 1 {
                    try store.mark(ids, .rejected, error: reason)
                    lock.withLock { _ = live.remove(ids[0]) }
                } else {
                    // One of them is bad: halve the request until it is alone.
                    try store.mark(ids, .pending, error: reason)
                    lock.withLock { batch = max(1, ids.count / 2) }
                }
                return .sent
            case .unauthorized(let reason):
                try store.mark(ids, .pending, error: reason)
                lock.withLock { refused = true }
                report("harmonia-play: listens: the ListenBrainz token was refused (\(reason)); check --listenbrainz-token-file or HARMONIA_LISTENBRAINZ_TOKEN. Listens are kept and sent once a good token is given")
                return .unauthorized
            case .rateLimited(let seconds):
                try store.mark(ids, .pending, error: "rate limited")
                let until = clock() + max(0, min(seconds.isFinite ? seconds : 60, 3600))
                lock.withLock {
                    notBefore = max(notBefore, until)
                    rateLimitedUntil = max(rateLimitedUntil, until)
                }
                return .waiting(until: until, rateLimited: true)
            case .failed(let reason):
                try store.mark(ids, .pending, error: reason)
                let until = lock.withLock {
                    failures = min(failures + 1, 64)
                    notBefore = clock() + policy.delay(afterFailures: failures, jitter: jitter())
                    return notBefore
                }
                return .waiting(until: until, rateLimited: false)
            }
        } catch {
            return storeFailed(error)
        }
    }

    private func storeFailed(_ error: any Error) -> Progress {
        let first = lock.withLock {
            defer { reportedStoreError = true }
            return !reportedStoreError
        }
        if first { report("harmonia-play: listens: \((error as? CoreError)?.message ?? "\(error)")") }
        let until = lock.withLock {
            failures = min(failures + 1, 64)
            notBefore = clock() + policy.delay(afterFailures: failures, jitter: jitter())
            return notBefore
        }
        return .waiting(until: until, rateLimited: false)
    }

    /// Delivers the backlog on the calling thread: requests until nothing is
    /// left, waiting out a 429 (`sleep` waits seconds) but not a failure.
    /// Returns how many were delivered and whether a failure or a refused token stopped it.
    public func deliverBacklog(timeout: Double, sleep: (Double) -> Void) -> (delivered: Int, stoppedBy: Progress?) {
        let before = deliveredCount
        while true {
            let progress = step(timeout: timeout)
            switch progress {
            case .sent: continue
            case .idle: return (deliveredCount - before, nil)
            case .waiting(let until, true):
                sleep(max(0, until - clock()))
            case .waiting, .unauthorized:
                return (deliveredCount - before, progress)
            }
        }
    }

    /// Starts delivering in the background, on a thread of its own.
    public func start(requestTimeout: Double = 30) {
        lock.withLock {
            guard thread == nil else { return }
            running = true
            let thread = Thread { [self] in run(requestTimeout: requestTimeout) }
            thread.name = "harmonia.listens"
            self.thread = thread
            thread.start()
        }
    }

    private func run(requestTimeout: Double) {
        lock.withLock {
            while !stopped {
                let now = clock()
                let ready = urgent ? rateLimitedUntil : notBefore
                if refused {
                    // Until the token changes: looked at once a second (a small file read).
                    lock.broadcast()
                    lock.wait(seconds: 1)
                    if !stopped, lock.withLockReleased({ reporter.credentialsChanged() }) { refused = false }
                    continue
                }
                if !mayHaveWork {
                    lock.broadcast()
                    lock.wait()
                    continue
                }
                if now < ready {
                    lock.wait(seconds: ready - now)
                    continue
                }
                busy = true
                let timeout = urgent ? max(0.1, min(requestTimeout, deadline - now)) : requestTimeout
                let progress = lock.withLockReleased { step(timeout: timeout) }
                busy = false
                // At exit one failed attempt is enough: the rest waits for the next run.
                if urgent, case .waiting(_, false) = progress { mayHaveWork = false }
                lock.broadcast()
            }
            running = false
            lock.broadcast()
        }
    }

    private var deadline = Double.infinity

    /// At exit: tries for at most `seconds` (failures' back-off skipped, a
    /// 429 honoured) to deliver what is left, then stops the thread. What is
    /// not delivered stays in the store for the next run.
    public func finish(within seconds: Double) {
        lock.withLock {
            guard running else { return }
            urgent = true
            deadline = clock() + max(0, seconds)
            mayHaveWork = true
            lock.broadcast()
            while running, !refused, mayHaveWork || busy || nowPlaying != nil {
                let left = deadline - clock()
                if left <= 0 { break }
                lock.wait(seconds: left)
            }
            stopped = true
            lock.broadcast()
            // Out of a request, the thread leaves at once; in one, it is not waited for past the deadline.
            awaitThreadExit(until: busy ? clock() : clock() + 0.5)
        }
    }

    /// Stops the background thread: waits at most 50 ms for it to leave (a
    /// request in flight is not waited for; the process may end under it).
    public func stop() {
        lock.withLock {
            stopped = true
            lock.broadcast()
            awaitThreadExit(until: clock() + 0.05)
        }
    }

    /// Waits, `lock` held and `stopped` set, until the thread has left or
    /// `until` (monotonic seconds): a process must not exit while the thread
    /// is between two calls into Foundation or SQLite (reading the token file).
    private func awaitThreadExit(until: Double) {
        while running {
            let left = until - clock()
            if left <= 0 { return }
            lock.wait(seconds: left)
        }
    }
}

