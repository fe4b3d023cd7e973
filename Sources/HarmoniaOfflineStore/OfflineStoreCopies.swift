// The offline store behind the application layer's port, and the keys
// playback reads copies under — specs/offline.md §Control protocol, §Keys
import HarmoniaControl
import HarmoniaCore
import HarmoniaHTTP

/// Explicit keys given for URLs (`queue/add`'s `"key"`): the entry a URL
/// plays from when its own key would not name it (a signed URL). Kept for
/// the process's life; a later `useKey` for the same URL wins.
///
/// Threads: any (a lock guards the table).
public final class OfflineKeyAliases: @unchecked Sendable {
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var keys: [String: String] = [:]

    public init() {}

    /// Plays `url` from the entry `key` from now on.
    public func use(_ key: String, for url: String) { lock.withLock { keys[url] = key } }

    /// The key given for `url`, if any.
    public func key(for url: String) -> String? { lock.withLock { keys[url] } }
}

/// `OfflineCopiesPort` on an `OfflineStore`: downloads through
/// `OfflineDownloader`, and the one table of explicit keys that playback
/// (`byteSourcePort`) reads too.
///
/// Threads: any; `download` blocks its caller.
public struct OfflineStoreCopies: OfflineCopiesPort {
    public let store: OfflineStore
    public let options: OfflineDownloadOptions
    public let aliases: OfflineKeyAliases

    public init(store: OfflineStore, options: OfflineDownloadOptions = OfflineDownloadOptions(),
                aliases: OfflineKeyAliases = OfflineKeyAliases()) {
        self.store = store
        self.options = options
        self.aliases = aliases
    }

    /// `network` behind the store: what `play` and `serve` read http(s) with.
    public func byteSourcePort(network: any ByteSourcePort) -> OfflineByteSourcePort {
        OfflineByteSourcePort(store: store, network: network, aliases: aliases)
    }

    public func check(url: String) throws(CoreError) { try OfflineDownloader.checkURL(url) }

    /// Phase 1's rule (specs/offline.md §Keys): the explicit key, else the URL as given.
    public func key(forURL url: String, explicit: String?) -> String { explicit ?? url }

    public func download(url: String, key: String, cancelled: @escaping @Sendable () -> Bool,
                         progress: @escaping (OfflineCopyProgress) -> Void) throws(CoreError) -> OfflineCopy {
        let entry = try OfflineDownloader(store: store, options: options).add(url: url, key: key, cancelled: cancelled) { event in
            switch event {
            case .started(_, _, let have, let total): progress(.started(have: have, total: total))
            case .bytes(_, let have, let total): progress(.bytes(have: have, total: total))
            case .retrying: break
            }
        }
        return Self.copy(entry)
    }

    public func list() throws(CoreError) -> [OfflineCopy] { try store.entries().map(Self.copy) }

    public func remove(named name: String) throws(CoreError) -> [OfflineCopy] { try store.remove(named: name).map(Self.copy) }

    public func completeKeys() throws(CoreError) -> Set<String> { try store.completeKeys() }

    public func useKey(_ key: String, forURL url: String) { aliases.use(key, for: url) }

    public func playbackKey(forURL url: String) -> String { key(forURL: url, explicit: aliases.key(for: url)) }

    /// An entry as the application layer sees it.
    public static func copy(_ entry: OfflineEntry) -> OfflineCopy {
        OfflineCopy(key: entry.key, url: entry.url, size: entry.size, held: entry.held, complete: entry.complete,
                    pinned: entry.pinned, added: entry.added, lastPlayed: entry.lastPlayed, etag: entry.etag,
                    lastModified: entry.lastModified, sha256: entry.contentHash, file: entry.fileName)
    }
}
