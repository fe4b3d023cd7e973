// The offline store behind the application layer's port, and the keys
// playback reads copies under — specs/offline.md §Control protocol, §Keys
import HarmoniaControl
import HarmoniaCore
import HarmoniaHTTP

/// `OfflineCopiesPort` on an `OfflineStore`: downloads through
/// `OfflineDownloader`, and the one key policy (`OfflineKeyPolicy`: dropped
/// parameters, keys named for URLs) that playback (`byteSourcePort`) reads too.
///
/// Threads: any; `download` blocks its caller.
public struct OfflineStoreCopies: OfflineCopiesPort {
    public let store: OfflineStore
    public let options: OfflineDownloadOptions
    public let keys: OfflineKeyPolicy

    public init(store: OfflineStore, options: OfflineDownloadOptions = OfflineDownloadOptions(),
                keys: OfflineKeyPolicy = OfflineKeyPolicy()) {
        self.store = store
        self.options = options
        self.keys = keys
    }

    /// `network` behind the store: what `play` and `serve` read http(s) with.
    public func byteSourcePort(network: any ByteSourcePort,
                               cache: OfflineCacheSettings = OfflineCacheSettings(limit: 0)) -> OfflineByteSourcePort {
        OfflineByteSourcePort(store: store, network: network, keys: keys, cache: cache)
    }

    public func check(url: String) throws(CoreError) { try OfflineDownloader.checkURL(url) }

    /// The key rules (specs/offline.md §Keys): the explicit key, else the
    /// URL's key under the policy (the URL as given, less dropped parameters).
    public func key(forURL url: String, explicit: String?) -> String {
        guard let explicit else { return keys.key(for: url) }
        return (try? OfflineKey.make(url: url, explicit: explicit)) ?? explicit
    }

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

    public func useKey(_ key: String, forURL url: String) { try? keys.name(url: url, key: key) }

    public func playbackKey(forURL url: String) -> String { keys.key(for: url) }

    /// An entry as the application layer sees it.
    public static func copy(_ entry: OfflineEntry) -> OfflineCopy {
        var copy = OfflineCopy(key: entry.key, url: entry.url, size: entry.size, held: entry.held, complete: entry.complete,
                    pinned: entry.pinned, added: entry.added, lastPlayed: entry.lastPlayed, etag: entry.etag,
                    lastModified: entry.lastModified, sha256: entry.contentHash, file: entry.fileName)
        copy.damaged = entry.damaged
        return copy
    }
}
