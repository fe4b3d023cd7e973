// Downloading an offline copy, resumable — specs/offline.md §Downloads, §Crashes
//
// Bytes go to the entry's file at the offset they belong, are fsynced, and
// only then does the index say it holds them. A run after a crash (kill -9
// included) asks for the bytes after the file's end with `Range` and
// `If-Range` (the validator the held bytes came with): a 206 continues the
// file; a 200 (validators changed, or ranges ignored) starts it over from
// byte 0 — two versions are never spliced. Complete only when every declared
// byte is on disk, fsynced, and hashed.
import Foundation
import HarmoniaCore
import HarmoniaHTTP

/// What `offline add` reports as it goes. Called on the downloading thread.
public enum OfflineProgress: Sendable {
    /// A response began: `have` bytes already held (resumed), `total` declared.
    case started(key: String, url: String, have: Int64, total: Int64)
    /// `have` of `total` bytes on disk.
    case bytes(key: String, have: Int64, total: Int64)
    /// The connection was lost at `have`; a new attempt follows.
    case retrying(key: String, have: Int64, reason: String)
}

/// The numbers of a download.
public struct OfflineDownloadOptions: Sendable {
    /// Request headers, TLS and the per-connection stall timeout.
    public var http = HTTPSourceConfiguration()
    /// Seconds without a new byte (across reconnects) after which a download
    /// gives up, the entry kept partial. The default keeps a server that cuts
    /// every connection at the same offset under 25 s.
    public var giveUpAfter: Double = 15
    /// Bytes written between two fsyncs that the index records.
    public var checkpointBytes: Int64 = 1 << 20
    /// Starts over from byte 0 at most this many times in one run (validators
    /// that change under every request).
    public var maxRestarts = 3
    /// Checks that the whole file (written and fsynced, at `path`) is
    /// something the player plays, before the row says complete; throws
    /// what the decoder says (the download then fails with `unsupported`,
    /// the entry removed). nil: no check. Called on the downloading thread.
    public var probe: (@Sendable (_ path: String) throws(CoreError) -> Void)?

    public init() {}
}

/// Downloads URLs into an `OfflineStore`. Threads: any; `add` blocks its caller.
public struct OfflineDownloader: Sendable {
    public let store: OfflineStore
    public let options: OfflineDownloadOptions

    public init(store: OfflineStore, options: OfflineDownloadOptions = OfflineDownloadOptions()) {
        self.store = store
        self.options = options
    }

    /// Checks that `url` is something `add` fetches: http(s) with a host.
    /// - Throws: `invalidArgument` for `file:`, other schemes and non-URLs.
    public static func checkURL(_ url: String) throws(CoreError) {
        let lower = url.lowercased()
        if lower.hasPrefix("file:") {
            throw .invalidArgument("\(url): a file: URL is a local file already; play it directly (offline add takes http and https URLs)")
        }
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"),
              let parts = URLComponents(string: url), let host = parts.host, !host.isEmpty else {
            throw .invalidArgument("\(url): not an http or https URL; offline add downloads http(s) URLs")
        }
    }

    /// Downloads `url` as the entry `key` (default: the URL itself), resuming
    /// what an earlier run left. Waits while another process downloads the same key.
    /// - Returns: the complete entry.
    /// - Throws: `invalidArgument` (not an http(s) URL, empty key); `notFound`
    ///   (404); `unsupported` (a text page, a radio stream, no declared
    ///   length); `ioError` (network gave up — the entry stays partial —,
    ///   disk full, the index). Nothing is ever left marked complete that is not whole.
    ///
    /// `cancelled` is polled at least once a second while the transfer runs
    /// and before each retry: once it returns true, the download stops, the
    /// entry kept partial, and `add` throws `invalidState`.
    public func add(url: String, key: String? = nil, cancelled: @escaping () -> Bool = { false },
                    progress: @escaping (OfflineProgress) -> Void = { _ in }) throws(CoreError) -> OfflineEntry {
        try Self.checkURL(url)
        let key = try OfflineKey.make(url: url, explicit: key)
        // Waits for another process downloading this key, so never nil.
        return try download(url: url, key: key, pinned: true, wait: true, tap: DownloadTap(shouldStop: cancelled), progress: progress)!
    }

    /// The download of `key` on the calling thread: the entry made when
    /// absent (`pinned`: an offline copy; false: a cached stream), its
    /// file's lock taken, what is held resumed. One function under `add`
    /// and the stream cache (CachedStreamSource).
    /// - Returns: the complete entry; nil when `wait` is false and another
    ///   process holds the entry's lock (it is downloading or playing it).
    /// - Throws: as `add`.
    func download(url: String, key: String, pinned: Bool, wait: Bool, tap: DownloadTap,
                  progress: @escaping (OfflineProgress) -> Void) throws(CoreError) -> OfflineEntry? {
        var entry = try store.entryCreating(key: key, url: url, pinned: pinned)
        let file = try OfflineDataFile(path: store.path(of: entry), create: true)
        // Another process downloading this key: wait for it, then see what it left.
        guard try file.lock(wait: wait) else { return nil }
        guard let current = try store.entry(key: key) else {
            throw .invalidState("\(key): removed by another process while this one waited")
        }
        entry = current
        if pinned && !entry.pinned { try store.pin(key: key) }
        if entry.complete, let size = entry.size, try file.length() == size { return entry }
        var job = try Job(entry: entry, url: url, file: file, store: store, options: options, tap: tap, progress: progress)
        return try job.run()
    }
}

/// What the stream cache learns from a download as it runs, and how it
/// stops one. Each closure runs on the downloading thread and must return quickly.
struct DownloadTap {
    /// A response was accepted: its whole length. False refuses it (too
    /// large for the cache): the download fails with `unsupported`.
    var admit: (_ total: Int64) -> Bool = { _ in true }
    /// Bytes [0, have) are in the file (written; fsynced or not) and belong to one version.
    var written: (_ have: Int64) -> Void = { _ in }
    /// Before the first request of a resumed download (this process holds the
    /// entry's lock): bytes [0, have) of a `total`-byte resource are in the
    /// file, vouched for by a recorded validator.
    var holding: (_ have: Int64, _ total: Int64) -> Void = { _, _ in }
    /// Called before the held bytes are dropped to start over (another version).
    var restarting: () -> Void = {}
    /// Polled between writes and about once a second in a wait: true ends the download, the entry kept partial.
    var shouldStop: () -> Bool = { false }
    /// The server refused the link (HTTP `status`: 401, 403, 410): a fresh
    /// one to go on with at the same byte, or nil (the download fails). May block.
    var refused: (_ status: Int) -> String? = { _ in nil }
    /// Just before the download fails because of the server or the network
    /// (an error status, a refusal, the network timeout, a bad URL or
    /// certificate): the error, the one a stream read without the store
    /// fails with (HTTPFailure). Not called for what only the store refuses
    /// (not audio, no length, too large, a full disk).
    var networkFailed: (_ error: CoreError) -> Void = { _ in }
}

/// One download in progress. Its own thread only.
private struct Job {
    let key: String
    let url: String
    /// The URL requested now: `url`, or the fresh link that replaced a refused one.
    var fetchURL: String
    var renewals = 0
    let file: OfflineDataFile
    let store: OfflineStore
    let options: OfflineDownloadOptions
    let progress: (OfflineProgress) -> Void
    let tap: DownloadTap
    /// Bytes [0, have) of the file hold the resource as `validator` names it.
    var have: Int64
    /// SHA-256 of bytes [0, have) and of their blocks, fed on this thread (libcrypto keeps up with any transfer).
    var hasher: ContentHasher
    var validator: String?
    var etag: String?
    var size: Int64?
    var checkpoint: Int64
    /// Whether this run made the entry (removed again when it fails with nothing held).
    let fresh: Bool
    /// What the user does to resume an offline copy (nil for a cached
    /// stream: its errors read as the network's, the next play resumes it).
    let resumeHint: String?
    /// When the last body byte came (or the wait for one started).
    var lastByteAt = monotonicSeconds()

    init(entry: OfflineEntry, url: String, file: OfflineDataFile, store: OfflineStore, options: OfflineDownloadOptions,
         tap: DownloadTap, progress: @escaping (OfflineProgress) -> Void) throws(CoreError) {
        key = entry.key
        self.url = url
        fetchURL = url
        self.file = file
        self.store = store
        self.options = options
        self.progress = progress
        self.tap = tap
        etag = entry.etag
        validator = entry.etag ?? entry.lastModified
        size = entry.size
        let length = try file.length()
        have = length
        checkpoint = 0
        fresh = length == 0 && entry.etag == nil && entry.lastModified == nil
        resumeHint = entry.pinned ? "the copy stays partial: run 'offline add' again to resume" : nil
        if length > 0, entry.etag == nil && entry.lastModified == nil || (entry.size.map { length > $0 } ?? false) {
            tap.restarting()
            try file.truncate(to: 0)  // bytes no validator vouches for: never spliced
            have = 0
        }
        if entry.damaged, length > 0, have > 0 {
            // A copy found altered on disk: only its blocks still as recorded
            // are kept; the download resumes at the first that is not.
            var kept: Int64 = 0
            if let blocks = try store.blockHashes(key: entry.key, size: entry.size ?? 0) {
                kept = try file.verifiedPrefix(blocks, upTo: length)
            }
            have = kept
            try file.truncate(to: kept)
            try file.sync()
        }
        var seed = ContentHasher()
        try file.hash(upTo: have, into: &seed)
        hasher = seed
        checkpoint = have
    }

    /// Per attempt: what the response said, and what went wrong.
    private struct Attempt {
        var failure: CoreError?
        var restart: String?
        var discard: Int64 = 0
        var lastWriteReport = 0.0
    }

    mutating func run() throws(CoreError) -> OfflineEntry {
        // Killed after the last byte was written but before the row said
        // complete: every byte is here, vouched for by the recorded validators.
        if let size, size > 0, have == size { return try finish() }
        if have > 0, validator != nil, let size, have < size { tap.holding(have, size) }
        lastByteAt = monotonicSeconds()
        var restarts = 0
        var attemptNumber = 0
        while true {
            var attempt = Attempt()
            let requested = have
            let end = httpFetch(url: fetchURL, start: requested, ifRange: requested > 0 ? validator : nil, configuration: options.http,
                                head: { head in self.head(head, requested: requested, attempt: &attempt) },
                                body: { bytes in self.body(bytes, attempt: &attempt) },
                                shouldStop: tap.shouldStop)
            if let failure = attempt.failure { throw giveUp(failure) }
            if tap.shouldStop() {
                throw giveUp(.invalidState("\(url): the download was stopped" + (resumeHint.map { "; \($0)" } ?? "")))
            }
            if let reason = attempt.restart {
                restarts += 1
                guard restarts <= options.maxRestarts else {
                    throw giveUpOnNetwork(.ioError("\(url): started over \(restarts) times (\(reason)); the server's file keeps changing"))
                }
                try startOver()
                continue
            }
            if let size, have == size {
                return try finish()
            }
            switch end {
            case .status(404):
                throw giveUpOnNetwork(HTTPFailure.notFound(url))
            case .status(let status) where [401, 403, 410].contains(status):
                // A signed link that expired: a fresh one goes on at the same byte (HTTPStream's rule, specs/network.md).
                let asking = options.http.renewLink != nil && renewals < 8
                guard asking, let fresh = tap.refused(status), !fresh.isEmpty else {
                    throw giveUpOnNetwork(HTTPFailure.refused(url, status: status, askedForFreshLink: asking))
                }
                renewals += 1
                fetchURL = fresh
                lastByteAt = monotonicSeconds()  // asking for a link is not waiting for the network
                continue
            case .status(416):
                try startOver()  // asked past the end of a file that is now shorter
                restarts += 1
                if restarts > options.maxRestarts { throw giveUpOnNetwork(.ioError("\(url): the server refuses every range (HTTP 416)")) }
                continue
            case .status(let status) where !(status == 408 || status == 429 || status >= 500):
                throw giveUpOnNetwork(HTTPFailure.status(url, status))
            case .permanent(let error):
                throw giveUpOnNetwork(error)
            default:
                break
            }
            // A lost connection or a short body: try again from the file's end,
            // unless no byte has come for `giveUpAfter` seconds (HTTPStream's rule).
            try checkpointNow()
            let silent = monotonicSeconds() - lastByteAt
            let reason: String = switch end {
            case .transient(let text): text
            case .status(let status): HTTPFailure.statusReason(status)
            default: "the body ended at " + (size.map { "byte \(have) of \($0)" } ?? "byte \(have)")
            }
            guard silent < options.giveUpAfter else {
                throw giveUpOnNetwork(HTTPFailure.timedOut(url, after: options.giveUpAfter, attempts: attemptNumber + 1, at: have,
                                                           of: size, last: reason))
            }
            progress(.retrying(key: key, have: have, reason: reason))
            attemptNumber += 1
            let backoff = min(options.http.firstBackoff * Double(1 << min(attemptNumber - 1, 16)), options.http.maxBackoff,
                              max(0, options.giveUpAfter - silent))
            var pause = timespec(tv_sec: Int(backoff), tv_nsec: Int((backoff - backoff.rounded(.down)) * 1e9))
            _ = nanosleep(&pause, nil)  // the back-off between two attempts, as HTTPStream's
        }
    }

    /// A response's headers: is it the file, and where does its body go?
    private mutating func head(_ head: HTTPFetchHead, requested: Int64, attempt: inout Attempt) -> Bool {
        if head.icy {
            attempt.failure = .unsupported("\(url): a radio stream (ICY); radio is never stored")
            return false
        }
        if let type = head.contentType, Self.isNotAudio(type) {
            attempt.failure = .unsupported("\(url): the server sent '\(type)', not audio")
            return false
        }
        let total: Int64?
        if head.status == 206 {
            guard let first = head.rangeFirst, !head.rangeInvalid, first <= requested, requested - first <= 64 << 10 else {
                attempt.restart = "a Content-Range that is not the one asked for"
                return false
            }
            if requested > 0 {
                if let old = etag, let new = head.etag, old != new {
                    attempt.restart = "the ETag changed"
                    return false
                }
                if let size, let declared = head.rangeTotal, declared != size {
                    attempt.restart = "the size changed"
                    return false
                }
            }
            attempt.discard = requested - first
            total = head.rangeTotal ?? (requested == 0 ? head.contentLength : size)
        } else {
            if requested > 0 {
                // A whole body where a range was asked: validators changed, or
                // ranges are not served. Start over cleanly with this body.
                do throws(CoreError) { try truncateToZero() } catch {
                    attempt.failure = error
                    return false
                }
            }
            total = head.contentLength
        }
        guard let total else {
            attempt.failure = .unsupported("\(url): the server declares no length (a live stream?); only whole files are stored")
            return false
        }
        guard tap.admit(total) else {
            attempt.failure = .unsupported("\(url): \(total) bytes do not fit in the cache")
            return false
        }
        size = total
        etag = head.etag
        validator = head.etag ?? head.lastModified
        do throws(CoreError) {
            // The validators first: a crash after this leaves bytes that match them.
            try store.recordStart(key: key, url: url, held: have, size: total, etag: head.etag, lastModified: head.lastModified,
                                  contentLength: head.contentLength)
        } catch {
            attempt.failure = error
            return false
        }
        progress(.started(key: key, url: url, have: have, total: total))
        tap.written(have)
        return true
    }

    /// Body bytes: to the file at `have`, into the hash.
    private mutating func body(_ bytes: UnsafeRawBufferPointer, attempt: inout Attempt) -> Bool {
        if tap.shouldStop() { return false }
        var bytes = bytes
        if attempt.discard > 0 {
            let drop = Int(min(attempt.discard, Int64(bytes.count)))
            attempt.discard -= Int64(drop)
            bytes = UnsafeRawBufferPointer(rebasing: bytes[drop...])
            if bytes.isEmpty { return true }
        }
        guard let size, Int64(bytes.count) <= size - have else {
            attempt.restart = "the server sent more bytes than it declared"
            return false
        }
        do throws(CoreError) {
            try file.write(bytes, at: have)
            hasher.update(bytes)
            have += Int64(bytes.count)
            lastByteAt = monotonicSeconds()
            tap.written(have)
            if have - checkpoint >= options.checkpointBytes { try checkpointNow() }
        } catch {
            attempt.failure = error
            return false
        }
        if lastByteAt - attempt.lastWriteReport >= 0.1 || have == size {
            attempt.lastWriteReport = lastByteAt
            progress(.bytes(key: key, have: have, total: size))
        }
        return true
    }

    /// Fsyncs the file, then records what it holds.
    private mutating func checkpointNow() throws(CoreError) {
        try file.sync()
        try store.recordHeld(key: key, held: have)
        checkpoint = have
    }

    private mutating func truncateToZero() throws(CoreError) {
        tap.restarting()
        try file.truncate(to: 0)
        try file.sync()
        have = 0
        checkpoint = 0
        hasher = ContentHasher()
    }

    /// Drops what is held and forgets the validators (the next request has no Range).
    private mutating func startOver() throws(CoreError) {
        try truncateToZero()
        etag = nil
        validator = nil
        size = nil
        try store.recordStart(key: key, url: url, held: 0, size: nil, etag: nil, lastModified: nil, contentLength: nil)
    }

    /// Every byte is here: fsync, hash, probe, and only then the row says complete.
    private mutating func finish() throws(CoreError) -> OfflineEntry {
        try file.sync()
        let (hash, blocks) = hasher.finish()
        if let probe = options.probe {
            do throws(CoreError) { try probe(file.path) } catch {
                // Not audio: nothing of it is kept, so nothing says complete.
                if let entry = try? store.entry(key: key) { try? store.remove(entry) }
                throw .unsupported("\(url): not audio, nothing kept (\(error.message))")
            }
        }
        try store.recordComplete(key: key, size: have, hash: hash, blocks: blocks)
        guard let entry = try store.entry(key: key) else { throw .invalidState("\(key): the entry vanished at completion") }
        return entry
    }

    /// `giveUp(error)` for a failure of the server or the network: told to
    /// the tap first, and for an offline copy with how to resume.
    private mutating func giveUpOnNetwork(_ error: CoreError) -> CoreError {
        tap.networkFailed(error)
        guard let resumeHint, have > 0 else { return giveUp(error) }
        return giveUp(CoreError(error.category, error.message + "; " + resumeHint))
    }

    /// `error`, after keeping what is held (fsynced, recorded) — or removing
    /// the entry when this run made it and holds nothing.
    private mutating func giveUp(_ error: CoreError) -> CoreError {
        if fresh && have == 0, let entry = try? store.entry(key: key), !entry.complete {
            try? store.remove(entry)
        } else {
            try? checkpointNow()
        }
        return error
    }

    /// Content types that are pages, not audio.
    static func isNotAudio(_ type: String) -> Bool {
        type.hasPrefix("text/") || type.hasSuffix("/json") || type.hasSuffix("+json") || type.hasSuffix("/xml")
            || type.hasSuffix("+xml") || type.hasSuffix("/html") || type.hasSuffix("/xhtml+xml")
    }
}
