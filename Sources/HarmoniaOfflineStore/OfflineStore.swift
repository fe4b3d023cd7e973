// The offline store: a folder of data files and the SQLite index that names
// them — specs/offline.md §Index, §Keys, §Crashes
//
// The index says only what the disk holds: a data file is written and
// fsynced before the row that names it says so; on open the index is
// reconciled with the folder (a row whose file is missing is dropped, one
// whose file is short is partial at the file's length; a data file no row
// names is removed). SQLite's locking (WAL, busy timeout) keeps two
// processes' rows apart; a download in progress also holds its file's flock.
import Foundation
import HarmoniaCore
import HarmoniaHTTP
import HarmoniaSQLite

/// One entry of the store, as `offline list` shows it.
public struct OfflineEntry: Sendable, Equatable {
    public var key: String
    /// The URL as given when it was added.
    public var url: String
    /// The data file's name inside the store folder (from the key's hash).
    public var fileName: String
    /// The whole length in bytes, once a server declared it.
    public var size: Int64?
    /// Bytes [0, held) are on disk, fsynced (a copy's one held range).
    public var held: Int64
    public var complete: Bool
    /// An offline copy (true) or a cached stream (false; the later stream cache).
    public var pinned: Bool
    public var etag: String?
    public var lastModified: String?
    public var contentLength: Int64?
    /// SHA-256 of the whole file, recorded at completion.
    public var contentHash: String?
    /// A complete copy found altered on disk that could not be fetched
    /// again: now partial up to its first bad block (the next play or
    /// `offline verify` fetches the rest again). Cleared at completion.
    public var damaged = false
    /// Seconds since 1970 (UTC).
    public var added: Double
    public var lastPlayed: Double?
}

/// The store at one folder. Threads: any, one call at a time (a lock guards the connection).
public final class OfflineStore: @unchecked Sendable {
    /// The store folder.
    public let directory: String
    /// The index file inside it.
    public var indexFile: String { directory + "/index.sqlite" }

    private let lock = NSLock()
    // Guarded by `lock`.
    private let db: SQLiteConnection
    /// Complete entries the reconcile of `init` found missing or short (for `verify`). Guarded by `lock`.
    private var damageAtOpen: [Damage] = []

    /// The default folder of offline copies: `$XDG_DATA_HOME/harmonia-play/offline`
    /// (`~/.local/share/harmonia-play/offline` without it).
    public static func defaultDirectory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/harmonia-play/offline" }
        let home = environment["HOME"] ?? NSHomeDirectory()
        return home + "/.local/share/harmonia-play/offline"
    }

    static let migrations: [String] = [
        // 1: one row per entry (specs/offline.md §Index).
        """
        CREATE TABLE entry (
            key TEXT PRIMARY KEY,
            file TEXT NOT NULL UNIQUE,
            url TEXT NOT NULL,
            size INTEGER CHECK (size IS NULL OR size >= 0),
            held INTEGER NOT NULL DEFAULT 0 CHECK (held >= 0),
            complete INTEGER NOT NULL DEFAULT 0,
            pinned INTEGER NOT NULL DEFAULT 1,
            etag TEXT,
            last_modified TEXT,
            content_length INTEGER,
            content_hash TEXT,
            added REAL NOT NULL,
            last_played REAL
        ) WITHOUT ROWID;
        CREATE INDEX entry_url ON entry(url);
        """,
        // 2: each 64 KiB block's SHA-256, recorded at completion (hex, one
        // after another: §Verified reads), and the damaged mark.
        """
        ALTER TABLE entry ADD COLUMN block_hashes TEXT;
        ALTER TABLE entry ADD COLUMN damaged INTEGER NOT NULL DEFAULT 0;
        """,
    ]

    /// Opens the store at `directory` (creating the folder and the index),
    /// brings the schema up to date and reconciles the index with the disk.
    /// - Throws: `ioError` when the folder or index cannot be made or opened
    ///   (disk full included); `decodeError` for a corrupt index;
    ///   `unsupported` for an index a newer build wrote.
    public init(directory: String) throws(CoreError) {
        let directory = directory.count > 1 && directory.hasSuffix("/") ? String(directory.dropLast()) : directory
        self.directory = directory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw .ioError("offline store '\(directory)': cannot create the folder: \(error.localizedDescription)")
        }
        do {
            db = try SQLiteConnection.openWAL(file: directory + "/index.sqlite", what: "offline store index")
            try db.migrate(Self.migrations, what: "offline store index",
                           remedy: "use a newer build, or move the store folder away")
        } catch {
            throw Self.coreError(error, file: directory + "/index.sqlite")
        }
        let damage = try reconcile()
        lock.withLock { damageAtOpen = damage }
    }

    /// The path of an entry's data file.
    public func path(of entry: OfflineEntry) -> String { directory + "/" + entry.fileName }

    // MARK: Reading

    /// Every entry, in the order added.
    public func entries() throws(CoreError) -> [OfflineEntry] {
        try withDB { db in try Self.select("ORDER BY added, key", [], db) }
    }

    /// The entry named `key`, if any.
    public func entry(key: String) throws(CoreError) -> OfflineEntry? {
        try withDB { db in try Self.select("WHERE key = ?", [.text(key)], db).first }
    }

    /// The entries whose URL (as given) is `url`.
    public func entries(url: String) throws(CoreError) -> [OfflineEntry] {
        try withDB { db in try Self.select("WHERE url = ? ORDER BY added, key", [.text(url)], db) }
    }

    // MARK: Writing (each one transaction)

    /// The entry `key`, inserted as a new partial entry of `url` when absent
    /// (`pinned`: an offline copy; false: a cached stream, played now).
    func entryCreating(key: String, url: String, pinned: Bool = true) throws(CoreError) -> OfflineEntry {
        try withDB { db in
            try db.transaction { db in
                if let found = try Self.select("WHERE key = ?", [.text(key)], db).first { return found }
                let now = Date().timeIntervalSince1970
                try db.prepare("INSERT INTO entry(key, file, url, held, complete, pinned, added, last_played) VALUES (?, ?, ?, 0, 0, ?, ?, ?)")
                    .run([.text(key), .text(offlineFileName(forKey: key)), .text(url), .integer(pinned ? 1 : 0), .real(now),
                          pinned ? .null : .real(now)])
                return try Self.select("WHERE key = ?", [.text(key)], db).first!
            }
        }
    }

    /// Records what a response declared (validators, size), and that
    /// `held` bytes are on disk; never marks the entry complete.
    func recordStart(key: String, url: String, held: Int64, size: Int64?, etag: String?, lastModified: String?, contentLength: Int64?) throws(CoreError) {
        try run("""
            UPDATE entry SET url = ?, held = ?, size = ?, etag = ?, last_modified = ?, content_length = ?,
                complete = 0, content_hash = NULL, block_hashes = NULL WHERE key = ?
            """, [.text(url), .integer(held), size.map(SQLiteValue.integer) ?? .null, SQLiteValue(etag), SQLiteValue(lastModified),
                  contentLength.map(SQLiteValue.integer) ?? .null, .text(key)])
    }

    /// Records that bytes [0, `held`) are on disk and fsynced.
    func recordHeld(key: String, held: Int64) throws(CoreError) {
        try run("UPDATE entry SET held = ? WHERE key = ? AND complete = 0", [.integer(held), .text(key)])
    }

    /// Marks the entry complete: its file (fsynced before this call) holds
    /// `size` bytes hashing to `hash`, its blocks to `blocks` (BlockHashes;
    /// nil as a copy completed before they were recorded has none).
    func recordComplete(key: String, size: Int64, hash: String, blocks: String?) throws(CoreError) {
        try run("UPDATE entry SET held = ?, size = ?, complete = 1, content_hash = ?, block_hashes = ?, damaged = 0 WHERE key = ?",
                [.integer(size), .integer(size), .text(hash), SQLiteValue(blocks), .text(key)])
    }

    /// The recorded block hashes of the entry `key`: complete, or damaged
    /// (nil for a copy completed before they were recorded, or a row whose
    /// text is not them).
    func blockHashes(key: String, size: Int64) throws(CoreError) -> BlockHashes? {
        let text = try withDB { db -> String? in
            let statement = try db.prepare("SELECT block_hashes FROM entry WHERE key = ? AND (complete = 1 OR damaged = 1)")
            try statement.bind([.text(key)])
            return try statement.step() ? statement.text(0) : nil
        }
        return BlockHashes(text, size: size)
    }

    /// Records block hashes for a complete entry that had none (its whole
    /// file was just found to hash to `hash`, the recorded content hash).
    func recordBlockHashes(key: String, hash: String, blocks: String) throws(CoreError) {
        try run("UPDATE entry SET block_hashes = ? WHERE key = ? AND complete = 1 AND content_hash = ?",
                [.text(blocks), .text(key), .text(hash)])
    }

    /// Marks the complete entry damaged: partial, vouching for bytes [0,
    /// `held`) (the start of a block that is not as recorded). Its file and
    /// its hashes are kept: a repair fetches only the blocks that differ, and
    /// a download resumes at the first of them (`Job`).
    func recordDamaged(key: String, held: Int64) throws(CoreError) {
        try run("UPDATE entry SET complete = 0, held = ?, damaged = 1 WHERE key = ? AND complete = 1", [.integer(held), .text(key)])
    }

    /// Makes the entry an offline copy (never evicted from the cache).
    func pin(key: String) throws(CoreError) {
        try run("UPDATE entry SET pinned = 1 WHERE key = ?", [.text(key)])
    }

    /// Records a play of the entry now.
    public func recordPlayed(key: String) throws(CoreError) {
        try run("UPDATE entry SET last_played = ? WHERE key = ?", [.real(Date().timeIntervalSince1970), .text(key)])
    }

    /// Removes the entry: its row, then its file (a crash between leaves a
    /// file no row names, which the next open removes). Frees the space at
    /// once, unless another process still has the file open.
    public func remove(_ entry: OfflineEntry) throws(CoreError) {
        try run("DELETE FROM entry WHERE key = ?", [.text(entry.key)])
        try removeOfflineFile(path(of: entry))
    }

    /// Removes the entry whose key is `name`, or else every entry whose URL
    /// is `name` (`offline remove`, `offline/remove`).
    /// - Returns: the entries removed.
    /// - Throws: `notFound` when no entry has this key or URL; `ioError`
    ///   from the index or the folder.
    public func remove(named name: String) throws(CoreError) -> [OfflineEntry] {
        var found = try entry(key: name).map { [$0] } ?? []
        if found.isEmpty { found = try entries(url: name) }
        guard !found.isEmpty else { throw .notFound("no offline copy has this key or URL") }
        for entry in found { try remove(entry) }
        return found
    }

    /// The keys of the complete entries.
    public func completeKeys() throws(CoreError) -> Set<String> {
        try withDB { db in
            let statement = try db.prepare("SELECT key FROM entry WHERE complete = 1")
            var keys = Set<String>()
            while try statement.step() { if let key = statement.text(0) { keys.insert(key) } }
            return keys
        }
    }

    // MARK: Reconciling

    /// Makes the index say what the folder holds (specs/offline.md §Crashes):
    /// a complete row whose file is missing is dropped, a partial one holds
    /// nothing (kept: another process may be about to create its file); a complete row whose file is
    /// not its size becomes partial; a partial row's `held` never exceeds its
    /// file; a data file no row names is removed. Files another process is
    /// downloading into (locked) are left alone.
    /// - Returns: the complete entries found missing or short (now dropped or partial).
    /// - Throws: `ioError` from the index or the folder.
    @discardableResult
    public func reconcile() throws(CoreError) -> [Damage] {
        let rows = try entries()
        var named = Set<String>()
        var damage: [Damage] = []
        for entry in rows {
            named.insert(entry.fileName)
            let file = path(of: entry)
            guard let length = offlineFileLength(file) else {
                if entry.complete {
                    try run("DELETE FROM entry WHERE key = ? AND complete = 1", [.text(entry.key)])
                    damage.append(Damage(entry: entry, problem: "its file is missing"))
                } else if entry.held > 0 {
                    // Partial: nothing held. (A row with nothing held and no file
                    // yet is also how another process's download begins: kept.)
                    try run("UPDATE entry SET held = 0 WHERE key = ? AND complete = 0", [.text(entry.key)])
                }
                continue
            }
            if offlineFileIsLocked(file) { continue }
            if entry.complete, length != entry.size {
                damage.append(Damage(entry: entry, problem: "the file holds \(length) bytes, not \(entry.size.map(String.init) ?? "?")"))
                try run("UPDATE entry SET complete = 0, content_hash = NULL, held = ? WHERE key = ?",
                        [.integer(min(length, entry.size ?? length)), .text(entry.key)])
            } else if !entry.complete, entry.held > length {
                try run("UPDATE entry SET held = ? WHERE key = ?", [.integer(length), .text(entry.key)])
            }
        }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        for name in names where isOfflineFileName(name) && !named.contains(name) {
            let file = directory + "/" + name
            // A row added after our listing (another process starting a download) names it now.
            if offlineFileIsLocked(file) { continue }
            let namedNow = try withDB { db in try db.prepare("SELECT 1 FROM entry WHERE file = ?").rows([.text(name)]) }
            if namedNow { continue }
            try removeOfflineFile(file)
        }
        return damage
    }

    // MARK: Rows

    private static let columns = "key, file, url, size, held, complete, pinned, etag, last_modified, content_length, content_hash, added, last_played, damaged"

    /// The rows matching `clause`, every number checked (a row a hand or a
    /// bug made impossible reads as partial with nothing held).
    static func select(_ clause: String, _ values: [SQLiteValue], _ db: SQLiteConnection) throws -> [OfflineEntry] {
        let statement = try db.prepare("SELECT \(columns) FROM entry \(clause)")
        try statement.bind(values)
        var result: [OfflineEntry] = []
        while try statement.step() {
            let key = statement.text(0) ?? ""
            let size = statement.int64(3).flatMap { $0 >= 0 ? $0 : nil }
            var held = max(0, statement.int64(4) ?? 0)
            var complete = statement.int64(5) == 1
            if let size, held > size { held = size }
            if complete && (size == nil || held != size) { complete = false }
            result.append(OfflineEntry(
                key: key, url: statement.text(2) ?? "", fileName: offlineFileName(forKey: key), size: size, held: held,
                complete: complete, pinned: statement.int64(6) != 0, etag: statement.text(7), lastModified: statement.text(8),
                contentLength: statement.int64(9).flatMap { $0 >= 0 ? $0 : nil }, contentHash: statement.text(10),
                damaged: statement.int64(13) == 1, added: finiteTime(statement.double(11)) ?? 0,
                lastPlayed: finiteTime(statement.double(12))))
        }
        return result
    }

    /// A time read back, if it is one a date can hold (not NaN, infinite or beyond year 9999).
    private static func finiteTime(_ seconds: Double?) -> Double? {
        guard let seconds, seconds.isFinite, abs(seconds) < 253_402_300_800 else { return nil }
        return seconds
    }

    func run(_ sql: String, _ values: [SQLiteValue]) throws(CoreError) {
        try withDB { db in try db.prepare(sql).run(values) }
    }

    func withDB<T>(_ body: (SQLiteConnection) throws -> T) throws(CoreError) -> T {
        lock.lock()
        defer { lock.unlock() }
        do { return try body(db) } catch { throw Self.coreError(error, file: indexFile) }
    }

    private static func coreError(_ error: any Error, file: String) -> CoreError {
        switch error {
        case let error as CoreError: error
        case let error as SQLiteError: error.coreError(file: file, what: "offline store index", rebuild: "run 'offline add' again")
        default: .ioError("offline store index '\(file)': \(error)")
        }
    }
}

extension SQLiteStatement {
    /// Whether the statement, bound to `values`, yields a row.
    fileprivate func rows(_ values: [SQLiteValue]) throws -> Bool {
        try bind(values)
        return try step()
    }
}

// MARK: Verifying

extension OfflineStore {
    /// What `verify` found wrong with one entry.
    public struct Damage: Sendable {
        public let entry: OfflineEntry
        public let problem: String
        /// The blocks that differed were fetched again: the copy is whole and kept.
        public var repaired = false
    }

    /// Re-reads every complete or damaged entry block by block against the
    /// hashes recorded at completion (a copy completed before them: its
    /// whole SHA-256). Blocks that differ are fetched again under `http`
    /// (OfflineBlockRepair; nil: none is) and written back; an entry that
    /// cannot be made whole so is removed (row and file). Returns every
    /// entry found damaged, repaired or removed, with the complete entries
    /// reconciling found missing or short (at open or now: removed).
    /// Entries being downloaded are skipped. Blocks while it reads; threads: any.
    /// - Throws: `ioError` from the index.
    public func verify(repairingWith http: HTTPSourceConfiguration? = nil) throws(CoreError) -> [Damage] {
        // What reconciling (at open, and now) found cut short or missing is damage too.
        var damaged = lock.withLock { () -> [Damage] in defer { damageAtOpen = [] }; return damageAtOpen }
        damaged += try reconcile()
        for damage in damaged { if let now = try entry(key: damage.entry.key) { try remove(now) } }
        for entry in try entries() where entry.complete || entry.damaged {
            guard !offlineFileIsLocked(path(of: entry)) else { continue }
            var damage = try check(entry, repairingWith: http)
            if entry.damaged && damage == nil {
                damage = Damage(entry: entry, problem: "marked damaged", repaired: true)  // whole again (or it was)
            }
            guard let damage else { continue }
            if damage.repaired {
                try run("UPDATE entry SET complete = 1, held = size, damaged = 0 WHERE key = ? AND size IS NOT NULL", [.text(entry.key)])
            } else {
                try remove(entry)
            }
            damaged.append(damage)
        }
        return damaged
    }

    /// Checks one entry's file against its hashes; nil when it is as
    /// recorded. Blocks that differ are fetched again when `http` is given.
    private func check(_ entry: OfflineEntry, repairingWith http: HTTPSourceConfiguration?) throws(CoreError) -> Damage? {
        let file = path(of: entry)
        guard let size = entry.size, let length = offlineFileLength(file), length == size else {
            let holds = offlineFileLength(file).map(String.init) ?? "no"
            return Damage(entry: entry, problem: "the file holds \(holds) bytes, not \(entry.size.map(String.init) ?? "?")")
        }
        do throws(CoreError) {
            let data = try OfflineDataFile(path: file, create: false)
            guard let blocks = try blockHashes(key: entry.key, size: size) else {
                // Completed before block hashes were recorded: the whole file's, and its blocks' now.
                var hasher = ContentHasher()
                try data.hash(upTo: size, into: &hasher)
                let (whole, text) = hasher.finish()
                guard whole == entry.contentHash, !entry.damaged else {
                    return Damage(entry: entry, problem: "the content changed on disk (SHA-256 \(whole.prefix(12))…, recorded \(entry.contentHash?.prefix(12) ?? "none")…)")
                }
                try recordBlockHashes(key: entry.key, hash: whole, blocks: text)
                return nil
            }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: BlockHashes.blockBytes, alignment: 16)
            defer { buffer.deallocate() }
            var bad: [Int] = []
            for index in 0..<blocks.count where try !data.readBlock(index, of: blocks, into: buffer) { bad.append(index) }
            guard !bad.isEmpty else { return nil }
            let problem = "the content changed on disk: \(bad.count) of \(blocks.count) blocks differ, the first at byte \(blocks.range(of: bad[0]).start)"
            guard let http else { return Damage(entry: entry, problem: problem) }
            let repair = OfflineBlockRepair(entry: entry, http: http)
            for index in bad {
                do throws(CoreError) { _ = try repair.restore(index, of: blocks, in: data) } catch {
                    return Damage(entry: entry, problem: problem + "; fetching it again failed: \(error.message)")
                }
            }
            try data.sync()
            return Damage(entry: entry, problem: problem, repaired: true)
        } catch {
            return Damage(entry: entry, problem: error.message)
        }
    }
}
