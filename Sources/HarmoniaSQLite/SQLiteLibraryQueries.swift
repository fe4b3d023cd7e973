// The library's queries that stay fast and lean at 100,000 songs — specs/library.md §Store (Large libraries)
//
// Whole-library answers are walked folder by folder (SQLiteLibraryWalk.swift:
// a run of folders at a time under the reader's lock, so a slow client never
// holds it and memory is bounded by the run); aggregates without a filter are grouped by
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
        let folderSongs = SQLiteWalkRead<[LibrarySong]>(order: .add, condition: pushdown.clauses.map { " AND " + $0 }.joined(),
                                                        values: pushdown.values)
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
        let paths = SQLiteWalkRead<SQLitePathList>(order: .add)
        try walk(from: "", reading: paths, listing: false) { entry, paths in
            entry == nil ? paths.forEach(body) : true
        }
    }

    public func visitEntries(under directory: String, songOrder: LibrarySongOrder,
                             _ body: (LibraryEntry) -> Bool) throws(CoreError) {
        let songs = SQLiteWalkRead<[LibrarySong]>(order: songOrder)
        try walk(from: directory, reading: songs, listing: true) { entry, folderSongs in
            if let entry { return body(entry) }
            for song in folderSongs where !body(.song(song)) { return false }
            return true
        }
    }

    public func visitRecordEntries(under directory: String, songOrder: LibrarySongOrder,
                                   _ body: (LibraryRecordEntry) -> Bool) throws(CoreError) {
        let records = SQLiteWalkRead<[LibrarySongRecord]>(order: songOrder)
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
