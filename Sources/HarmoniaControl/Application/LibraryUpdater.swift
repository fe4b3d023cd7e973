// Library updates as the protocols ask for them (MPD's update/rescan, the
// first start of `serve`) — specs/application.md §Library updates
import Foundation
import HarmoniaCore
import HarmoniaLibrary
#if canImport(Glibc)
import Glibc
#endif

/// Runs the library scanner on a background thread of low priority, one
/// scan at a time, numbering each update as a job (MPD's `updating_db: N`).
/// A request while a scan runs is remembered and runs once it ends (several
/// requests make one more scan, as in MPD).
///
/// Threads: any. Observers are called on the scanning thread, without the
/// updater's lock held.
public final class LibraryUpdater: @unchecked Sendable {
    /// What observers hear.
    public enum Event: Sendable {
        /// A scan started (MPD's `update` idle event).
        case started(job: Int)
        /// A scan ended; `summary.completed` false when cancelled or failed.
        case finished(job: Int, summary: LibraryScanSummary, error: CoreError?)
    }

    public let scanner: LibraryScanner
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var lastJob = 0
    private var runningJob: Int?
    private var queuedJob: Int?
    private var observers: [@Sendable (Event) -> Void] = []
    private var cancellation = LibraryScanCancellation()
    private var closed = false

    public init(scanner: LibraryScanner) {
        self.scanner = scanner
    }

    /// Calls `observer` for every event from now on.
    public func observe(_ observer: @escaping @Sendable (Event) -> Void) {
        lock.withLock { observers.append(observer) }
    }

    /// Asks for a scan; returns its job number (a queued request's number
    /// when one is already waiting). Nothing happens once closed (returns 0).
    @discardableResult
    public func requestUpdate() -> Int {
        let start: Int? = lock.withLock {
            guard !closed else { return nil }
            if let queuedJob { return queuedJob }
            lastJob = lastJob == Int.max ? 1 : lastJob + 1
            if runningJob != nil {
                queuedJob = lastJob
                return nil
            }
            runningJob = lastJob
            return lastJob
        }
        if let start { launch(job: start) }
        return lock.withLock { start ?? queuedJob ?? 0 }
    }

    /// The job scanning now, if any (MPD's `updating_db` in `status`).
    public var currentJob: Int? { lock.withLock { runningJob } }

    /// Stops a running scan (what it committed stays) and refuses new ones;
    /// returns once no scan runs, or after `timeout` seconds.
    public func close(timeout: Double = 5) {
        lock.withLock {
            closed = true
            queuedJob = nil
            cancellation.cancel()
            let deadline = Date().addingTimeInterval(timeout)
            while runningJob != nil {
                let left = deadline.timeIntervalSinceNow
                if left <= 0 { break }
                lock.wait(seconds: left)
            }
        }
    }

    private func launch(job: Int) {
        let thread = Thread { [self] in
            nameCurrentThread("harmonia.scan")
            // Below the player's threads: the scan waits, the audio does not.
            // (On Linux a nice value is per thread; `who` 0 is this thread.)
            _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
            var current = job
            while true {
                let cancellation = lock.withLock { self.cancellation }
                notify(.started(job: current))
                var summary = LibraryScanSummary()
                var failure: CoreError?
                do throws(CoreError) {
                    summary = try scanner.scan(cancellation: cancellation)
                } catch {
                    failure = error
                }
                // The job is over before anyone hears so: a client woken by
                // `finished` that asks at once sees no update running.
                let next: Int? = lock.withLock {
                    if let queued = queuedJob, !closed {
                        queuedJob = nil
                        runningJob = queued
                        return queued
                    }
                    runningJob = nil
                    lock.broadcast()
                    return nil
                }
                notify(.finished(job: current, summary: summary, error: failure))
                guard let next else { return }
                current = next
            }
        }
        thread.name = "harmonia.scan"
        thread.start()
    }

    private func notify(_ event: Event) {
        for observer in lock.withLock({ observers }) { observer(event) }
    }
}
