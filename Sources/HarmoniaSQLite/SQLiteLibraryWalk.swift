// A walk of the library's folder tree, their songs read a run at a time — specs/library.md §Store (Large libraries)
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaCore
import HarmoniaLibrary

extension SQLiteLibraryStore {
    /// Depth first from the folder at `top` (`notFound` when the library has
    /// none, before `body` is called): for each folder, the folder itself
    /// as `.directory` (the top only when `listing` and not ""), its songs,
    /// its playlists (when `listing`), then its subfolders in natural order.
    /// `body` gets an entry, or nil and a folder's songs (as `read` reads
    /// them: songs, paths or records), to order and hand on; it returns
    /// false to stop. The folder tree is read with the first run of
    /// folders' songs; the others a run at a time, each run about `runSongs`
    /// songs in one read transaction under the reader's lock, so a slow
    /// client never holds it.
    func walk<Rows: SQLiteFolderRows>(from top: String, reading read: SQLiteWalkRead<Rows>, listing: Bool,
                                      _ body: (LibraryEntry?, Rows) -> Bool) throws(CoreError) {
        var order: [(id: Int64, directory: LibraryDirectory?)] = []
        var ids: [Int64] = []  // order's ids, for the runs' ranges
        var lists: [Int64: [LibraryPlaylist]] = [:]
        var next = 0
        /// The songs of the folders from `next` on, up to about `runSongs`.
        func readRun(_ db: SQLiteConnection) throws -> [Rows] {
            var run: [Rows] = []
            var count = 0
            while next + run.count < order.count, count < Self.runSongs {
                let stretch = try Self.readStretch(of: ids[(next + run.count)...], read, db, songs: Self.runSongs - count)
                count += stretch.count + stretch.folders.count
                run += stretch.folders
            }
            return run
        }
        var run = try self.read { db in
            let tree = try Self.folderTree(under: top, playlists: listing, db)
            order = tree.order
            ids = order.map(\.id)
            lists = tree.playlists
            if !listing { order[0].directory = nil }
            return try readRun(db)
        }
        while true {
            for found in run {
                let (id, directory) = order[next]
                next += 1
                if let directory, !body(.directory(directory), Rows()) { return }
                guard body(nil, found) else { return }
                for list in NaturalOrder.sorted(lists[id] ?? [], byName: { LibraryPathName.of($0.path) })
                where !body(.playlist(list), Rows()) { return }
            }
            guard next < order.count else { return }
            run = try self.read { db in try readRun(db) }
        }
    }

    /// The folders under `top` in walk order, `top` first (its record nil
    /// for the top, ""): each folder before its contents, siblings in
    /// natural order (their stored ranks: SQLiteFolderRanks); and, when
    /// `playlists`, each folder's playlists by its id.
    /// - Throws: `notFound` when the library has no folder at `top`.
    private static func folderTree(under top: String, playlists: Bool, _ db: SQLiteConnection) throws
        -> (order: [(id: Int64, directory: LibraryDirectory?)], playlists: [Int64: [LibraryPlaylist]]) {
        let topFolder = try db.withCached("SELECT id, modified FROM directory WHERE path = ?") { statement in
            try statement.bind([.text(top)])
            return try statement.step() ? (statement.int64(0) ?? 0, statement.int64(1) ?? 0) : nil
        }
        guard let topFolder else { throw CoreError.notFound("no folder '\(top)' in the library") }
        let range = SQLiteFilterPushdown.pathRange(under: top)
        let inside = top.isEmpty ? "WHERE path <> ''" : "WHERE path >= ? AND path < ?"
        let bounds: [SQLiteValue] = top.isEmpty ? [] : [.text(range.from), .text(range.to)]
        var children: [Int64: [(rank: Int64, id: Int64, directory: LibraryDirectory)]] = [:]
        try db.withCached("SELECT id, parent_id, path, modified, name_rank FROM directory \(inside)") { statement in
            try statement.bind(bounds)
            while try statement.step() {
                children[statement.int64(1) ?? 0, default: []].append(
                    (statement.int64(4) ?? .max, statement.int64(0) ?? 0,
                     LibraryDirectory(path: statement.text(2) ?? "", modified: statement.int64(3) ?? 0)))
            }
        }
        var lists: [Int64: [LibraryPlaylist]] = [:]
        if playlists {
            try db.withCached("SELECT directory_id, path, modified FROM playlist \(top.isEmpty ? "" : inside)") { statement in
                try statement.bind(bounds)
                while try statement.step() {
                    lists[statement.int64(0) ?? 0, default: []].append(
                        LibraryPlaylist(path: statement.text(1) ?? "", modified: statement.int64(2) ?? 0))
                }
            }
        }
        var order: [(id: Int64, directory: LibraryDirectory?)] = []
        var stack: [(id: Int64, directory: LibraryDirectory?)] = [
            (topFolder.0, top.isEmpty ? nil : LibraryDirectory(path: top, modified: topFolder.1))]
        while let (id, directory) = stack.popLast() {
            order.append((id, directory))
            guard var subfolders = children[id] else { continue }
            if subfolders.count > 1 { subfolders.sort { $0.rank > $1.rank } }
            for subfolder in subfolders where subfolder.id != id { stack.append((subfolder.id, subfolder.directory)) }
        }
        return (order, lists)
    }

    /// The songs of the first folders of `ids` (walk order) whose ids follow
    /// one another (a scan adds folders in walk order), read with one
    /// statement over their range of ids: each folder whole, the first
    /// always, the others until about `limit` songs are read. Returns each
    /// folder's rows, in order, and the songs read.
    private static func readStretch<Rows: SQLiteFolderRows>(of ids: ArraySlice<Int64>, _ read: SQLiteWalkRead<Rows>,
                                                            _ db: SQLiteConnection, songs limit: Int) throws -> (folders: [Rows], count: Int) {
        // At most `limit` folders: a run counts each folder as a song, so
        // the stretch is looked for no further than the run can reach.
        var last = ids.startIndex, length = 1
        while length < limit, last + 1 < ids.endIndex, ids[last + 1] == ids[last] &+ 1 {
            last += 1
            length += 1
        }
        let first = ids[ids.startIndex]
        var folders: [Rows] = []
        var rows = Rows()  // of the folder `first + folders.count`
        var count = 0
        let whole = try db.withCached(read.sql) { statement in
            try statement.bind([.integer(first), .integer(ids[last])] + read.values)
            while try statement.step() {
                // The rows come folder by folder in id order: a row of a later
                // folder ends the one before, and may end the stretch.
                let id = statement.integer(read.idColumn)
                if id > first &+ Int64(folders.count) {
                    folders.append(rows)
                    rows = Rows()
                    if count >= limit { return false }
                    while first &+ Int64(folders.count) < id, folders.count < length { folders.append(Rows()) }
                }
                let before = rows.count
                try rows.append(statement, db)
                count += rows.count - before
            }
            return true
        }
        if whole {
            folders.append(rows)
            while folders.count < length { folders.append(Rows()) }
        }
        return (folders, count)
    }

    /// The songs of a run of folders read in one transaction (`walk`).
    private static let runSongs = 2_000
}

/// What a walk reads of each folder's songs: songs, records or paths, a row
/// at a time.
protocol SQLiteFolderRows {
    /// The columns a row holds (`append(_:_:)` reads them from column 0).
    static var columns: String { get }
    /// The statement reading the rows of a range of folders (their ids bound
    /// first, then a filter's values): `columns` then the folder's id, the
    /// songs in `order`, folder by folder in id order.
    static func walkSQL(order: LibrarySongOrder, condition: String) -> String
    /// None (what the walk hands with a folder or a playlist).
    init()
    /// The songs read.
    var count: Int { get }
    /// Reads the song of `row` (its `columns`) and keeps it.
    mutating func append(_ row: SQLiteStatement, _ db: SQLiteConnection) throws
}

extension SQLiteFolderRows {
    /// A row per song, of the songs that `condition` (an ` AND …` clause)
    /// keeps, from the index of `order`.
    static func walkSQL(order: LibrarySongOrder, condition: String) -> String {
        let index = order == .add ? "song_directory_add" : "song_directory_name"
        return "SELECT \(columns), directory_id FROM song INDEXED BY \(index) WHERE directory_id BETWEEN ? AND ?\(condition)"
            + " ORDER BY directory_id, " + SQLiteLibraryStore.rankColumn(order)
    }
}

/// A song or a record read from a row of its columns.
protocol SQLiteRowItem {
    static var columns: String { get }
    init(_ row: SQLiteStatement, _ db: SQLiteConnection) throws
}

extension LibrarySong: SQLiteRowItem {
    static var columns: String { SQLiteRows.songColumns }
    init(_ row: SQLiteStatement, _ db: SQLiteConnection) throws { self = try SQLiteRows.song(from: row, db) }
}

extension LibrarySongRecord: SQLiteRowItem {
    static var columns: String { SQLiteRows.recordColumns }
    init(_ row: SQLiteStatement, _ db: SQLiteConnection) throws { self = try SQLiteRows.record(from: row, db) }
}

extension Array: SQLiteFolderRows where Element: SQLiteRowItem {
    static var columns: String { Element.columns }
    mutating func append(_ row: SQLiteStatement, _ db: SQLiteConnection) throws { append(try Element(row, db)) }
}

/// Folders' song paths as their UTF-8 bytes, each followed by a NUL byte
/// (`list file`): read a row per folder (`directory.song_paths`, in add
/// order: SQLiteFolderRanks), two buffers a folder instead of a String a song.
struct SQLitePathList: SQLiteFolderRows {
    private var bytes: [UInt8] = []
    /// Where each path's NUL is in `bytes`.
    private var ends: [Int] = []

    static var columns: String { "song_paths" }

    /// A row per folder; the add order only, and no filter.
    static func walkSQL(order: LibrarySongOrder, condition: String) -> String {
        assert(order == .add && condition.isEmpty, "a folder's song paths are kept in add order only")
        return "SELECT song_paths, id FROM directory WHERE id BETWEEN ? AND ? ORDER BY id"
    }

    var count: Int { ends.count }

    /// Appends the paths of `row`'s column 0 (a last one without its NUL,
    /// from a hostile row, gets one).
    mutating func append(_ row: SQLiteStatement, _ db: SQLiteConnection) {
        row.withBlob(0) { paths in
            guard let base = paths.baseAddress, !paths.isEmpty else { return }
            let start = bytes.count
            bytes.append(contentsOf: paths)
            var offset = 0
            while offset < paths.count, let nul = memchr(base + offset, 0, paths.count - offset) {
                let at = base.distance(to: nul.assumingMemoryBound(to: UInt8.self))
                ends.append(start + at)
                offset = at + 1
            }
            if paths[paths.count - 1] != 0 {
                ends.append(bytes.count)
                bytes.append(0)
            }
        }
    }

    /// `body` on each path in order, until it returns false; false when it did.
    func forEach(_ body: (UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        bytes.withUnsafeBufferPointer { all in
            var start = 0
            for end in ends {
                guard body(UnsafeBufferPointer(rebasing: all[start..<end])) else { return false }
                start = end + 1
            }
            return true
        }
    }
}

/// What a walk reads of each folder's songs: `Rows.walkSQL`, with the
/// values of a filter's `condition`.
struct SQLiteWalkRead<Rows: SQLiteFolderRows> {
    /// The statement: a range of folder ids bound first, then `values`.
    let sql: String
    /// The folder id's column, after `Rows.columns`.
    let idColumn: Int32
    let values: [SQLiteValue]

    init(order: LibrarySongOrder, condition: String = "", values: [SQLiteValue] = []) {
        sql = Rows.walkSQL(order: order, condition: condition)
        idColumn = Int32(Rows.columns.utf8.reduce(1) { $1 == UInt8(ascii: ",") ? $0 + 1 : $0 })
        self.values = values
    }
}
