// The offline store as the application layer sees it: a driven port, and
// what travels through it — specs/offline.md §Control protocol,
// specs/control-protocol.md §Offline
//
// HarmoniaControl does not import the store: HarmoniaOfflineStore's
// `OfflineStoreCopies` implements this port, and `harmonia-play` wires it,
// as HarmoniaSQLite implements HarmoniaLibrary's `LibraryStorePort`.
import HarmoniaCore

/// One entry of the offline store (an offline copy, or a partial one).
public struct OfflineCopy: Sendable, Equatable {
    public var key: String
    /// The URL as given when it was added.
    public var url: String
    /// The whole length in bytes; nil until a server declared it.
    public var size: Int64?
    /// Bytes on disk (the whole `size` when complete).
    public var held: Int64
    public var complete: Bool
    public var pinned: Bool
    /// Seconds since 1970 (UTC).
    public var added: Double
    public var lastPlayed: Double?
    public var etag: String?
    public var lastModified: String?
    public var sha256: String?
    /// The data file's name inside the store folder.
    public var file: String
    /// Found altered on disk and not fetched again yet: partial up to its
    /// first bad block (the next play or `offline verify` repairs it).
    public var damaged = false

    public init(key: String, url: String, size: Int64?, held: Int64, complete: Bool, pinned: Bool, added: Double,
                lastPlayed: Double? = nil, etag: String? = nil, lastModified: String? = nil, sha256: String? = nil, file: String) {
        self.key = key
        self.url = url
        self.size = size
        self.held = held
        self.complete = complete
        self.pinned = pinned
        self.added = added
        self.lastPlayed = lastPlayed
        self.etag = etag
        self.lastModified = lastModified
        self.sha256 = sha256
        self.file = file
    }
}

/// A download's progress as the store reports it (the downloading thread).
public enum OfflineCopyProgress: Sendable {
    /// A response began: `have` bytes were already held (a resume), `total` declared.
    case started(have: Int64, total: Int64)
    /// `have` of `total` bytes are on disk.
    case bytes(have: Int64, total: Int64)
}

/// The offline store, for the application layer.
///
/// Threads: any; `download` blocks its caller for the whole transfer (the
/// application calls it on a download thread of its own, never the main loop).
public protocol OfflineCopiesPort: Sendable {
    /// Checks that `url` is something `download` fetches (http or https).
    /// - Throws: `invalidArgument` (a `file:` URL, a non-URL), naming it.
    func check(url: String) throws(CoreError)

    /// The key `url` is stored under: `explicit` when given, else the key
    /// the store derives from the URL (phase 1: the URL as given).
    func key(forURL url: String, explicit: String?) -> String

    /// Downloads `url` as the entry `key` (resuming what is held), calling
    /// `progress` on this thread; stops (the entry kept partial) once
    /// `cancelled` returns true, which it polls at least once a second.
    /// - Returns: the complete copy.
    /// - Throws: `notFound` (404), `unsupported` (not audio, radio, no
    ///   length), `ioError` (the network gave up, disk full, the index),
    ///   `invalidState` (cancelled).
    func download(url: String, key: String, cancelled: @escaping @Sendable () -> Bool,
                  progress: @escaping (OfflineCopyProgress) -> Void) throws(CoreError) -> OfflineCopy

    /// Every entry, in the order added. - Throws: `ioError` from the index.
    func list() throws(CoreError) -> [OfflineCopy]

    /// Removes the entry whose key is `name`, or else every entry whose URL is
    /// `name`; their files' space is freed at once.
    /// - Returns: what was removed. - Throws: `notFound` when nothing has
    ///   this key or URL; `ioError` from the index or the folder.
    func remove(named name: String) throws(CoreError) -> [OfflineCopy]

    /// The keys of the complete copies (one read of the index).
    /// - Throws: `ioError` from the index.
    func completeKeys() throws(CoreError) -> Set<String>

    /// Plays `url` from the entry `key` from now on (`queue/add`'s `"key"`:
    /// a signed URL whose copy was stored under a stable name).
    func useKey(_ key: String, forURL url: String)

    /// The key `url` is played from: the one given with `useKey`, else the derived one.
    func playbackKey(forURL url: String) -> String
}
