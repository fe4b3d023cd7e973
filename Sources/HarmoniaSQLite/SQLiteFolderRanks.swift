// Songs' places in their folder, and folders' among their siblings, stored — specs/library.md §Store (Large libraries)
import HarmoniaCore
import HarmoniaLibrary

/// Keeps `song.name_rank` and `song.add_rank`: each song's place among its
/// folder's songs in natural order of file name and in add order
/// (`LibraryAggregation.folderOrder`: album, disc, track, name); and
/// `directory.name_rank`: each folder's place among its siblings in natural
/// order of name; and `directory.song_paths`: a folder's song paths in add
/// order, each followed by a NUL byte (no path holds one). A folder whose
/// songs were written or deleted, or that gained a
/// subfolder, is ranked again in the same transaction, before it commits,
/// so a committed folder is always in order, and a query reads a folder's
/// songs and subfolders with `ORDER BY` instead of sorting them. A deleted
/// song or folder leaves a gap, which keeps the order.
///
/// Threads: the writer connection's, under the store's writer lock.
struct SQLiteFolderRanks {
    /// Folders whose songs were written since the last ranking.
    private(set) var dirty: Set<Int64> = []
    /// Folders that gained a subfolder since the last ranking.
    private(set) var dirtyParents: Set<Int64> = []

    /// Notes that a song of folder `id` was written.
    mutating func touched(_ id: Int64) { dirty.insert(id) }

    /// Notes that folder `id` gained a subfolder.
    mutating func gainedSubfolder(_ id: Int64) { dirtyParents.insert(id) }

    /// Forgets the folders noted (the transaction was rolled back).
    mutating func reset() {
        dirty.removeAll()
        dirtyParents.removeAll()
    }

    /// Ranks the folders noted, then forgets them.
    mutating func rankTouched(_ db: SQLiteConnection) throws {
        for id in dirty { try Self.rank(folder: id, db) }
        for id in dirtyParents { try Self.rank(subfoldersOf: id, db) }
        reset()
    }

    /// Ranks every folder holding an unranked song or subfolder (a
    /// database from an older build, migrated). Returns the folders ranked.
    @discardableResult
    static func rankUnranked(_ db: SQLiteConnection) throws -> Int {
        var folders: [Int64] = [], parents: [Int64] = []
        try db.withCached("SELECT DISTINCT directory_id FROM song WHERE name_rank IS NULL OR add_rank IS NULL") { statement in
            while try statement.step() { folders.append(statement.int64(0) ?? 0) }
        }
        try db.withCached("SELECT DISTINCT parent_id FROM directory WHERE name_rank IS NULL AND parent_id IS NOT NULL") { statement in
            while try statement.step() { parents.append(statement.int64(0) ?? 0) }
        }
        for id in folders { try rank(folder: id, db) }
        for id in parents { try rank(subfoldersOf: id, db) }
        return folders.count + parents.count
    }

    /// Writes the ranks of folder `id`'s subfolders where they changed.
    static func rank(subfoldersOf id: Int64, _ db: SQLiteConnection) throws {
        var rowIDs: [Int64] = [], names: [String] = [], stored: [Int64?] = []
        try db.withCached("SELECT id, path, name_rank FROM directory WHERE parent_id = ? AND id <> ?") { statement in
            try statement.bind([.integer(id), .integer(id)])
            while try statement.step() {
                rowIDs.append(statement.int64(0) ?? 0)
                names.append(LibraryPathName.of(statement.text(1) ?? ""))
                stored.append(statement.int64(2))
            }
        }
        for (place, row) in NaturalOrder.order(ofNames: names).enumerated() where stored[row] != Int64(place) {
            try db.run(cached: "UPDATE directory SET name_rank = ? WHERE id = ?", [.integer(Int64(place)), .integer(rowIDs[row])])
        }
    }

    /// Writes the ranks of folder `id`'s songs, and its `song_paths`, where they changed.
    static func rank(folder id: Int64, _ db: SQLiteConnection) throws {
        // The folder's rows, by their place in the SELECT: id, stored ranks,
        // and a song with what the two orders compare (path, album, disc, track).
        var rowIDs: [Int64] = []
        var stored: [(name: Int64?, add: Int64?)] = []
        var songs: [LibrarySong] = []
        let album = SQLiteLibrarySchema.column(.album), disc = SQLiteLibrarySchema.column(.disc)
        let track = SQLiteLibrarySchema.column(.track)
        try db.withCached("SELECT id, path, \(album), \(disc), \(track), name_rank, add_rank FROM song WHERE directory_id = ?") { statement in
            try statement.bind([.integer(id)])
            while try statement.step() {
                var tags: [LibraryTag: [String]] = [:]
                for (column, tag) in [(2, LibraryTag.album), (3, .disc), (4, .track)] {
                    if let values = SQLiteRows.values(statement.text(Int32(column))) { tags[tag] = values }
                }
                rowIDs.append(statement.int64(0) ?? 0)
                stored.append((statement.int64(5), statement.int64(6)))
                songs.append(LibrarySong(path: statement.text(1) ?? "", modified: 0, size: 0, tags: tags, duration: nil, format: nil))
            }
        }
        let byName = NaturalOrder.sorted(Array(songs.indices), byName: { LibraryPathName.of(songs[$0].path) })
        var ranks = [(name: Int64, add: Int64)](repeating: (0, 0), count: songs.count)
        for (place, row) in byName.enumerated() { ranks[row].name = Int64(place) }
        var paths: [UInt8] = []
        for (place, row) in LibraryAggregation.folderOrder(byName, song: { songs[$0] }, namesInOrder: true).enumerated() {
            ranks[row].add = Int64(place)
            paths += songs[row].path.utf8
            paths.append(0)
        }
        for (row, rank) in ranks.enumerated() where stored[row].name != rank.name || stored[row].add != rank.add {
            try db.run(cached: "UPDATE song SET name_rank = ?, add_rank = ? WHERE id = ?",
                       [.integer(rank.name), .integer(rank.add), .integer(rowIDs[row])])
        }
        let pathsChanged = try db.withCached("SELECT song_paths FROM directory WHERE id = ?") { statement in
            try statement.bind([.integer(id)])
            return try statement.step() && statement.withBlob(0) { !$0.elementsEqual(paths) }
        }
        if pathsChanged {
            try db.run(cached: "UPDATE directory SET song_paths = ? WHERE id = ?", [.blob(paths), .integer(id)])
        }
    }

    /// Writes every folder's `song_paths` when the database is marked
    /// (`song_paths_missing`: upgraded to schema version 8), then removes
    /// the mark; in the caller's transaction.
    static func writeMissingSongPaths(_ db: SQLiteConnection) throws {
        guard try db.integer("SELECT EXISTS (SELECT 1 FROM library_state WHERE key = 'song_paths_missing')") != 0 else { return }
        var folders: [Int64] = []
        try db.withCached("SELECT DISTINCT directory_id FROM song") { statement in
            while try statement.step() { folders.append(statement.int64(0) ?? 0) }
        }
        for id in folders { try rank(folder: id, db) }
        try db.run(cached: "DELETE FROM library_state WHERE key = 'song_paths_missing'", [])
    }
}
