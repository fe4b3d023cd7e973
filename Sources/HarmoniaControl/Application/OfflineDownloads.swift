// Offline downloads for the control protocol: queued, run off the main loop,
// announced as events — specs/control-protocol.md §Offline
import Foundation
import HarmoniaCore

/// What the offline downloads announce to every frontend (`PlayerFrontend.show(offline:)`).
public enum OfflineEvent: Sendable, Equatable {
    /// `bytes` of `total` are on disk; `rate` bytes a second since this
    /// response began. At most one every `OfflineDownloads.progressInterval`
    /// seconds per download, and one as each response begins.
    case progress(key: String, url: String, bytes: Int64, total: Int64, rate: Double)
    /// The copy is complete.
    case done(OfflineCopy)
    /// The download failed (or was cancelled by `offline/remove`); what it held stays, partial.
    case failed(key: String, url: String, error: CoreError)
    /// `offline/remove` removed these entries.
    case removed(keys: [String])

    /// The control protocol's event name.
    public var name: String {
        switch self {
        case .progress: "offline_progress"
        case .done: "offline_done"
        case .failed: "offline_error"
        case .removed: "offline_removed"
        }
    }
}

/// Keeps bytes-per-second of one transfer, from where it began. Its user's thread only.
public struct TransferMeter: Sendable {
    private var startTime: Double
    private var startBytes: Int64

    public init(bytes: Int64 = 0, at time: Double = monotonicSeconds()) {
        startTime = time
        startBytes = bytes
    }

    /// The rate at `bytes` now: bytes a second since the start (0 before any time passed).
    public func rate(bytes: Int64, at time: Double = monotonicSeconds()) -> Double {
        let elapsed = time - startTime
        guard elapsed > 0.001, bytes > startBytes else { return 0 }
        return Double(bytes - startBytes) / elapsed
    }
}

/// Runs the control protocol's offline downloads one after the other on a
/// thread of their own, so that a slow download never delays a command;
/// announces progress, completion and failures through the application.
/// A frontend of `PlayerApplication` only to learn the application at
/// `start` and to stop the downloads at `shutdown`.
///
/// Threads: `add`, `remove`, `list`, `copies` on the main loop (or any);
/// `port.download` runs on the download thread.
public final class OfflineDownloads: PlayerFrontend, @unchecked Sendable {
    public let port: any OfflineCopiesPort
    /// Seconds between two progress events of one download.
    public static let progressInterval = 0.25

    private struct Job: Sendable {
        let url: String
        let key: String
    }

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var pending: [Job] = []
    private var active: Job?
    private var cancelActive = false
    private var threadRunning = false
    private var closed = false
    private var announce: @Sendable (OfflineEvent) -> Void = { _ in }

    public init(port: any OfflineCopiesPort) {
        self.port = port
    }

    /// Announces through `app` (to every frontend, on the main loop).
    public func start(_ app: PlayerApplication) {
        lock.withLock { announce = { [weak app] event in app?.announce(offline: event) } }
    }

    /// Announces through `body` instead (tests; any thread).
    public func announce(to body: @escaping @Sendable (OfflineEvent) -> Void) {
        lock.withLock { announce = body }
    }

    /// Queues downloads of `urls` (`key` names the entry of a single URL);
    /// a key already queued or downloading is not queued twice. Returns at once.
    /// - Returns: the URLs with their keys, in order.
    /// - Throws: `invalidArgument` (a URL the store does not fetch, an empty
    ///   key, a key with several URLs): then nothing is queued.
    @discardableResult
    public func add(urls: [String], key: String? = nil) throws(CoreError) -> [(url: String, key: String)] {
        guard !urls.isEmpty else { throw .invalidArgument("offline/add: no URL given") }
        if let key {
            guard !key.isEmpty else { throw .invalidArgument("offline/add: 'key' is empty") }
            guard urls.count == 1 else { throw .invalidArgument("offline/add: 'key' names one entry; give one URL with it") }
        }
        for url in urls { try port.check(url: url) }
        let jobs = urls.map { Job(url: $0, key: port.key(forURL: $0, explicit: key)) }
        let launch = lock.withLock { () -> Bool in
            guard !closed else { return false }
            for job in jobs where active?.key != job.key && !pending.contains(where: { $0.key == job.key }) {
                pending.append(job)
            }
            guard !threadRunning, !pending.isEmpty else { return false }
            threadRunning = true
            return true
        }
        if launch { startThread() }
        return jobs.map { ($0.url, $0.key) }
    }

    /// Removes the entry named `name` (a key, else a URL), cancelling its download if one is queued or running.
    /// - Returns: the keys removed. - Throws: as `OfflineCopiesPort.remove`.
    public func remove(named name: String) throws(CoreError) -> [String] {
        let cancelled = lock.withLock { () -> [String] in
            let queued = pending.filter { $0.key == name || $0.url == name }.map(\.key)
            pending.removeAll { $0.key == name || $0.url == name }
            guard let active, active.key == name || active.url == name else { return queued }
            cancelActive = true
            return queued + [active.key]
        }
        var removed: [String]
        do throws(CoreError) {
            removed = try port.remove(named: name).map(\.key)
        } catch where error.category == .notFound && !cancelled.isEmpty {
            removed = []  // queued only: no entry yet
        }
        removed += cancelled.filter { !removed.contains($0) }
        emit(.removed(keys: removed))
        return removed
    }

    /// The keys of the complete copies; empty when the store cannot answer.
    public func completeKeys() -> Set<String> { (try? port.completeKeys()) ?? [] }

    /// Whether `url` plays from a complete copy, given `completeKeys()`.
    public func isOffline(_ url: String, in keys: Set<String>) -> Bool {
        !keys.isEmpty && keys.contains(port.playbackKey(forURL: url))
    }

    /// Cancels the running download and drops the queued ones; waits for the
    /// download thread to end (at most `timeout` seconds). What was held stays, partial.
    public func close(timeout: Double = 5) {
        lock.withLock {
            closed = true
            pending.removeAll()
            cancelActive = true
            let deadline = monotonicSeconds() + timeout
            while threadRunning {
                let left = deadline - monotonicSeconds()
                if left <= 0 { break }
                lock.wait(seconds: left)
            }
        }
    }

    public func shutdown() { close() }

    private func emit(_ event: OfflineEvent) {
        lock.withLock { announce }(event)
    }

    private func startThread() {
        let thread = Thread { [self] in
            nameCurrentThread("harmonia.offline")
            while let job = nextJob() { run(job) }
        }
        thread.name = "harmonia.offline"
        thread.start()
    }

    /// The next job (made active), or nil: then the thread ends.
    private func nextJob() -> Job? {
        lock.withLock {
            active = nil
            cancelActive = false
            guard !closed, !pending.isEmpty else {
                threadRunning = false
                lock.broadcast()
                return nil
            }
            let job = pending.removeFirst()
            active = job
            return job
        }
    }

    /// One download, its progress moderated (download thread).
    private func run(_ job: Job) {
        var meter = TransferMeter()
        var lastEmit = -Double.infinity
        let cancelled: @Sendable () -> Bool = { [self] in lock.withLock { cancelActive } }
        do throws(CoreError) {
            let copy = try port.download(url: job.url, key: job.key, cancelled: cancelled) { progress in
                let now = monotonicSeconds()
                switch progress {
                case .started(let have, let total):
                    meter = TransferMeter(bytes: have, at: now)
                    lastEmit = now
                    self.emit(.progress(key: job.key, url: job.url, bytes: have, total: total, rate: 0))
                case .bytes(let have, let total):
                    guard now - lastEmit >= Self.progressInterval else { return }
                    lastEmit = now
                    self.emit(.progress(key: job.key, url: job.url, bytes: have, total: total, rate: meter.rate(bytes: have, at: now)))
                }
            }
            emit(.done(copy))
        } catch {
            emit(.failed(key: job.key, url: job.url, error: error))
        }
    }
}
