// Playing from the store — specs/offline.md §Playback, §Cache
//
// A `ByteSourcePort` in front of the network one: a URL whose entry (named by
// the key rules, OfflineKey) is complete is read from the store's file, with
// no request to the server at all. With the stream cache on, any other
// http(s) stream is kept in the store as it plays (CachedStreamSource): what
// an earlier play left comes from disk, only the rest from the network.
import HarmoniaCore
import HarmoniaHTTP

/// The stream cache's numbers.
public struct OfflineCacheSettings: Sendable {
    /// Bytes the cached (unpinned) entries may hold together; 0: the cache is off.
    public var limit: Int64
    /// The network policy of the cache's downloads (headers, TLS, timeouts).
    public var http: HTTPSourceConfiguration

    /// The default limit: 1 GiB.
    public static let defaultLimit: Int64 = 1 << 30

    public init(limit: Int64 = OfflineCacheSettings.defaultLimit, http: HTTPSourceConfiguration = HTTPSourceConfiguration()) {
        self.limit = max(0, limit)
        self.http = http
    }
}

/// `ByteSourcePort` that consults the store before the network, and with a
/// cache keeps what it streams.
///
/// Threads: any (the store serialises its index; each source is read by one
/// thread at a time, as `ByteSource` says).
public struct OfflineByteSourcePort: ByteSourcePort {
    public let store: OfflineStore
    public let network: any ByteSourcePort
    /// How a URL names its entry.
    public let keys: OfflineKeyPolicy
    /// The stream cache (limit 0: off; complete copies still play from disk,
    /// and a partial offline copy is still completed as it plays).
    public let cache: OfflineCacheSettings

    public init(store: OfflineStore, network: any ByteSourcePort, keys: OfflineKeyPolicy = OfflineKeyPolicy(),
                cache: OfflineCacheSettings = OfflineCacheSettings(limit: 0)) {
        self.store = store
        self.network = network
        self.keys = keys
        self.cache = cache
    }

    public func handles(url: String) -> Bool { network.handles(url: url) }

    /// In order: the copy from disk when the entry is complete and its file
    /// its recorded size (no request); with the cache on (or a partial
    /// offline copy), the stream kept as it plays, its held bytes from disk;
    /// otherwise `network.open`. A store that cannot answer (its index
    /// locked past the busy timeout, say) falls back to the network too.
    /// Throws as `network.open`.
    public func open(url: String, observer: (@Sendable (NetworkEvent) -> Void)?,
                     interrupted: @escaping @Sendable () -> Bool) throws(CoreError) -> any ByteSource {
        let key = keys.key(for: url)
        if let copy = completeCopy(key: key) { return copy }
        if cache.limit > 0 || (try? store.entry(key: key))?.pinned == true, handles(url: url) {
            if let source = try CachedStreamSource.open(url: url, key: key, store: store, settings: cache, network: network,
                                                        observer: observer, interrupted: interrupted) {
                return source
            }
            if let copy = completeCopy(key: key) { return copy }  // completed meanwhile
        }
        return try network.open(url: url, observer: observer, interrupted: interrupted)
    }

    /// The complete copy of `key` read from disk, its play recorded; nil
    /// when there is none. A copy completed before block hashes were
    /// recorded is hashed whole first: as recorded, its block hashes are
    /// recorded now; not, it is marked damaged (nil: the caller fetches it again).
    private func completeCopy(key: String) -> (any ByteSource)? {
        guard let entry = try? store.entry(key: key), entry.complete, let size = entry.size,
              let file = try? OfflineDataFile(path: store.path(of: entry), create: false), (try? file.length()) == size else {
            return nil
        }
        var blocks = try? store.blockHashes(key: key, size: size)
        if blocks == nil {
            var hasher = ContentHasher()
            guard (try? file.hash(upTo: size, into: &hasher)) != nil else { return nil }
            let (whole, text) = hasher.finish()
            guard whole == entry.contentHash else {
                try? store.recordDamaged(key: key, held: 0)
                return nil
            }
            try? store.recordBlockHashes(key: key, hash: whole, blocks: text)
            blocks = BlockHashes(text, size: size)
        }
        guard let blocks else { return nil }
        try? store.recordPlayed(key: key)
        return OfflineFileSource(file: file, blocks: blocks, store: store, key: key,
                                 repair: OfflineBlockRepair(entry: entry, http: cache.http))
    }
}

/// A complete copy read with pread: seekable, its size known. Each 64 KiB
/// block is checked against its recorded SHA-256 before any of its bytes go
/// on (specs/offline.md §Verified reads). A block that differs is fetched
/// again (`OfflineBlockRepair`), written back and fsynced; when it cannot
/// be, the entry is marked damaged and the read fails with `decodeError`.
/// Threads: one reader at a time (ByteSource); `cancel` from any.
final class OfflineFileSource: ByteSource, @unchecked Sendable {
    private let file: OfflineDataFile
    private let blocks: BlockHashes
    private let store: OfflineStore
    private let repair: OfflineBlockRepair
    /// The entry read (counted as playing, never evicted, until released).
    private let key: String
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var offset: Int64 = 0
    private var cancelled = false
    // Reader thread only: the block read last, checked.
    private let block = UnsafeMutableRawBufferPointer.allocate(byteCount: BlockHashes.blockBytes, alignment: 16)
    private var blockIndex = -1

    init(file: OfflineDataFile, blocks: BlockHashes, store: OfflineStore, key: String, repair: OfflineBlockRepair) {
        self.file = file
        self.blocks = blocks
        self.store = store
        self.key = key
        self.repair = repair
        _ = PlayingKeys.claim(key, exclusive: false)
    }

    deinit {
        block.deallocate()
        PlayingKeys.release(key)
    }

    var size: Int64? { blocks.size }

    func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(CoreError) -> Int {
        let (at, stop) = lock.withLock { (offset, cancelled) }
        if stop { throw .invalidState("\(file.path): reading was cancelled") }
        guard count > 0, at < blocks.size else { return 0 }
        let index = Int(at / Int64(BlockHashes.blockBytes))
        if index != blockIndex { try load(index) }
        let from = Int(at - blocks.range(of: index).start)
        let n = min(count, blocks.range(of: index).count - from)
        buffer.copyMemory(from: block.baseAddress! + from, byteCount: n)
        lock.withLock { offset = at + Int64(n) }
        return n
    }

    /// Block `index` into `block`, as recorded: from the file, or else
    /// fetched again and written back.
    private func load(_ index: Int) throws(CoreError) {
        blockIndex = -1
        if try file.readBlock(index, of: blocks, into: block) {
            blockIndex = index
            return
        }
        let start = blocks.range(of: index).start
        do throws(CoreError) {
            let fresh = try repair.restore(index, of: blocks, in: file)
            try file.sync()
            fresh.withUnsafeBytes { block.copyMemory(from: $0) }
            blockIndex = index
        } catch {
            try? store.recordDamaged(key: key, held: start)
            throw .decodeError("\(repair.url): the offline copy is damaged at byte \(start) (a block is not as recorded) "
                + "and could not be fetched again (\(error.message)); 'offline verify' repairs or removes it")
        }
    }

    func seek(to offset: Int64) throws(CoreError) {
        guard offset >= 0 else { throw .invalidArgument("\(file.path): seek to byte \(offset); bytes start at 0") }
        lock.withLock { self.offset = offset }
    }

    var position: Int64 { lock.withLock { offset } }

    var isSeekable: Bool { true }

    /// Reads come from the local disk (a block fetched again is the rare exception).
    var readsMayStall: Bool { false }

    func cancel() { lock.withLock { cancelled = true } }
}
