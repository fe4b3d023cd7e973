// Playing a complete offline copy from disk — specs/offline.md §Playback
//
// A `ByteSourcePort` in front of the network one: a URL whose copy is
// complete (its key is the one given for it with `queue/add`'s "key", else
// the URL as given) is read from the store's file, with no request to the
// server at all; any other URL goes to `network`.
import HarmoniaCore

/// `ByteSourcePort` that consults an offline store before the network.
///
/// Threads: any (the store serialises its index; each source is read by one
/// thread at a time, as `ByteSource` says).
public struct OfflineByteSourcePort: ByteSourcePort {
    public let store: OfflineStore
    public let network: any ByteSourcePort
    /// Explicit keys given for URLs (`queue/add`'s `"key"`).
    public let aliases: OfflineKeyAliases

    public init(store: OfflineStore, network: any ByteSourcePort, aliases: OfflineKeyAliases = OfflineKeyAliases()) {
        self.store = store
        self.network = network
        self.aliases = aliases
    }

    public func handles(url: String) -> Bool { network.handles(url: url) }

    /// The copy from disk when the store holds `url` (under its explicit key,
    /// else the URL as given) complete and its file
    /// is its recorded size; otherwise `network.open`. A store that cannot
    /// answer (its index locked past the busy timeout, say) falls back to
    /// the network too. Throws as `network.open`.
    public func open(url: String, observer: (@Sendable (NetworkEvent) -> Void)?,
                     interrupted: @escaping @Sendable () -> Bool) throws(CoreError) -> any ByteSource {
        if let entry = try? store.entry(key: aliases.key(for: url) ?? url), entry.complete, let size = entry.size,
           let file = try? OfflineDataFile(path: store.path(of: entry), create: false), (try? file.length()) == size {
            try? store.recordPlayed(key: entry.key)
            return OfflineFileSource(file: file, size: size)
        }
        return try network.open(url: url, observer: observer, interrupted: interrupted)
    }
}

/// A complete copy read with pread: seekable, its size known.
/// Threads: one reader at a time (ByteSource); `cancel` from any.
final class OfflineFileSource: ByteSource, @unchecked Sendable {
    private let file: OfflineDataFile
    let size: Int64?
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var offset: Int64 = 0
    private var cancelled = false

    init(file: OfflineDataFile, size: Int64) {
        self.file = file
        self.size = size
    }

    func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(CoreError) -> Int {
        let (at, stop) = lock.withLock { (offset, cancelled) }
        if stop { throw .invalidState("\(file.path): reading was cancelled") }
        guard count > 0, let size, at < size else { return 0 }
        let n = try file.read(into: buffer, count: Int(min(Int64(count), size - at)), at: at)
        lock.withLock { offset = at + Int64(n) }
        return n
    }

    func seek(to offset: Int64) throws(CoreError) {
        guard offset >= 0 else { throw .invalidArgument("\(file.path): seek to byte \(offset); bytes start at 0") }
        lock.withLock { self.offset = offset }
    }

    var position: Int64 { lock.withLock { offset } }

    var isSeekable: Bool { true }

    /// Reads come from the local disk.
    var readsMayStall: Bool { false }

    func cancel() { lock.withLock { cancelled = true } }
}
