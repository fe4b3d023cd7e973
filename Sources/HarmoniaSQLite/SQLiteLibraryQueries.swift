// The library's queries that stay fast and lean at 100,000 songs — specs/library.md §Store (Large libraries)
//
// Whole-library answers are walked folder by folder (each folder one short
// read under the reader's lock, so a slow client never holds it and memory is
// bounded by the largest folder); aggregates without a filter are grouped by
// SQLite on its indexes; `stats` is kept until the database changes.
import HarmoniaCore
import HarmoniaLibrary

extension SQLiteLibraryStore {
    // MARK: Walks

    /// Songs a filter matches that are gathered, sorted and handed over at
    /// once; past this many the folders are walked instead.
    static let gatherLimit = 5_000

    public func visitSongs(matching filter: LibraryFilter, _ body: (LibrarySong) -> Bool) throws(CoreError) {
        let matcher = try LibraryFilterMatcher(filter)
        let pushdown = SQLiteFilterPushdown(filter)
        if pushdown.narrows {
            // An index or a text test narrows the songs: usually few, read in one pass.
            var found: [(song: LibrarySong, place: Int64)] = []
            let complete = try forEachCandidate(pushdown, matcher) { song, place in
                found.append((song, place))
                return found.count <= Self.gatherLimit
            }
            if complete {
                for song in LibraryAggregation.addOrder(found) where !body(song) { return }
                return
            }
        }
        let folderSongs = SQLiteWalkRead<[LibrarySong]>(
            columns: SQLiteRows.songColumns, order: .add, condition: pushdown.clauses.map { " AND " + $0 }.joined(),
            values: pushdown.values) { songs, row, db in songs.append(try SQLiteRows.song(from: row, db)) }
        do throws(CoreError) {
            try walk(from: pushdown.base ?? "", reading: folderSongs, listing: false) { entry, folderSongs in
                guard entry == nil else { return true }  // folders: only their songs are visited
                for song in folderSongs where matcher.matches(song) && !body(song) { return false }
                return true
            }
        } catch where error.category == .notFound {
            // No folder at the base (the walk visited nothing): a song, or not in the library.
            for song in LibraryAggregation.addOrder(try songs(matching: filter)) where !body(song) { return }
        }
    }

    public func visitSongPaths(matching filter: LibraryFilter, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) throws(CoreError) {
        guard filter == .and([]) else {
            try visitSongs(matching: filter) { song in
                var path = song.path
                return path.withUTF8(body)
            }
            return
        }
        // Every song: the folders' paths alone, in their stored order, as bytes.
        let paths = SQLiteWalkRead<SQLitePathList>(columns: "path", order: .add) { paths, row, _ in paths.append(row) }
        try walk(from: "", reading: paths, listing: false) { entry, paths in
            entry == nil ? paths.forEach(body) : true
        }
    }

    public func visitEntries(under directory: String, songOrder: LibrarySongOrder,
                             _ body: (LibraryEntry) -> Bool) throws(CoreError) {
        let songs = SQLiteWalkRead<[LibrarySong]>(columns: SQLiteRows.songColumns, order: songOrder) { songs, row, db in
            songs.append(try SQLiteRows.song(from: row, db))
        }
        try walk(from: directory, reading: songs, listing: true) { entry, folderSongs in
            if let entry { return body(entry) }
            for song in folderSongs where !body(.song(song)) { return false }
            return true
        }
    }

    public func visitRecordEntries(under directory: String, songOrder: LibrarySongOrder,
                                   _ body: (LibraryRecordEntry) -> Bool) throws(CoreError) {
        let records = SQLiteWalkRead<[LibrarySongRecord]>(columns: SQLiteRows.recordColumns, order: songOrder) { records, row, db in
            records.append(try SQLiteRows.record(from: row, db))
        }
        try walk(from: directory, reading: records, listing: true) { entry, folderRecords in
            if let entry { return body(LibraryRecordEntry(entry)) }
            for record in folderRecords where !body(.song(record)) { return false }
            return true
        }
    }

    public func directory(at path: String) throws(CoreError) -> LibraryDirectory? {
        try read { db in
            try db.withCached("SELECT path, modified FROM directory WHERE path = ?") { row in
                try row.bind([.text(path)])
                return try row.step() ? LibraryDirectory(path: row.text(0) ?? "", modified: row.int64(1) ?? 0) : nil
            }
        }
    }

    /// The songs the pushed-down clause selects that `matcher` matches, in
    /// no order, each with its place in its folder (`add_rank`), in one pass
    /// under the reader's lock, until `body` returns false. Returns false
    /// when `body` stopped it.
    func forEachCandidate(_ pushdown: SQLiteFilterPushdown, _ matcher: LibraryFilterMatcher,
                          _ body: (LibrarySong, Int64) -> Bool) throws(CoreError) -> Bool {
        let place = Int32(SQLiteRows.songColumnCount)
        return try read { db in
            try db.withCached("SELECT \(SQLiteRows.songColumns), add_rank FROM song \(pushdown.whereClause)") { statement in
                try statement.bind(pushdown.values)
                while try statement.step() {
                    let song = try SQLiteRows.song(from: statement, db)
                    if matcher.matches(song), !body(song, statement.int64(place) ?? 0) { return false }
                }
                return true
            }
        }
    }

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
    private func walk<Rows: SQLiteFolderRows>(from top: String, reading read: SQLiteWalkRead<Rows>, listing: Bool,
                                              _ body: (LibraryEntry?, Rows) -> Bool) throws(CoreError) {
        var order: [(id: Int64, directory: LibraryDirectory?)] = []
        var lists: [Int64: [LibraryPlaylist]] = [:]
        var next = 0
        /// The songs of the folders from `next` on, up to about `runSongs`.
        func readRun(_ db: SQLiteConnection) throws -> [Rows] {
            var run: [Rows] = []
            var count = 0
            while next + run.count < order.count, count < Self.runSongs {
                let stretch = try Self.readStretch(of: order[(next + run.count)...].lazy.map(\.id), read, db,
                                                   songs: Self.runSongs - count)
                count += stretch.count + stretch.folders.count
                run += stretch.folders
            }
            return run
        }
        var run = try self.read { db in
            let tree = try Self.folderTree(under: top, playlists: listing, db)
            order = tree.order
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
    private static func readStretch<Rows: SQLiteFolderRows>(of ids: some Collection<Int64>, _ read: SQLiteWalkRead<Rows>,
                                                            _ db: SQLiteConnection, songs limit: Int) throws -> (folders: [Rows], count: Int) {
        var last = ids.startIndex, length = 1
        while case let following = ids.index(after: last), following != ids.endIndex, ids[following] == ids[last] &+ 1 {
            last = following
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
                let id = statement.int64(read.idColumn) ?? first
                if id > first &+ Int64(folders.count) {
                    folders.append(rows)
                    rows = Rows()
                    if count >= limit { return false }
                    while first &+ Int64(folders.count) < id, folders.count < length { folders.append(Rows()) }
                }
                try read.add(&rows, statement, db)
                count += 1
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

    // MARK: Aggregates

    /// Distinct artists and albums, songs, playtime: grouped by SQLite on
    /// the indexes (values split in Swift: a column may hold several), and
    /// kept until a write is committed (`PRAGMA data_version`): while none
    /// is, the answer costs one statement.
    public func stats() throws(CoreError) -> LibraryStats {
        if let kept = try read(transaction: false, { db -> LibraryStats? in
            guard let cached = cachedStats, cached.dataVersion == (try Self.dataVersion(db)) else { return nil }
            return cached.stats
        }) {
            return kept
        }
        return try read { db in
            let version = try Self.dataVersion(db)
            if let cached = cachedStats, cached.dataVersion == version { return cached.stats }
            func distinct(_ column: String) throws -> Int {
                var values = Set<[UInt8]>()
                try db.withCached("SELECT DISTINCT \(column) FROM song WHERE \(column) IS NOT NULL") { rows in
                    while try rows.step() {
                        for value in SQLiteRows.values(rows.text(0)) ?? [] where !value.isEmpty { values.insert(Array(value.utf8)) }
                    }
                }
                return values.count
            }
            let total = try Self.total("", [], db)
            let lastUpdate = try db.withCached("SELECT value FROM library_state WHERE key = 'last_update'") { row in
                try row.step() ? row.int64(0) : nil
            }
            let stats = LibraryStats(artists: try distinct("artist"), albums: try distinct("album"), songs: total.songs,
                                     playtime: total.playtime, lastUpdate: lastUpdate)
            cachedStats = (version, stats)
            return stats
        }
    }

    /// `PRAGMA data_version`: changes when another connection commits.
    private static func dataVersion(_ db: SQLiteConnection) throws -> Int64 {
        try db.withCached("PRAGMA data_version") { row in try row.step() ? row.int64(0) ?? 0 : 0 }
    }

    public func tagValues(_ tag: LibraryTag, groupedBy groups: [LibraryTag], matching filter: LibraryFilter) throws(CoreError) -> [LibraryTagRow] {
        guard filter.isEverything else {
            var rows = Set<LibraryTagRow>()
            try forEachMatch(filter) { song in
                LibraryAggregation.insertRows(of: song, tag, groupedBy: groups, into: &rows)
            }
            return LibraryAggregation.sortedRows(rows)
        }
        let expressions = (groups + [tag]).map(SQLiteLibrarySchema.listExpression).joined(separator: ", ")
        return try read { db in
            // SQLite groups on the index in byte order (BINARY): while no row
            // holds several values or repeats one (NULL and '' are both ""),
            // its rows are the answer as they come.
            var sorted: [LibraryTagRow] = []
            var rows = Set<LibraryTagRow>()
            try db.withCached("SELECT \(expressions) FROM song GROUP BY \(expressions)") { statement in
                while try statement.step() {
                    let lists = (0...groups.count).map { SQLiteRows.values(statement.text(Int32($0))) ?? [""] }
                    if rows.isEmpty, lists.allSatisfy({ $0.count == 1 }) {
                        let row = LibraryTagRow(groups: lists.dropLast().map { $0[0] }, value: lists[groups.count][0])
                        if sorted.last.map({ LibraryAggregation.byteLess($0, row) }) ?? true {
                            sorted.append(row)
                            continue
                        }
                    }
                    if rows.isEmpty { rows.formUnion(sorted) }
                    LibraryAggregation.insertRows(lists, into: &rows)
                }
            }
            return rows.isEmpty ? sorted : LibraryAggregation.sortedRows(rows)
        }
    }

    /// Hands each song `filter` matches to `body`, in no order, in one pass
    /// (aggregates: what SQL can narrow is narrowed there).
    private func forEachMatch(_ filter: LibraryFilter, _ body: (LibrarySong) -> Void) throws(CoreError) {
        let matcher = try LibraryFilterMatcher(filter)
        _ = try forEachCandidate(SQLiteFilterPushdown(filter), matcher) { song, _ in
            body(song)
            return true
        }
    }

    public func count(matching filter: LibraryFilter) throws(CoreError) -> LibraryCount {
        guard filter.isEverything else {
            var total = LibraryCount()
            try forEachMatch(filter) { song in
                total.songs += 1
                total.playtime += SQLiteRows.seconds(song.duration)
            }
            return total
        }
        return try read { db in try Self.total("", [], db) }
    }

    public func count(matching filter: LibraryFilter, groupedBy tag: LibraryTag) throws(CoreError) -> [LibraryGroupCount] {
        var groups: [String: LibraryCount] = [:]
        func add(_ values: [String], _ songs: Int, _ playtime: Double) {
            for value in values {
                groups[value, default: LibraryCount()].songs += songs
                groups[value, default: LibraryCount()].playtime += playtime
            }
        }
        if filter.isEverything {
            let expression = SQLiteLibrarySchema.listExpression(tag)
            try read { db in
                try db.withCached("SELECT \(expression), count(*), \(Self.playtimeSum) FROM song GROUP BY \(expression)") { rows in
                    while try rows.step() {
                        add(SQLiteRows.values(rows.text(0)) ?? [""], SQLiteRows.count(rows.int64(1)), SQLiteRows.seconds(rows.double(2)))
                    }
                }
            }
        } else {
            try forEachMatch(filter) { song in add(song.values(of: tag), 1, SQLiteRows.seconds(song.duration)) }
        }
        return groups.map { LibraryGroupCount(value: $0.key, count: $0.value) }.sorted { LibraryText.byteLess($0.value, $1.value) }
    }

    /// The sum of the known durations, an absurd stored one (negative, infinite) counted 0.
    private static let playtimeSum = "total(CASE WHEN duration >= 0 AND duration <= 1e15 THEN duration ELSE 0 END)"

    /// Songs and playtime of the rows `clause` selects.
    private static func total(_ clause: String, _ values: [SQLiteValue], _ db: SQLiteConnection) throws -> LibraryCount {
        try db.withCached("SELECT count(*), \(playtimeSum) FROM song \(clause)") { row in
            try row.bind(values)
            guard try row.step() else { return LibraryCount() }
            return LibraryCount(songs: SQLiteRows.count(row.int64(0)), playtime: SQLiteRows.seconds(row.double(1)))
        }
    }
}

extension LibraryFilter {
    /// True for a filter every song matches: no condition at all (`.and([])`,
    /// nested, or the top folder as base).
    var isEverything: Bool {
        switch self {
        case .and(let parts): parts.allSatisfy(\.isEverything)
        case .base(let directory): directory.isEmpty
        default: false
        }
    }
}

/// What a walk reads of each folder's songs: songs, records or paths.
protocol SQLiteFolderRows {
    /// None (what the walk hands with a folder or a playlist).
    init()
    /// The songs read.
    var count: Int { get }
}

extension Array: SQLiteFolderRows {}

/// A folder's song paths as their UTF-8 bytes one after another (`list
/// file`): two buffers a folder instead of a String a song.
struct SQLitePathList: SQLiteFolderRows {
    private var bytes: [UInt8] = []
    /// Where each path ends in `bytes`.
    private var ends: [Int] = []

    var count: Int { ends.count }

    /// Appends column 0 of `row` (NULL as an empty path).
    mutating func append(_ row: SQLiteStatement) {
        _ = row.appendText(0, to: &bytes)
        ends.append(bytes.count)
    }

    /// `body` on each path in order, until it returns false; false when it did.
    func forEach(_ body: (UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        bytes.withUnsafeBufferPointer { all in
            var start = 0
            for end in ends {
                guard body(UnsafeBufferPointer(rebasing: all[start..<end])) else { return false }
                start = end
            }
            return true
        }
    }
}

/// What a walk reads of each folder's songs: `columns`, in `order`, of the
/// songs that `condition` (an ` AND …` clause, with `values`) keeps, from
/// the index of that order; `add` puts a row in its folder's rows.
struct SQLiteWalkRead<Rows: SQLiteFolderRows> {
    /// The statement: a range of folder ids bound first, then `values`.
    let sql: String
    /// The folder id's column, after `columns`.
    let idColumn: Int32
    let values: [SQLiteValue]
    let add: (inout Rows, SQLiteStatement, SQLiteConnection) throws -> Void

    init(columns: String, order: LibrarySongOrder, condition: String = "", values: [SQLiteValue] = [],
         add: @escaping (inout Rows, SQLiteStatement, SQLiteConnection) throws -> Void) {
        let index = order == .add ? "song_directory_add" : "song_directory_name"
        sql = "SELECT \(columns), directory_id FROM song INDEXED BY \(index) WHERE directory_id BETWEEN ? AND ?\(condition)"
            + " ORDER BY directory_id, " + SQLiteLibraryStore.rankColumn(order)
        idColumn = Int32(columns.utf8.reduce(1) { $1 == UInt8(ascii: ",") ? $0 + 1 : $0 })
        self.values = values
        self.add = add
    }
}
