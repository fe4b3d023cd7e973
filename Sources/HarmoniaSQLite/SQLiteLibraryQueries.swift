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

    public func visitSongs(matching filter: LibraryFilter, _ body: (LibrarySong) -> Bool) throws(CoreError) {
        let matcher = try LibraryFilterMatcher(filter)
        let pushdown = SQLiteFilterPushdown(filter)
        let top = pushdown.base ?? ""
        let topID = pushdown.narrowsByIndex ? nil : try read { db in try? Self.directoryID(top, db) }
        guard let topID else {
            // An index narrows the songs (or the base is a song): few, read at once.
            for song in LibraryAggregation.addOrder(try songs(matching: filter)) where !body(song) { return }
            return
        }
        let clause = "WHERE directory_id = ?" + (pushdown.clauses.isEmpty ? "" : " AND " + pushdown.clauses.joined(separator: " AND "))
        try walk(from: topID, songs: (clause, pushdown.values), keep: matcher.matches,
                 order: LibraryAggregation.addOrder, playlists: false) { entry in
            guard case .song(let song) = entry else { return true }
            return body(song)
        }
    }

    public func visitEntries(under directory: String, _ body: (LibraryEntry) -> Bool) throws(CoreError) {
        let topID = try read { db in try Self.directoryID(directory, db) }
        try walk(from: topID, songs: ("WHERE directory_id = ?", []), keep: { _ in true },
                 order: { NaturalOrder.sorted($0, byName: { LibraryPathName.of($0.path) }) }, playlists: true, body)
    }

    /// Depth first from the folder `topID`: each folder's songs (those
    /// `keep` keeps, in `order`), its playlists (when `playlists`), then
    /// each subfolder (natural order) as `.directory` followed by its
    /// contents. The songs' statement is `songs.clause` with the folder's id
    /// bound first. Stops when `body` returns false. Holds the reader's lock
    /// only while one folder is read.
    private func walk(from topID: Int64, songs: (clause: String, values: [SQLiteValue]), keep: (LibrarySong) -> Bool,
                      order: ([LibrarySong]) -> [LibrarySong], playlists: Bool,
                      _ body: (LibraryEntry) -> Bool) throws(CoreError) {
        enum Item {
            case entry(LibraryEntry)
            case folder(Int64, LibraryDirectory)
        }
        var stack: [Item] = []
        func expand(_ id: Int64) throws(CoreError) {
            let (folders, found, lists) = try read { db in
                var folders: [(Int64, LibraryDirectory)] = []
                try db.withCached("SELECT id, path, modified FROM directory WHERE parent_id = ? AND id <> ?") { statement in
                    try statement.bind([.integer(id), .integer(id)])
                    while try statement.step() {
                        folders.append((statement.int64(0) ?? 0,
                                        LibraryDirectory(path: statement.text(1) ?? "", modified: statement.int64(2) ?? 0)))
                    }
                }
                let found = try Self.songs(songs.clause, [.integer(id)] + songs.values, db)
                let lists = playlists ? try Self.playlists("WHERE directory_id = ?", [.integer(id)], db) : []
                return (folders, found, lists)
            }
            var items = order(found.filter(keep)).map { Item.entry(.song($0)) }
            items += NaturalOrder.sorted(lists, byName: { LibraryPathName.of($0.path) }).map { Item.entry(.playlist($0)) }
            items += NaturalOrder.sorted(folders, byName: { LibraryPathName.of($0.1.path) }).map { Item.folder($0.0, $0.1) }
            stack += items.reversed()
        }
        try expand(topID)
        while let item = stack.popLast() {
            switch item {
            case .entry(let entry):
                guard body(entry) else { return }
            case .folder(let id, let directory):
                guard body(.directory(directory)) else { return }
                try expand(id)
            }
        }
    }

    // MARK: Aggregates

    /// Distinct artists and albums, songs, playtime: grouped by SQLite on
    /// the indexes (values split in Swift: a column may hold several), and
    /// kept until a write is committed (`PRAGMA data_version`).
    public func stats() throws(CoreError) -> LibraryStats {
        try read { db in
            let version = try db.integer("PRAGMA data_version") ?? 0
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

    public func tagValues(_ tag: LibraryTag, groupedBy groups: [LibraryTag], matching filter: LibraryFilter) throws(CoreError) -> [LibraryTagRow] {
        guard filter.isEverything else {
            var rows = Set<LibraryTagRow>()
            try visitSongs(matching: filter) { song in
                LibraryAggregation.insertRows(of: song, tag, groupedBy: groups, into: &rows)
                return true
            }
            return LibraryAggregation.sortedRows(rows)
        }
        let expressions = (groups + [tag]).map(SQLiteLibrarySchema.listExpression).joined(separator: ", ")
        return try read { db in
            var rows = Set<LibraryTagRow>()
            try db.withCached("SELECT \(expressions) FROM song GROUP BY \(expressions)") { statement in
                while try statement.step() {
                    let lists = (0...groups.count).map { SQLiteRows.values(statement.text(Int32($0))) ?? [""] }
                    LibraryAggregation.insertRows(lists, into: &rows)
                }
            }
            return LibraryAggregation.sortedRows(rows)
        }
    }

    public func count(matching filter: LibraryFilter) throws(CoreError) -> LibraryCount {
        guard filter.isEverything else {
            var total = LibraryCount()
            try visitSongs(matching: filter) { song in
                total.songs += 1
                total.playtime += SQLiteRows.seconds(song.duration)
                return true
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
            try visitSongs(matching: filter) { song in
                add(song.values(of: tag), 1, SQLiteRows.seconds(song.duration))
                return true
            }
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
