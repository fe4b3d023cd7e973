// The SQLite adapter of LibraryStorePort — specs/library.md §Store
import HarmoniaCore
import HarmoniaLibrary

/// `LibraryStorePort` on a SQLite database file (libsqlite3, WAL mode).
///
/// Two connections: a writer for the scanner's batches and a reader for the
/// queries, each behind its own lock. In WAL mode the reader sees the last
/// committed batch while the writer works, so queries stay answered during a
/// scan. Queries narrow with indexes what they can (a folder, an exact tag,
/// a time) and evaluate the filter in Swift (`LibraryFilterMatcher`), so every
/// store answers alike.
public final class SQLiteLibraryStore: LibraryStorePort, @unchecked Sendable {
    /// The database file.
    public let file: String

    private let writerLock = ConditionLock()
    // Guarded by `writerLock`: the writer connection (nil once closed), whether a batch is open.
    private var writer: SQLiteConnection?
    private var batchOpen = false
    /// The folder of the last song written in the open batch, and its id: a
    /// scan writes a folder's songs one after the other. Forgotten when the
    /// batch ends, a folder is deleted or a write fails (writer lock).
    private var lastSongFolder: (path: String, id: Int64)?
    /// A first scan dropped the deferred indexes (SQLiteLibrarySchema.deferredIndexes):
    /// built at `markUpdateComplete`, at `close`, or when the database is next opened.
    private var indexesDeferred = false
    /// The folders whose songs the open transaction wrote, ranked before it commits.
    private var ranks = SQLiteFolderRanks()

    private let readerLock = ConditionLock()
    // Guarded by `readerLock`: the reader connection (nil once closed), and
    // `stats()` with the data version it was computed at.
    private var reader: SQLiteConnection?
    var cachedStats: (dataVersion: Int64, stats: LibraryStats)?

    /// Opens the database at `file`, creating it (and bringing an older
    /// schema up to date) when needed.
    /// - Throws: `decodeError` when the file is not a database or is corrupt;
    ///   `unsupported` when a newer build wrote it; `ioError` when it cannot
    ///   be opened or created (missing folder, permissions).
    public init(file: String) throws(CoreError) {
        self.file = file
        do {
            let writer = try SQLiteConnection.openWAL(file: file, what: "library database")
            // A scan's batches grow the WAL; past a checkpoint it is cut back to this.
            try writer.execute("PRAGMA journal_size_limit = \(Self.walSizeLimit)")
            try SQLiteLibrarySchema.migrate(writer)
            try writer.transaction { db in
                try SQLiteFolderRanks.rankUnranked(db)
                try SQLiteRows.writeMissingTagLines(db)  // after the upgrade to schema version 6
                try SQLiteFolderRanks.writeMissingSongPaths(db)  // after the upgrade to schema version 8
                try SQLiteLibrarySchema.buildDeferredIndexes(db)  // a first scan stopped before its end
            }
            let reader = try SQLiteConnection(file: file, readOnly: false)
            try reader.execute("PRAGMA query_only = ON")
            self.writer = writer
            self.reader = reader
        } catch {
            throw Self.coreError(error, file: file)
        }
    }

    // MARK: Queries

    public func listing(of directory: String, songOrder: LibrarySongOrder) throws(CoreError) -> LibraryListing {
        try read { db in
            let (id, folders, playlists) = try Self.folderAndPlaylists(of: directory, db)
            let songs = try Self.songs("WHERE directory_id = ? ORDER BY " + Self.rankColumn(songOrder), [.integer(id)], db)
            return LibraryListing(directories: folders, songs: songs, playlists: playlists)
        }
    }

    public func recordListing(of directory: String, songOrder: LibrarySongOrder) throws(CoreError) -> LibraryRecordListing {
        try read { db in
            let (id, folders, playlists) = try Self.folderAndPlaylists(of: directory, db)
            let records = try Self.records("WHERE directory_id = ? ORDER BY " + Self.rankColumn(songOrder), [.integer(id)], db)
            return LibraryRecordListing(directories: folders, songs: records, playlists: playlists)
        }
    }

    /// The id of `directory`, its subfolders and its playlists, each in
    /// natural order of name (the subfolders by their stored rank).
    private static func folderAndPlaylists(of directory: String, _ db: SQLiteConnection) throws
        -> (id: Int64, folders: [LibraryDirectory], playlists: [LibraryPlaylist]) {
        let id = try directoryID(directory, db)
        let folders = try directories("WHERE parent_id = ? AND id <> ? ORDER BY name_rank", [.integer(id), .integer(id)], db)
        let playlists = try self.playlists("WHERE directory_id = ?", [.integer(id)], db)
        return (id, folders, NaturalOrder.sorted(playlists, byName: { LibraryPathName.of($0.path) }))
    }

    public func stamps(of directory: String) throws(CoreError) -> LibraryFolderStamps {
        try read { db in
            let id = try Self.directoryID(directory, db)
            var stamps = LibraryFolderStamps()
            try db.withCached("SELECT path, modified FROM directory WHERE parent_id = ? AND id <> ?") { folders in
                try folders.bind([.integer(id), .integer(id)])
                while try folders.step() { stamps.directories[folders.text(0) ?? ""] = folders.int64(1) ?? 0 }
            }
            try db.withCached("SELECT path, modified, size FROM song WHERE directory_id = ?") { songs in
                try songs.bind([.integer(id)])
                while try songs.step() {
                    stamps.songs[songs.text(0) ?? ""] = .init(modified: songs.int64(1) ?? 0, size: max(0, songs.int64(2) ?? 0))
                }
            }
            try db.withCached("SELECT path, modified FROM playlist WHERE directory_id = ?") { playlists in
                try playlists.bind([.integer(id)])
                while try playlists.step() { stamps.playlists[playlists.text(0) ?? ""] = playlists.int64(1) ?? 0 }
            }
            return stamps
        }
    }

    public func song(at path: String) throws(CoreError) -> LibrarySong? {
        try read { db in try Self.songs("WHERE path = ?", [.text(path)], db).first }
    }

    public func songs(matching filter: LibraryFilter) throws(CoreError) -> [LibrarySong] {
        let matcher = try LibraryFilterMatcher(filter)
        let pushdown = SQLiteFilterPushdown(filter)
        let candidates = try read { db in try Self.songs(pushdown.whereClause, pushdown.values, db) }
        return LibraryAggregation.pathOrder(candidates.filter(matcher.matches))
    }

    public func songsForAdd(under directory: String) throws(CoreError) -> [LibrarySong] {
        let songs = try read { db in
            _ = try Self.directoryID(directory, db)
            let (clause, values) = Self.inside(directory)
            return try Self.songs(clause, values, db)
        }
        return LibraryAggregation.addOrder(songs)
    }

    public func allEntries(under directory: String) throws(CoreError) -> [LibraryEntry] {
        try read { db in
            _ = try Self.directoryID(directory, db)
            let (clause, values) = Self.inside(directory)
            return LibraryAggregation.allEntries(under: directory, directories: try Self.directories(clause, values, db),
                                                 songs: try Self.songs(clause, values, db),
                                                 playlists: try Self.playlists(clause, values, db))
        }
    }

    /// What is wrong with the file, empty when it is consistent: SQLite's
    /// `integrity_check` and `foreign_key_check`, songs and playlists whose
    /// folder row is missing or is not the folder of their path, folders whose
    /// parent is missing. For `harmonia` tools and the crash tests.
    public func integrityProblems() throws(CoreError) -> [String] {
        try read { db in
            var problems: [String] = []
            let check = try db.prepare("PRAGMA integrity_check")
            while try check.step() { if let line = check.text(0), line != "ok" { problems.append(line) } }
            let foreign = try db.prepare("PRAGMA foreign_key_check")
            while try foreign.step() { problems.append("foreign key broken in table \(foreign.text(0) ?? "?")") }
            for table in ["song", "playlist"] {
                let rows = try db.prepare("SELECT t.path, d.path FROM \(table) t LEFT JOIN directory d ON d.id = t.directory_id")
                while try rows.step() {
                    let path = rows.text(0) ?? ""
                    let folder = LibraryPlaylist(path: path, modified: 0).directory
                    if rows.text(1) != folder { problems.append("\(table) '\(path)' is not linked to its folder '\(folder)'") }
                }
            }
            let folders = try db.prepare("SELECT c.path, p.path FROM directory c LEFT JOIN directory p ON p.id = c.parent_id WHERE c.path <> ''")
            while try folders.step() {
                let path = folders.text(0) ?? ""
                let parent = LibraryDirectory(path: path, modified: 0).parent
                if folders.text(1) != parent { problems.append("folder '\(path)' is not linked to its parent") }
            }
            return problems
        }
    }

    // MARK: Updates

    public func beginUpdate() throws(CoreError) {
        try write(inBatch: false) { db in
            guard !self.batchOpen else { throw CoreError.invalidState("a library update batch is already open") }
            try db.execute("BEGIN IMMEDIATE")
            self.batchOpen = true
            self.lastSongFolder = nil
            if try SQLiteLibrarySchema.deferIndexesIfEmpty(db) { self.indexesDeferred = true }
        }
    }

    public func commitUpdate() throws(CoreError) {
        try write(inBatch: false) { db in
            guard self.batchOpen else { throw CoreError.invalidState("no library update batch is open") }
            self.batchOpen = false
            self.lastSongFolder = nil
            do {
                try self.ranks.rankTouched(db)
                try db.execute("COMMIT")
            } catch {
                self.ranks.reset()
                try? db.execute("ROLLBACK")
                throw error
            }
        }
    }

    public func rollbackUpdate() {
        writerLock.withLock {
            guard batchOpen, let writer else { return }
            batchOpen = false
            lastSongFolder = nil
            ranks.reset()
            try? writer.execute("ROLLBACK")
        }
    }

    public func upsertDirectory(_ directory: LibraryDirectory) throws(CoreError) {
        try write { db in
            guard let parent = directory.parent else {
                try db.run(cached: "UPDATE directory SET modified = ? WHERE path = ''", [.integer(directory.modified)])
                return
            }
            let parentID = try Self.directoryID(parent, db, missing: "folder '\(parent)' is not in the library: add it before '\(directory.path)'")
            // A new folder (no rank yet) is placed among its siblings before the commit.
            let ranked = try db.withCached("""
                INSERT INTO directory(path, parent_id, modified) VALUES (?, ?, ?)
                ON CONFLICT(path) DO UPDATE SET parent_id = excluded.parent_id, modified = excluded.modified
                RETURNING name_rank IS NOT NULL
                """) { statement in
                try statement.bind([.text(directory.path), .integer(parentID), .integer(directory.modified)])
                let ranked = try statement.step() && statement.int64(0) == 1
                while try statement.step() {}
                return ranked
            }
            if !ranked { self.ranks.gainedSubfolder(parentID) }
        }
    }

    public func deleteDirectory(at path: String) throws(CoreError) {
        guard !path.isEmpty else { throw .invalidArgument("the top folder cannot be deleted from the library") }
        try write { db in
            self.lastSongFolder = nil
            // Foreign keys cascade too; the ranges also clean a file whose links are broken.
            let range = SQLiteFilterPushdown.pathRange(under: path)
            for table in ["song", "playlist", "directory"] {
                try db.prepare("DELETE FROM \(table) WHERE path >= ? AND path < ?").run([.text(range.from), .text(range.to)])
            }
            try db.prepare("DELETE FROM directory WHERE path = ?").run([.text(path)])
        }
    }

    public func upsertSong(_ song: LibrarySong) throws(CoreError) {
        try write { db in
            let directory = song.directory
            let folder: Int64
            if self.batchOpen, let last = self.lastSongFolder, last.path == directory {
                folder = last.id
            } else {
                folder = try Self.directoryID(directory, db, missing: "folder '\(directory)' is not in the library: add it before '\(song.path)'")
                if self.batchOpen { self.lastSongFolder = (directory, folder) }
            }
            try db.run(cached: Self.upsertSongSQL, [.integer(folder)] + SQLiteRows.songValues(song))
            self.ranks.touched(folder)
        }
    }

    public func deleteSong(at path: String) throws(CoreError) {
        try write { db in
            // Its folder's song paths are written again before the commit.
            let folder = try db.withCached("DELETE FROM song WHERE path = ? RETURNING directory_id") { statement in
                try statement.bind([.text(path)])
                let folder = try statement.step() ? statement.int64(0) : nil
                while try statement.step() {}
                return folder
            }
            if let folder { self.ranks.touched(folder) }
        }
    }

    /// Inserts a song, or replaces the one at its path.
    private static let upsertSongSQL: String = {
        let columns = SQLiteRows.writtenSongColumns
        let placeholders = Array(repeating: "?", count: 7 + LibraryTag.allCases.count).joined(separator: ", ")
        let updates = columns.split(separator: ",").map { $0.trimmingWhitespaceForSQL }.filter { $0 != "path" }
            .map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
        return """
            INSERT INTO song(directory_id, \(columns)) VALUES (?, \(placeholders))
            ON CONFLICT(path) DO UPDATE SET directory_id = excluded.directory_id, \(updates)
            """
    }()

    public func upsertPlaylist(_ playlist: LibraryPlaylist) throws(CoreError) {
        try write { db in
            let folder = try Self.directoryID(playlist.directory, db, missing: "folder '\(playlist.directory)' is not in the library: add it before '\(playlist.path)'")
            try db.run(cached: """
                INSERT INTO playlist(directory_id, path, modified) VALUES (?, ?, ?)
                ON CONFLICT(path) DO UPDATE SET directory_id = excluded.directory_id, modified = excluded.modified
                """, [.integer(folder), .text(playlist.path), .integer(playlist.modified)])
        }
    }

    public func deletePlaylist(at path: String) throws(CoreError) {
        try write { db in try db.prepare("DELETE FROM playlist WHERE path = ?").run([.text(path)]) }
    }

    /// Also folds the WAL into the database and empties it (when no read is
    /// under way; else the next checkpoint does), so that a finished scan
    /// leaves no WAL behind it.
    public func markUpdateComplete(at time: Int64) throws(CoreError) {
        try write { db in
            try db.prepare("""
                INSERT INTO library_state(key, value) VALUES ('last_update', ?)
                ON CONFLICT(key) DO UPDATE SET value = excluded.value
                """).run([.integer(time)])
        }
        try write(inBatch: false) { db in
            // A first scan's deferred indexes, built once its songs are in.
            guard !self.batchOpen, self.indexesDeferred else { return }
            try db.transaction { db in try SQLiteLibrarySchema.buildDeferredIndexes(db) }
            self.indexesDeferred = false
        }
        writerLock.withLock {
            guard !batchOpen, let writer else { return }
            try? writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        }
    }

    /// Bytes the WAL is cut back to after a checkpoint (`journal_size_limit`).
    static let walSizeLimit = 4 << 20

    public func close() {
        writerLock.withLock {
            if batchOpen { try? writer?.execute("ROLLBACK") }
            batchOpen = false
            lastSongFolder = nil
            if indexesDeferred { try? writer?.transaction { db in try SQLiteLibrarySchema.buildDeferredIndexes(db) } }
            writer?.close()
            writer = nil
        }
        readerLock.withLock {
            reader?.close()
            reader = nil
        }
    }

    // MARK: Connections

    /// Runs `body` on the reader connection, in one read transaction
    /// (`SQLiteConnection.reading`; `transaction: false` for a body of one
    /// statement, which is a read transaction of its own), errors mapped to CoreError.
    func read<T>(transaction: Bool = true, _ body: (SQLiteConnection) throws -> T) throws(CoreError) -> T {
        try readerLock.withLock { () throws(CoreError) -> T in
            guard let reader else { throw CoreError.invalidState("the library store '\(file)' is closed") }
            do {
                return try transaction ? reader.reading { try body(reader) } : body(reader)
            } catch {
                throw Self.coreError(error, file: file)
            }
        }
    }

    /// Runs `body` on the writer connection (`inBatch`: inside the open batch
    /// or a transaction of its own), errors mapped to CoreError.
    private func write(inBatch: Bool = true, _ body: (SQLiteConnection) throws -> Void) throws(CoreError) {
        try writerLock.withLock { () throws(CoreError) in
            guard let writer else { throw CoreError.invalidState("the library store '\(file)' is closed") }
            do {
                if !inBatch || batchOpen {
                    try body(writer)
                } else {
                    try writer.transaction { db in
                        try body(db)
                        try self.ranks.rankTouched(db)
                    }
                }
            } catch {
                lastSongFolder = nil
                if !batchOpen { ranks.reset() }
                throw Self.coreError(error, file: file)
            }
        }
    }

    private static func coreError(_ error: any Error, file: String) -> CoreError {
        switch error {
        case let error as CoreError: error
        case let error as SQLiteError: error.coreError(file: file)
        default: .ioError("library database '\(file)': \(error)")
        }
    }

    // MARK: Statements (run under a connection's lock)

    /// The id of the folder at `path`.
    /// - Throws: `CoreError.notFound` with `missing` (or a default message) when absent.
    static func directoryID(_ path: String, _ db: SQLiteConnection, missing: String? = nil) throws -> Int64 {
        let found = try db.withCached("SELECT id FROM directory WHERE path = ?") { statement in
            try statement.bind([.text(path)])
            return try statement.step() ? statement.int64(0) : nil
        }
        guard let id = found else { throw CoreError.notFound(missing ?? "no folder '\(path)' in the library") }
        return id
    }

    /// The stored rank that puts a folder's songs in `order` (SQLiteFolderRanks).
    static func rankColumn(_ order: LibrarySongOrder) -> String {
        switch order {
        case .name: "name_rank"
        case .add: "add_rank"
        }
    }

    /// The WHERE clause and values selecting paths inside `directory` ("" is everything).
    private static func inside(_ directory: String) -> (String, [SQLiteValue]) {
        guard !directory.isEmpty else { return ("", []) }
        let range = SQLiteFilterPushdown.pathRange(under: directory)
        return ("WHERE path >= ? AND path < ?", [.text(range.from), .text(range.to)])
    }

    static func songs(_ clause: String, _ values: [SQLiteValue], _ db: SQLiteConnection) throws -> [LibrarySong] {
        try songRows(SQLiteRows.songColumns, clause, values, db, SQLiteRows.song)
    }

    /// `songs(_:_:_:)` as records (`SQLiteRows.record(from:_:)`).
    static func records(_ clause: String, _ values: [SQLiteValue], _ db: SQLiteConnection) throws -> [LibrarySongRecord] {
        try songRows(SQLiteRows.recordColumns, clause, values, db, SQLiteRows.record)
    }

    /// `columns` of the songs `clause` selects, each row made into an item by `make`.
    private static func songRows<Item>(_ columns: String, _ clause: String, _ values: [SQLiteValue], _ db: SQLiteConnection,
                                       _ make: (SQLiteStatement, SQLiteConnection) throws -> Item) throws -> [Item] {
        try db.withCached("SELECT \(columns) FROM song \(clause)") { statement in
            try statement.bind(values)
            var items: [Item] = []
            while try statement.step() { items.append(try make(statement, db)) }
            return items
        }
    }

    static func directories(_ clause: String, _ values: [SQLiteValue], _ db: SQLiteConnection) throws -> [LibraryDirectory] {
        try db.withCached("SELECT path, modified FROM directory \(clause)") { statement in
            try statement.bind(values)
            var directories: [LibraryDirectory] = []
            while try statement.step() {
                directories.append(LibraryDirectory(path: statement.text(0) ?? "", modified: statement.int64(1) ?? 0))
            }
            return directories
        }
    }

    static func playlists(_ clause: String, _ values: [SQLiteValue], _ db: SQLiteConnection) throws -> [LibraryPlaylist] {
        try db.withCached("SELECT path, modified FROM playlist \(clause)") { statement in
            try statement.bind(values)
            var playlists: [LibraryPlaylist] = []
            while try statement.step() {
                playlists.append(LibraryPlaylist(path: statement.text(0) ?? "", modified: statement.int64(1) ?? 0))
            }
            return playlists
        }
    }
}

/// The last component of a path.
enum LibraryPathName {
    static func of(_ path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path[path.utf8.index(after: slash)...])
    }
}

extension Substring {
    fileprivate var trimmingWhitespaceForSQL: String { String(drop { $0 == " " }) }
}
