// A stream kept in the store as it plays — specs/offline.md §Cache, §Partial playback
//
// A download thread (the one `offline add` runs, OfflineDownloader) fills the
// entry's file from the first byte it lacks, with `Range` + `If-Range`; the
// reader reads the file up to what has been written. Bytes held from an
// earlier play come from disk at once; only the rest is asked for. Validators
// that changed start the entry over (the download's rule) — before the first
// byte is read; after that the read fails rather than splice two versions.
// A read far ahead of the download (a demuxer seeking to the end) goes to
// the network directly, and is not stored.
import Foundation
import HarmoniaCore
import Synchronization

/// The reading side of a cached stream. Threads: as `ByteSource` (one reader;
/// `cancel` from any).
final class CachedStreamSource: ByteSource, @unchecked Sendable {
    private let url: String
    private let fill: CacheFill
    private let network: any ByteSourcePort
    private let observer: (@Sendable (NetworkEvent) -> Void)?
    private let interrupted: @Sendable () -> Bool
    /// A read this far ahead of the download goes to the network directly.
    static let farBytes: Int64 = 1 << 20

    // Reader thread only.
    private var file: OfflineDataFile?
    /// The version (of `CacheFill.version`) of the bytes delivered so far; nil before the first.
    private var deliveredVersion: Int?
    // Guarded by `fill.lock`.
    private var readPosition: Int64 = 0
    /// The network source of far reads, made by the reader on its first one (`cancel` reaches it too).
    private var side: (any ByteSource)?

    private init(url: String, fill: CacheFill, network: any ByteSourcePort, observer: (@Sendable (NetworkEvent) -> Void)?,
                 interrupted: @escaping @Sendable () -> Bool) {
        self.url = url
        self.fill = fill
        self.network = network
        self.observer = observer
        self.interrupted = interrupted
    }

    deinit {
        fill.lock.withLock { side }?.cancel()
        fill.stop()
        PlayingKeys.release(fill.key)
    }

    /// Starts keeping `url` as the cached entry `key` and waits for the
    /// server's answer.
    /// - Returns: the source; nil when the stream is not for the cache (this
    ///   process or another is filling the key already; radio, no length, not
    ///   audio, larger than the cache, a store that cannot write): the caller
    ///   plays it from the network (or, now complete, from disk).
    /// - Throws: what the network port's `open` throws for the same server
    ///   (a 404, a refusal, an error status, the network timeout: the
    ///   download's `networkFailed`, HTTPFailure's words), by the same time;
    ///   `invalidState` when `interrupted`.
    static func open(url: String, key: String, store: OfflineStore, settings: OfflineCacheSettings,
                     network: any ByteSourcePort, observer: (@Sendable (NetworkEvent) -> Void)?,
                     interrupted: @escaping @Sendable () -> Bool) throws(CoreError) -> CachedStreamSource? {
        guard PlayingKeys.claim(key, exclusive: true) else { return nil }
        let fill = CacheFill(key: key, path: store.directory + "/" + offlineFileName(forKey: key))
        let source = CachedStreamSource(url: url, fill: fill, network: network, observer: observer, interrupted: interrupted)
        observer?(.connecting)
        fill.start(url: url, store: store, settings: settings, observer: observer)
        guard try fill.awaitAnswer(interrupted: interrupted) else { return nil }  // deinit stops and releases
        return source
    }

    // MARK: ByteSource

    func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(CoreError) -> Int {
        guard count > 0 else { return 0 }
        while true {
            switch try fill.next(at: position, count: count, stop: interrupted) {
            case .end:
                return 0
            case .far(let at):
                let n = try readFar(into: buffer, count: count, at: at)
                fill.lock.withLock { readPosition = at + Int64(n) }
                return n
            case .disk(let at, let want, let version):
                if let deliveredVersion, deliveredVersion != version {
                    throw .ioError("\(url): the file changed on the server while it played; play it again")
                }
                if file == nil { file = try OfflineDataFile(path: fill.path, create: false) }
                let n = try file!.read(into: buffer, count: want, at: at)
                // Bytes read while the download started over belong to no one version: read again.
                guard n > 0, fill.lock.withLock({ fill.version == version }) else { continue }
                deliveredVersion = version
                fill.lock.withLock { readPosition = at + Int64(n) }
                return n
            }
        }
    }

    /// Bytes `at` and on from the network directly (not stored).
    private func readFar(into buffer: UnsafeMutableRawPointer, count: Int, at: Int64) throws(CoreError) -> Int {
        let source: any ByteSource
        if let made = fill.lock.withLock({ side }) {
            source = made
        } else {
            source = try network.open(url: url, observer: observer, interrupted: interrupted)
            fill.lock.withLock { side = source }
        }
        if source.position != at { try source.seek(to: at) }
        return try source.read(into: buffer, count: count)
    }

    func seek(to offset: Int64) throws(CoreError) {
        guard offset >= 0 else { throw .invalidArgument("\(url): seek to byte \(offset); bytes start at 0") }
        fill.lock.withLock { readPosition = offset }
    }

    var position: Int64 { fill.lock.withLock { readPosition } }

    var size: Int64? { fill.lock.withLock { fill.total } }

    var isSeekable: Bool { true }

    func cancel() {
        fill.lock.withLock { side }?.cancel()
        fill.stop()
    }
}

/// The download side of a cached stream: its thread, and what it has
/// written so far. Threads: the download thread writes, the reader reads;
/// every field guarded by `lock`.
final class CacheFill: @unchecked Sendable {
    let key: String
    /// The entry's data file.
    let path: String
    let lock = ConditionLock()
    /// The whole length, once a response was accepted.
    var total: Int64?
    /// Bytes [0, available) of the file hold one version (`version`).
    var available: Int64 = 0
    /// Bumped each time the download starts over (the held bytes dropped).
    var version = 0
    var answered = false
    var finished = false
    var failure: CoreError?
    /// The download failed because of the server or the network (`failure`
    /// is then what a stream without the cache fails with).
    var failedOnNetwork = false
    var stopped = false
    /// What a resumed download holds before its first answer (`holding`).
    private var held: (have: Int64, total: Int64)?

    init(key: String, path: String) {
        self.key = key
        self.path = path
    }

    /// Runs the download on a thread of its own.
    func start(url: String, store: OfflineStore, settings: OfflineCacheSettings, observer: (@Sendable (NetworkEvent) -> Void)?) {
        var options = OfflineDownloadOptions()
        options.http = settings.http
        options.giveUpAfter = settings.http.networkTimeout
        let downloader = OfflineDownloader(store: store, options: options)
        let limit = settings.limit
        let thread = Thread { [self] in
            nameCurrentThread("harmonia.cache")
            let tap = DownloadTap(
                admit: { total in self.admit(total: total, store: store, limit: limit) },
                written: { have in self.lock.withLock { self.available = have; self.answered = true; self.lock.broadcast() } },
                holding: { have, total in self.holding(have, of: total) },
                restarting: { self.lock.withLock { self.available = 0; self.version += 1 } },
                shouldStop: { self.lock.withLock { self.stopped } },
                refused: { status in
                    observer?(.linkExpired(status: status))
                    return settings.http.renewLink?(url, status)
                },
                networkFailed: { _ in self.lock.withLock { self.failedOnNetwork = true } })
            var attempts = 0
            let result: Result<OfflineEntry?, CoreError>
            do throws(CoreError) {
                result = .success(try downloader.download(url: url, key: key, pinned: false, wait: false, tap: tap) { progress in
                    switch progress {
                    case .retrying(_, let have, _):
                        self.serverUnreachable()
                        attempts += 1
                        observer?(.reconnecting(attempt: attempts, byte: have))
                    case .started(_, _, let have, _) where attempts > 0:
                        attempts = 0
                        observer?(.resumed(byte: have))
                    default: break
                    }
                })
            } catch {
                result = .failure(error)
            }
            lock.withLock {
                switch result {
                case .success(let entry?):
                    total = entry.size
                    available = entry.held
                case .success(nil): break  // another process fills it
                case .failure(let error): failure = error
                }
                finished = true
                lock.broadcast()
            }
            StreamCacheDownloads.remove(self)
        }
        thread.name = "harmonia.cache"
        StreamCacheDownloads.add(self)
        thread.start()
    }

    /// Whether `total` bytes fit (a pinned entry always does: it is not the cache's).
    private func admit(total: Int64, store: OfflineStore, limit: Int64) -> Bool {
        if (try? store.entry(key: key))?.pinned == true { return accept(total) }
        let keeping = PlayingKeys.all()
        guard (try? store.makeRoom(for: key, total: total, limit: limit, keeping: keeping)) == true else { return false }
        try? store.recordPlayed(key: key)
        return accept(total)
    }

    private func accept(_ total: Int64) -> Bool {
        lock.withLock { self.total = total }
        return true
    }

    /// The download holds bytes [0, `have`) of a `total`-byte resource,
    /// vouched for by a validator, before its first request. Kept until the
    /// server answers; should it not (`serverUnreachable`), the reader starts
    /// on them.
    private func holding(_ have: Int64, of total: Int64) {
        lock.withLock { held = (have, total) }
    }

    /// An attempt failed before any answer: with no network, the reader
    /// plays the held bytes now, and its read fails at their end (after the
    /// network timeout). Should the server come back with another version,
    /// the download starts over and the read fails rather than splice (`version`).
    private func serverUnreachable() {
        lock.withLock {
            guard !answered, let held else { return }
            total = held.total
            available = held.have
            answered = true
            lock.broadcast()
        }
    }

    /// Waits until the download has an accepted answer (true) or ended
    /// without one (false: the caller plays from elsewhere).
    /// - Throws: the download's failure when the server or the network
    ///   ended it (a stream without the cache would have failed the same);
    ///   `invalidState` when `interrupted`.
    func awaitAnswer(interrupted: @Sendable () -> Bool) throws(CoreError) -> Bool {
        try lock.withLock { () throws(CoreError) -> Bool in
            while true {
                if answered && total != nil { return true }
                if finished {
                    if total != nil && available == total { return true }
                    if failedOnNetwork, let failure { throw failure }
                    return false
                }
                if interrupted() { throw CoreError.invalidState("\(key): the open was cancelled") }
                lock.wait(seconds: 0.1)
            }
        }
    }

    /// What a read at `at` of up to `count` bytes does next.
    enum Step {
        /// Bytes [at, at + count) are in the file, of version `version`.
        case disk(at: Int64, count: Int, version: Int)
        /// Far ahead of the download: read from the network.
        case far(at: Int64)
        case end
    }

    /// Waits until the read at `at` can go on. Throws the download's
    /// failure once the server or the network ended it short of `at`; a
    /// download the store ended (a full disk) leaves the rest to the network
    /// (`far`). `invalidState` when `stop`.
    func next(at: Int64, count: Int, stop: () -> Bool) throws(CoreError) -> Step {
        try lock.withLock { () throws(CoreError) -> Step in
            while true {
                if stopped || stop() { throw CoreError.invalidState("\(key): reading was cancelled") }
                if at < available { return .disk(at: at, count: Int(min(Int64(count), available - at)), version: version) }
                if let total, at >= total {
                    // The end: once the download has recorded the entry complete (if it got there).
                    if finished || available < total { return .end }
                } else if finished {
                    if failure != nil && !failedOnNetwork { return .far(at: at) }
                    throw failure ?? CoreError.ioError("\(key): the download ended at byte \(available)")
                } else if at - available >= CachedStreamSource.farBytes {
                    return .far(at: at)
                }
                lock.wait(seconds: 0.1)
            }
        }
    }

    /// Ends the download (the entry kept as far as it is fsynced) and the reader's waits.
    func stop() {
        lock.withLock {
            stopped = true
            lock.broadcast()
        }
    }
}

/// The cache downloads running in this process, so that a process about to
/// exit stops them first: each records what it holds (fsynced) rather than
/// being cut wherever `exit` finds it. Threads: any (a mutex).
public enum StreamCacheDownloads {
    private static let running = Mutex<[ObjectIdentifier: CacheFill]>([:])

    static func add(_ fill: CacheFill) { running.withLock { $0[ObjectIdentifier(fill)] = fill } }

    static func remove(_ fill: CacheFill) { running.withLock { $0[ObjectIdentifier(fill)] = nil } }

    /// Stops every cache download and waits until each has ended, for at
    /// most `seconds` in all. Returns how many had not ended by then.
    @discardableResult
    public static func stopAll(waitingUpTo seconds: Double) -> Int {
        let fills = running.withLock { Array($0.values) }
        fills.forEach { $0.stop() }
        let deadline = monotonicSeconds() + seconds
        return fills.filter { fill in
            fill.lock.withLock {
                while !fill.finished {
                    let left = deadline - monotonicSeconds()
                    if left <= 0 { return true }
                    fill.lock.wait(seconds: left)
                }
                return false
            }
        }.count
    }
}

/// The entries this process plays now (from disk, or filling through the
/// cache): never evicted; a key is filled by one source at a time.
/// Threads: any (a mutex).
enum PlayingKeys {
    private static let counts = Mutex<[String: Int]>([:])

    /// Counts one more reader of `key`; `exclusive`: only when there is none (false then).
    static func claim(_ key: String, exclusive: Bool) -> Bool {
        counts.withLock { counts in
            if exclusive && counts[key] != nil { return false }
            counts[key, default: 0] += 1
            return true
        }
    }

    /// One reader of `key` fewer.
    static func release(_ key: String) {
        counts.withLock { counts in
            if let n = counts[key], n > 1 { counts[key] = n - 1 } else { counts[key] = nil }
        }
    }

    /// Every key played now.
    static func all() -> Set<String> { counts.withLock { Set($0.keys) } }
}
