// The SQLite store's own guarantees — specs/library.md §Store
import Foundation
import HarmoniaCore
import HarmoniaLibrary
@testable import HarmoniaSQLite
import Testing

@Suite struct SQLiteLibraryStoreTests {
    /// A closed database of the sample library in `folder`.
    private func sampleDatabase(in folder: TemporaryFolder) throws -> String {
        let file = folder.path + "/library.db"
        let store = try SQLiteLibraryStore(file: file)
        try store.add(SampleLibrary.songs)
        store.close()
        return file
    }

    @Test func newFileGetsTheCurrentSchemaInWALAndReopens() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let file = try sampleDatabase(in: folder)
        let raw = try SQLiteConnection(file: file, readOnly: true)
        #expect(try raw.integer("PRAGMA user_version") == Int64(SQLiteLibrarySchema.version))
        #expect(try raw.text("PRAGMA journal_mode") == "wal")
        #expect(try raw.integer("SELECT COUNT(*) FROM sqlite_master WHERE type = 'index' AND name = 'song_artist'") == 1)
        raw.close()
        let again = try SQLiteLibraryStore(file: file)
        defer { again.close() }
        #expect(try again.stats().songs == SampleLibrary.songs.count)
        #expect(try again.integrityProblems().isEmpty)
    }

    /// A folder's songs come from an index in either order, never through a
    /// sort at each query, and a walk's paths from the index alone (schema version 7).
    @Test func aFoldersSongsAreReadInOrderFromAnIndex() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let raw = try SQLiteConnection(file: try sampleDatabase(in: folder), readOnly: true)
        defer { raw.close() }
        for (order, index) in [(LibrarySongOrder.add, "song_directory_add"), (.name, "song_directory_name")] {
            for columns in [SQLiteRows.recordColumns, SQLiteRows.songColumns, "path"] {
                let sql = "SELECT \(columns) FROM song WHERE directory_id = ? ORDER BY " + SQLiteLibraryStore.rankColumn(order)
                let plan = try raw.prepare("EXPLAIN QUERY PLAN " + sql)
                var steps: [String] = []
                while try plan.step() { steps.append(plan.text(3) ?? "") }
                #expect(steps.contains { $0.contains("USING INDEX \(index) (directory_id=?)") }, "\(steps)")
                #expect(!steps.contains { $0.contains("TEMP B-TREE") }, "\(steps)")
            }
        }
        #expect(try raw.integer("SELECT COUNT(*) FROM sqlite_master WHERE name = 'song_directory'") == 0)
        // A walk reads a range of folders in one statement, in order, from
        // the same index, also with a filter's own clause.
        for order in [LibrarySongOrder.add, .name] {
            for sql in [SQLiteWalkRead<[LibrarySongRecord]>(order: order).sql,
                        SQLiteWalkRead<[LibrarySong]>(order: order, condition: " AND artist = ?").sql] {
                let plan = try raw.prepare("EXPLAIN QUERY PLAN " + sql)
                var steps: [String] = []
                while try plan.step() { steps.append(plan.text(3) ?? "") }
                let index = order == .add ? "song_directory_add" : "song_directory_name"
                #expect(steps.contains { $0.contains("INDEX \(index) (directory_id>? AND directory_id<?)") }, "\(steps)")
                #expect(!steps.contains { $0.contains("TEMP B-TREE") }, "\(steps)")
            }
        }
        // The paths of a whole-library walk: a row per folder, by id.
        let plan = try raw.prepare("EXPLAIN QUERY PLAN " + SQLiteWalkRead<SQLitePathList>(order: .add).sql)
        var steps: [String] = []
        while try plan.step() { steps.append(plan.text(3) ?? "") }
        #expect(steps.contains { $0.contains("USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)") }, "\(steps)")
        #expect(!steps.contains { $0.contains("TEMP B-TREE") }, "\(steps)")
    }

    /// `stats` is kept while nothing is committed and counted again after a
    /// commit by another connection (a second process on the same file).
    @Test func keptStatsAreCountedAgainAfterAnotherConnectionCommits() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let file = try sampleDatabase(in: folder)
        let store = try SQLiteLibraryStore(file: file)
        defer { store.close() }
        let before = try store.stats()
        #expect(try store.stats() == before)
        let other = try SQLiteLibraryStore(file: file)
        try other.add([LibrarySong(path: "New/1.flac", modified: 1, size: 1, tags: [.artist: ["Nobody Sampled Yet"]])])
        other.close()
        let after = try store.stats()
        #expect(after.songs == before.songs + 1)
        #expect(after.artists == before.artists + 1)
    }

    @Test func versionZeroDatabaseIsMigratedAndAFutureVersionRefused() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        // Version 0 with an unrelated table of someone else's: migrated beside it.
        let old = folder.path + "/old.db"
        let raw = try SQLiteConnection(file: old, readOnly: false)
        try raw.execute("CREATE TABLE notes (text TEXT); INSERT INTO notes VALUES ('kept')")
        raw.close()
        let migrated = try SQLiteLibraryStore(file: old)
        #expect(try migrated.stats().songs == 0)
        migrated.close()

        let future = folder.path + "/future.db"
        let newer = try SQLiteConnection(file: future, readOnly: false)
        try newer.execute("PRAGMA user_version = \(SQLiteLibrarySchema.version + 1)")
        newer.close()
        do {
            _ = try SQLiteLibraryStore(file: future)
            Issue.record("opened a future schema")
        } catch {
            #expect(error.category == .unsupported)
            #expect(error.message.contains("schema version \(SQLiteLibrarySchema.version + 1)"))
        }
    }

    @Test func notADatabaseIsAClearDecodeError() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let file = folder.path + "/library.db"
        try Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }).write(to: URL(fileURLWithPath: file))
        do {
            _ = try SQLiteLibraryStore(file: file)
            Issue.record("opened garbage")
        } catch {
            #expect(error.category == .decodeError)
            #expect(error.message.contains(file))
            #expect(error.message.contains("move the file away"))
        }
        do {
            _ = try SQLiteLibraryStore(file: folder.path + "/missing/folder/library.db")
            Issue.record("opened in a missing folder")
        } catch {
            #expect(error.category == .ioError)
        }
    }

    /// A folder's song paths from a hostile file (text instead of a blob,
    /// bytes that are not UTF-8, a newline, no NUL after the last path) are
    /// handed on as bytes, split at each NUL, without a trap; MPD's writer
    /// then keeps each on one line (MPDResponseWriterTests).
    @Test func hostileSongPathsAreHandedOnWithoutATrap() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let file = folder.path + "/library.db"
        let store = try SQLiteLibraryStore(file: file)
        try store.add([SampleLibrary.song("A/x.flac", [:])])
        store.close()
        let raw = try SQLiteConnection(file: file, readOnly: false)
        try raw.execute("UPDATE directory SET song_paths = 'text value' WHERE path = ''")
        try raw.execute("UPDATE directory SET song_paths = x'61ff0a620063' WHERE path = 'A'")
        raw.close()
        let reopened = try SQLiteLibraryStore(file: file)
        defer { reopened.close() }
        var paths: [[UInt8]] = []
        try reopened.visitSongPaths(matching: .and([])) { paths.append(Array($0)); return true }
        #expect(paths == [Array("text value".utf8), [0x61, 0xFF, 0x0A, 0x62], [0x63]])
    }

    @Test func hostileValuesAreCheckedNotTrappedOn() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let file = folder.path + "/library.db"
        try SQLiteLibraryStore(file: file).close()
        let raw = try SQLiteConnection(file: file, readOnly: false)
        try raw.execute("""
            INSERT INTO song(directory_id, path, modified, size, duration, format)
                VALUES (1, 'huge.flac', 1e300, -5, 1e999, NULL),
                       (1, 'nan.flac', 'text', 9e18, -3.5, 'x'),
                       (1, 'blob.flac', x'00ff', 1, 'abc', x'c3');
            INSERT INTO library_state(key, value) VALUES ('last_update', 1e308);
            """)
        raw.close()
        let store = try SQLiteLibraryStore(file: file)
        defer { store.close() }
        let songs = try store.songs(matching: .and([]))
        #expect(songs.count == 3)
        let huge = try #require(songs.first { $0.path == "huge.flac" })
        #expect(huge.modified == Int64.max && huge.size == 0 && huge.duration == nil)
        let nan = try #require(songs.first { $0.path == "nan.flac" })
        #expect(nan.duration == nil)
        let stats = try store.stats()
        #expect(stats.playtime.isFinite)
        #expect(stats.lastUpdate == Int64.max)
        _ = try store.count(matching: .and([]), groupedBy: .artist)
    }

    /// Tag lines that are not lines (a hostile or damaged file), or none
    /// (a song whose values cannot be lines): the tags come from their columns.
    @Test func songsWithoutWellFormedTagLinesAreReadFromTheirColumns() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let file = folder.path + "/library.db"
        let store = try SQLiteLibraryStore(file: file)
        defer { store.close() }
        let songs = (0..<5).map { LibrarySong(path: "S/\($0).flac", modified: 1, size: 1, tags: [.artist: ["A\($0)"], .title: ["T"]]) }
        try store.add(songs)
        let raw = try SQLiteConnection(file: file, readOnly: false)
        try raw.execute("""
            UPDATE song SET tag_lines = 'OK' || char(10) WHERE path = 'S/0.flac';
            UPDATE song SET tag_lines = 'Title: T' || char(10) || 'Artist: X' || char(10) WHERE path = 'S/1.flac';
            UPDATE song SET tag_lines = x'417274697374a03a' WHERE path = 'S/2.flac';
            UPDATE song SET tag_lines = NULL WHERE path = 'S/3.flac';
            """)
        raw.close()
        #expect(try store.listing(of: "S").songs == songs)
        #expect(try store.songs(matching: .tag(.title, TagMatch(.equals, "T"))) == songs)
        let records = try store.recordListing(of: "S", songOrder: .name)
        #expect(records == LibraryRecordListing(try store.listing(of: "S")))
        #expect(records.songs.allSatisfy { if case .lines = $0.tags { true } else { false } })
        // `any` is narrowed by SQL on the lines, or on the columns of a row without lines.
        for needle in ["a3", "A4"] {
            let found = try store.songs(matching: .anyTag(TagMatch(.contains, needle, foldCase: true))).map(\.path)
            #expect(found == ["S/\(needle.dropFirst()).flac"], "\(needle)")
        }
    }

    @Test func aVersionFiveLibraryGetsEverySongsTagLinesWhenOpened() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let file = folder.path + "/v5.db"
        let old = try SQLiteConnection(file: file, readOnly: false)
        for migration in SQLiteLibrarySchema.migrations.prefix(5) { try old.execute(migration) }
        try old.execute("PRAGMA user_version = 5")
        try old.execute("INSERT INTO directory(id, path, parent_id, modified) VALUES (2, 'A', 1, 50)")
        // 2,500 songs (more than one batch of the upgrade), one whose title cannot be a line.
        try old.execute("""
            WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
            INSERT INTO song(directory_id, path, modified, size, artist, title, name_rank, add_rank)
                SELECT 2, printf('A/%04d.flac', i), 50, 9, 'Björk' || char(31) || 'Ólafur Arnalds',
                       CASE i WHEN 7 THEN 'two' || char(10) || 'lines' ELSE 'Sun ' || i END, i, i FROM n
            """)
        old.close()
        let store = try SQLiteLibraryStore(file: file)
        defer { store.close() }
        let song = try #require(try store.song(at: "A/0001.flac"))
        #expect(song.modified == 50)
        #expect(song.tags == [.artist: ["Björk", "Ólafur Arnalds"], .title: ["Sun 1"]])
        #expect(try store.song(at: "A/0007.flac")?.tags[.title] == ["two\nlines"])
        let records = try store.recordListing(of: "A", songOrder: .add).songs
        #expect(records.count == 2_500)
        #expect(records.first?.tags == .lines(try #require(LibraryTagLines(text: "Artist: Björk\nArtist: Ólafur Arnalds\nTitle: Sun 1\n"))))
        #expect(records.filter { if case .values = $0.tags { true } else { false } }.map(\.path) == ["A/0007.flac"])
        #expect(try store.listing(of: "").directories.map(\.modified) == [50])
        store.close()
        let raw = try SQLiteConnection(file: file, readOnly: true)
        defer { raw.close() }
        #expect(try raw.integer("SELECT COUNT(*) FROM song WHERE tag_lines IS NULL") == 1)
        #expect(try raw.integer("SELECT COUNT(*) FROM library_state WHERE key = 'tag_lines_missing'") == 0)
    }

    /// The upgrade's writing of lines is one transaction: a process killed
    /// in it leaves the mark, and the next open writes them all.
    @Test func anUpgradeStoppedBeforeItsLinesWereWrittenWritesThemAtTheNextOpen() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let file = folder.path + "/library.db"
        let store = try SQLiteLibraryStore(file: file)
        try store.add([LibrarySong(path: "S/1.flac", modified: 1, size: 1, tags: [.album: ["X"]])])
        store.close()
        // As if stopped after the migration and before the lines were written.
        let raw = try SQLiteConnection(file: file, readOnly: false)
        try raw.execute("UPDATE song SET tag_lines = NULL; INSERT INTO library_state(key, value) VALUES ('tag_lines_missing', 1)")
        raw.close()
        let reopened = try SQLiteLibraryStore(file: file)
        defer { reopened.close() }
        #expect(try reopened.recordListing(of: "S", songOrder: .name).songs.map(\.tags)
                == [.lines(try #require(LibraryTagLines(text: "Album: X\n")))])
        let check = try SQLiteConnection(file: file, readOnly: true)
        defer { check.close() }
        #expect(try check.text("SELECT tag_lines FROM song") == "Album: X\n")
    }

    @Test func readsSeeTheLastCommitWhileABatchIsOpen() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let store = try SQLiteLibraryStore(file: folder.path + "/library.db")
        defer { store.close() }
        try store.add(Array(SampleLibrary.songs.prefix(3)))
        try store.beginUpdate()
        try store.deleteDirectory(at: "Sigur Rós")
        // Another thread's query is answered from the committed state, not blocked.
        let seen = try Thread.runAndWait { try store.songs(matching: .and([])).count }
        #expect(seen == 3)
        try store.commitUpdate()
        #expect(try store.songs(matching: .and([])).isEmpty)
    }

    /// An exact match on an indexed tag reads the tag's index and the rows
    /// holding several values, never a scan of the table or of a whole index.
    @Test func exactMatchesOnIndexedTagsScanNoWholeIndex() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let raw = try SQLiteConnection(file: try sampleDatabase(in: folder), readOnly: true)
        defer { raw.close() }
        for tag in SQLiteLibrarySchema.indexedTags.sorted(by: { $0.index < $1.index }) {
            let pushdown = SQLiteFilterPushdown(.tag(tag, TagMatch(.equals, "Kraftwerk")))
            #expect(pushdown.narrows, "\(tag)")
            let plan = try raw.prepare("EXPLAIN QUERY PLAN SELECT path FROM song \(pushdown.whereClause)")
            var steps: [String] = []
            while try plan.step() { steps.append(plan.text(3) ?? "") }
            #expect(steps.contains { $0.contains("MULTI-INDEX OR") }, "\(tag): \(steps)")
            // Only the partial indexes of rows with several values are scanned, each alone (it holds the values).
            #expect(!steps.contains { $0.hasPrefix("SCAN") && !($0.hasSuffix("_several") && $0.contains("COVERING INDEX")) },
                    "\(tag): \(steps)")
        }
    }

    @Test func pushdownKeepsEverySongTheFilterMatches() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let sqlite = try SQLiteLibraryStore(file: folder.path + "/library.db")
        defer { sqlite.close() }
        let memory = InMemoryLibraryStore()
        try sqlite.add(SampleLibrary.songs)
        try memory.add(SampleLibrary.songs)
        let filters: [LibraryFilter] = [
            .tag(.albumArtist, TagMatch(.equals, "Kraftwerk")), .tag(.albumArtist, TagMatch(.equals, "Nobody")),
            .and([.base("Sigur Rós/Takk"), .modifiedSince(0), .tag(.album, TagMatch(.equals, "Takk"))]),
            .base("Loose/track2.wav"), .file(TagMatch(.equals, "Loose/track10.wav")),
            .tag(.genre, TagMatch(.equals, "")), .not(.base("Loose")),
        ]
        for filter in filters {
            #expect(try sqlite.songs(matching: filter) == (try memory.songs(matching: filter)), "\(filter)")
        }
    }

    /// Songs whose tags fold to ASCII letters only through Unicode case
    /// folding, and LIKE's own wildcards.
    static let folding: [LibrarySong] = [
        LibrarySong(path: "F/01.flac", modified: 1, size: 1, tags: [.artist: ["Straße"], .title: ["Kelvin \u{212A}"]]),
        LibrarySong(path: "F/02.flac", modified: 1, size: 1, tags: [.album: ["\u{FB01}re \u{FB06}one"], .artist: ["A", "Bo\u{17F}"]]),
        LibrarySong(path: "F/03.flac", modified: 1, size: 1, tags: [.title: ["100%_done"], .albumArtist: ["MASSIVE"]]),
        LibrarySong(path: "F/04.flac", modified: 1, size: 1, tags: [.artist: ["Cafe\u{301}"], .comment: ["plain"]]),
        LibrarySong(path: "F/Gro\u{DF}e \u{FB01}le.flac", modified: 1, size: 1, tags: [.title: ["untitled"]]),
    ]

    @Test func foldedTextSearchesNarrowedBySQLFindWhatTheFilterFinds() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let sqlite = try SQLiteLibraryStore(file: folder.path + "/library.db")
        defer { sqlite.close() }
        try sqlite.add(Self.folding + SampleLibrary.songs)
        let all = Self.folding + SampleLibrary.songs
        var tested = 0
        for needle in ["ss", "SS", "k", "fi", "st", "sst", "s", "100%", "%", "_", "0%_d", "cafe", "plain", "e", "zz"] {
            for match in [TagMatch(.contains, needle, foldCase: true), TagMatch(.startsWith, needle, foldCase: true),
                          TagMatch(.equals, needle, foldCase: true), TagMatch(.contains, needle)] {
                for filter in [LibraryFilter.anyTag(match), .tag(.artist, match), .tag(.albumArtist, match), .file(match),
                               .not(.and([.not(.anyTag(match)), .not(.file(match))]))] {
                    let expected = Set(all.filter(filter.matches).map(\.path))
                    #expect(Set(try sqlite.songs(matching: filter).map(\.path)) == expected, "\(filter)")
                    var visited: [String] = []
                    try sqlite.visitSongs(matching: filter) { visited.append($0.path); return true }
                    #expect(Set(visited) == expected && visited.count == expected.count, "\(filter)")
                    #expect(try sqlite.count(matching: filter).songs == expected.count, "\(filter)")
                    tested += expected.isEmpty ? 0 : 1
                }
            }
        }
        #expect(tested > 20)
        // "Straße" and "MASSIVE" hold "ss"; "ﬆone" and "Boſ" hold "st" and "bos".
        let folded = { (needle: String) throws in
            Set(try sqlite.songs(matching: .and([.base("F"), .anyTag(TagMatch(.contains, needle, foldCase: true))])).map(\.path))
        }
        #expect(try folded("ss") == ["F/01.flac", "F/03.flac"])
        #expect(try folded("st") == ["F/01.flac", "F/02.flac"])
        #expect(try folded("bos") == ["F/02.flac"])
    }

    /// Every scalar whose case folding holds an ASCII character is in the
    /// pushdown's table, with that folding (the cased scripts all lie below U+20000).
    @Test func theFoldingTableHoldsEveryScalarThatFoldsToASCII() {
        var found: [String: String] = [:]
        for value in UInt32(0x80)..<0x20000 {
            guard let scalar = Unicode.Scalar(value) else { continue }
            let folded = LibraryText.fold(String(Character(scalar)))
            if folded.contains(where: \.isASCII) { found[String(Character(scalar))] = folded }
        }
        let table = Dictionary(uniqueKeysWithValues: SQLiteFilterPushdown.foldedToASCII.map { ($0.character, $0.folded) })
        #expect(found == table)
    }

    /// Songs with several values per tag, as the scanner stores them.
    static let duets: [LibrarySong] = [
        LibrarySong(path: "Duets/01.flac", modified: 1, size: 10,
                    tags: [.artist: ["Björk", "Ólafur Arnalds"], .albumArtist: ["Björk"], .genre: ["Electronic", "Ambient"],
                           .performer: ["Björk (vocals)", "Ólafur Arnalds (piano)"], .title: ["Together"]], duration: 2),
        LibrarySong(path: "Duets/02.flac", modified: 1, size: 10,
                    tags: [.artist: ["AC/DC", "Björk; Friends"], .genre: ["Rock/Pop"], .title: ["Friends"]], duration: 3),
        LibrarySong(path: "Duets/03.flac", modified: 1, size: 10, tags: [.artist: ["Ólafur Arnalds"], .title: ["Solo"]], duration: 4),
    ]

    @Test func valueListsRoundTripAndEveryStoreAnswersAlike() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let sqlite = try SQLiteLibraryStore(file: folder.path + "/library.db")
        defer { sqlite.close() }
        let memory = InMemoryLibraryStore()
        try sqlite.add(Self.duets)
        try memory.add(Self.duets)
        #expect(try sqlite.song(at: "Duets/01.flac") == Self.duets[0])
        #expect(try sqlite.song(at: "Duets/02.flac")?.tags[.artist] == ["AC/DC", "Björk; Friends"])
        let filters: [LibraryFilter] = [
            .tag(.artist, TagMatch(.equals, "Björk")), .tag(.artist, TagMatch(.equals, "Ólafur Arnalds")),
            .tag(.artist, TagMatch(.equals, "Björk; Friends")), .tag(.artist, TagMatch(.equals, "AC")),
            .tag(.artist, TagMatch(.equals, "Björk", negated: true)), .tag(.albumArtist, TagMatch(.equals, "Ólafur Arnalds")),
            .tag(.genre, TagMatch(.equals, "Ambient")), .tag(.performer, TagMatch(.contains, "piano")),
        ]
        let expected: [[String]] = [["Duets/01.flac"], ["Duets/01.flac", "Duets/03.flac"], ["Duets/02.flac"], [],
                                    ["Duets/02.flac", "Duets/03.flac"], ["Duets/03.flac"], ["Duets/01.flac"], ["Duets/01.flac"]]
        for (filter, paths) in zip(filters, expected) {
            #expect(try sqlite.songs(matching: filter).map(\.path) == paths, "\(filter)")
            #expect(try sqlite.songs(matching: filter) == (try memory.songs(matching: filter)), "\(filter)")
        }
        let stats = try sqlite.stats()
        #expect(stats.artists == 4 && stats.songs == 3)
        #expect(stats == (try memory.stats()))
        let rows = try sqlite.tagValues(.artist, groupedBy: [.genre], matching: .and([]))
        #expect(rows.map { $0.groups + [$0.value] } == [
            ["", "Ólafur Arnalds"], ["Ambient", "Björk"], ["Ambient", "Ólafur Arnalds"], ["Electronic", "Björk"],
            ["Electronic", "Ólafur Arnalds"], ["Rock/Pop", "AC/DC"], ["Rock/Pop", "Björk; Friends"],
        ])
        #expect(rows == (try memory.tagValues(.artist, groupedBy: [.genre], matching: .and([]))))
    }

    @Test func aVersionOneLibraryIsMigratedAndEveryFileMarkedForReading() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let file = folder.path + "/v1.db"
        let old = try SQLiteConnection(file: file, readOnly: false)
        try old.execute(SQLiteLibrarySchema.migrations[0])
        try old.execute("PRAGMA user_version = 1")
        try old.execute("INSERT INTO directory(id, path, parent_id, modified) VALUES (2, 'A', 1, 50)")
        try old.execute("INSERT INTO song(directory_id, path, modified, size, artist) VALUES (2, 'A/x.flac', 50, 9, 'Björk;Ólafur Arnalds')")
        old.close()
        let store = try SQLiteLibraryStore(file: file)
        defer { store.close() }
        // FFmpeg had joined the two artists: the next scan must read the file again.
        let song = try #require(try store.song(at: "A/x.flac"))
        #expect(song.modified == -1)
        #expect(song.tags[.artist] == ["Björk;Ólafur Arnalds"])
        #expect(try store.listing(of: "").directories.map(\.modified) == [-1])
        #expect(try store.integrityProblems().isEmpty)
    }
}

extension SQLiteLibraryStoreTests {
    /// A folder's songs in the two orders the Swift sorts give, from the store's rows.
    private func expectStoredOrders(_ store: SQLiteLibraryStore, folder: String, _ comment: Comment) throws {
        let songs = try store.listing(of: folder).songs
        let names = songs.map { LibraryPathName.of($0.path) }
        #expect(names == NaturalOrder.sorted(names), comment)
        var visited: [String] = []
        try store.visitSongs(matching: .base(folder)) { song in
            if song.directory == folder { visited.append(song.path) }
            return true
        }
        #expect(visited == LibraryAggregation.folderOrder(songs).map(\.path), comment)
        // A narrowing filter's songs are gathered and put in order by their stored places.
        let filter = LibraryFilter.tag(.album, TagMatch(.contains, "d", foldCase: true))
        var found: [String] = []
        try store.visitSongs(matching: filter) { found.append($0.path); return true }
        #expect(!found.isEmpty)
        #expect(found == LibraryAggregation.addOrder(try store.songs(matching: filter)).map(\.path), comment)
    }

    @Test func aFoldersStoredOrderFollowsEveryWriteAndAMigratedLibraryIsRanked() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let file = folder.path + "/library.db"
        let store = try SQLiteLibraryStore(file: file)
        // Written out of order, in two batches: the folder is ranked at each commit.
        let album = (1...12).reversed().map { n in
            SampleLibrary.song("A/track\(n).flac", [.album: n % 2 == 0 ? "Even" : "Odd", .track: "\(13 - n)"])
        }
        try store.add(Array(album.prefix(5)))
        try expectStoredOrders(store, folder: "A", "first batch")
        try store.add(Array(album.dropFirst(5)))
        try expectStoredOrders(store, folder: "A", "second batch")
        // A change of tags moves a song; a write outside a batch ranks too.
        try store.upsertSong(SampleLibrary.song("A/track3.flac", [.album: "Aardvark", .track: "1"]))
        try expectStoredOrders(store, folder: "A", "a retagged song")
        // A rolled-back batch leaves the committed order.
        try store.beginUpdate()
        try store.upsertSong(SampleLibrary.song("A/track0.flac", [.album: "Zzz"]))
        store.rollbackUpdate()
        try expectStoredOrders(store, folder: "A", "after a rollback")
        store.close()

        // A library written before the ranks existed: ranked when opened.
        let raw = try SQLiteConnection(file: file, readOnly: false)
        try raw.execute("UPDATE song SET name_rank = NULL, add_rank = NULL")
        raw.close()
        let reopened = try SQLiteLibraryStore(file: file)
        defer { reopened.close() }
        try expectStoredOrders(reopened, folder: "A", "ranked on opening")
        let check = try SQLiteConnection(file: file, readOnly: true)
        defer { check.close() }
        #expect(try check.integer("SELECT COUNT(*) FROM song WHERE name_rank IS NULL OR add_rank IS NULL") == 0)
    }
}

extension SQLiteLibraryStoreTests {
    /// The top's subfolders as a listing and a walk give them, and their natural order.
    private func expectSubfolderOrder(_ store: SQLiteLibraryStore, _ comment: Comment) throws {
        let listed = try store.listing(of: "").directories.map(\.path)
        #expect(listed == NaturalOrder.sorted(listed), comment)
        var walked: [String] = []
        try store.visitEntries(under: "", songOrder: .add) { entry in
            if case .directory(let folder) = entry, !folder.path.contains("/") { walked.append(folder.path) }
            return true
        }
        #expect(walked == listed, comment)
        var paths: [String] = []
        try store.visitSongPaths(matching: .and([])) { paths.append(String(decoding: $0, as: UTF8.self)); return true }
        #expect(paths == listed.map { $0 + "/x.flac" }, comment)
    }

    /// Subfolders come in natural order from their stored places (schema
    /// version 8): added out of order, between others, in a batch or alone;
    /// a deleted one leaves the order; a library written before the folder
    /// ranks is ranked when opened; a listing reads them from an index, not a sort.
    @Test func aFoldersSubfoldersAreRankedAsTheyAreAddedAndReadInOrder() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let file = folder.path + "/library.db"
        let store = try SQLiteLibraryStore(file: file)
        func songs(_ names: [String]) -> [LibrarySong] { names.map { SampleLibrary.song("\($0)/x.flac", [:]) } }
        try store.add(songs(["b", "a10", "a2", "A1", "c", "a1", "Ábc"]))
        try expectSubfolderOrder(store, "first batch")
        try store.add(songs(["a3", "0", "a11"]))
        try expectSubfolderOrder(store, "added between the others")
        try store.upsertDirectory(LibraryDirectory(path: "a15", modified: 1))
        try store.upsertSong(SampleLibrary.song("a15/x.flac", [:]))
        try store.deleteDirectory(at: "c")
        try expectSubfolderOrder(store, "one added alone, one deleted")
        store.close()

        // A library from before schema version 8: no folder ranks, no song paths, the mark.
        let raw = try SQLiteConnection(file: file, readOnly: false)
        try raw.execute("UPDATE directory SET name_rank = NULL, song_paths = x''")
        try raw.execute("INSERT OR REPLACE INTO library_state(key, value) VALUES ('song_paths_missing', 1)")
        raw.close()
        let reopened = try SQLiteLibraryStore(file: file)
        defer { reopened.close() }
        try expectSubfolderOrder(reopened, "ranked on opening")
        let check = try SQLiteConnection(file: file, readOnly: true)
        defer { check.close() }
        #expect(try check.integer("SELECT COUNT(*) FROM directory WHERE name_rank IS NULL AND path <> ''") == 0)
        #expect(try check.integer("SELECT COUNT(*) FROM library_state WHERE key = 'song_paths_missing'") == 0)
        let plan = try check.prepare("EXPLAIN QUERY PLAN SELECT path, modified FROM directory WHERE parent_id = ? AND id <> ? ORDER BY name_rank")
        var steps: [String] = []
        while try plan.step() { steps.append(plan.text(3) ?? "") }
        #expect(steps.contains { $0.contains("USING INDEX directory_parent (parent_id=?)") }, "\(steps)")
        #expect(!steps.contains { $0.contains("TEMP B-TREE") }, "\(steps)")
    }
}

extension SQLiteLibraryStoreTests {
    /// The SQL of every index on `song`, by name, as `sqlite_master` holds it.
    static func songIndexes(_ file: String) throws -> [String: String] {
        let db = try SQLiteConnection(file: file, readOnly: true)
        defer { db.close() }
        let rows = try db.prepare("SELECT name, coalesce(sql, '') FROM sqlite_master WHERE type = 'index' AND tbl_name = 'song'")
        var found: [String: String] = [:]
        while try rows.step() { found[rows.text(0)!] = rows.text(1)! }
        return found
    }

    @Test func aFirstScanBuildsTheTagIndexesAtItsEndOrOnTheNextOpen() throws {
        let folder = try TemporaryFolder("sqlite")
        defer { folder.remove() }
        let file = folder.path + "/library.db"
        let fresh = try Self.songIndexes(file + ".fresh", creating: true)
        let deferred = Set(SQLiteLibrarySchema.deferredIndexes.map(\.name))
        #expect(deferred.isSubset(of: Set(fresh.keys)), "the deferred indexes are the schema's")

        // A first batch into an empty library drops them; the scan's end builds them again, as the schema has them.
        let store = try SQLiteLibraryStore(file: file)
        try store.add([SampleLibrary.song("A/1.flac", [.artist: "B", .album: "C"])])
        #expect(Set(try Self.songIndexes(file).keys).isDisjoint(with: deferred), "dropped during a first scan")
        let songs = try store.songs(matching: .tag(.artist, TagMatch(.equals, "B", foldCase: false)))
        #expect(songs.map(\.path) == ["A/1.flac"], "answers stay right without them")
        try store.markUpdateComplete(at: 1)
        #expect(try Self.songIndexes(file) == fresh, "built at the scan's end, the same SQL")
        // A later batch, into a library that has songs, keeps them.
        try store.add([SampleLibrary.song("A/2.flac", [.artist: "D"])])
        #expect(try Self.songIndexes(file) == fresh)
        store.close()

        // A first scan stopped before its end (killed: the store never closed): built when the database is next opened.
        let file2 = folder.path + "/killed.db"
        let killed = try SQLiteLibraryStore(file: file2)
        try killed.add([SampleLibrary.song("A/1.flac", [.artist: "B"])])
        #expect(Set(try Self.songIndexes(file2).keys).isDisjoint(with: deferred))
        let reopened = try SQLiteLibraryStore(file: file2)
        #expect(try Self.songIndexes(file2) == fresh, "built on opening")
        reopened.close()
        _ = killed  // never closed, as a killed process leaves it

        // A rolled-back first batch leaves them as they were.
        let file3 = folder.path + "/rollback.db"
        let rolled = try SQLiteLibraryStore(file: file3)
        defer { rolled.close() }
        try rolled.beginUpdate()
        try rolled.upsertDirectory(LibraryDirectory(path: "A", modified: 1))
        try rolled.upsertSong(SampleLibrary.song("A/1.flac", [.artist: "B"]))
        rolled.rollbackUpdate()
        #expect(try Self.songIndexes(file3) == fresh)
    }

    /// `songIndexes(_:)` of a new database made at `file`.
    static func songIndexes(_ file: String, creating: Bool) throws -> [String: String] {
        let store = try SQLiteLibraryStore(file: file)
        store.close()
        return try songIndexes(file)
    }
}

extension Thread {
    /// Runs `body` on a new thread and waits for its result.
    static func runAndWait<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        let result = LockedResult<T>()
        let done = DispatchSemaphore(value: 0)
        Thread { result.set(Result { try body() }); done.signal() }.start()
        done.wait()
        return try result.get()
    }
}

private final class LockedResult<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Result<T, any Error>?
    func set(_ value: Result<T, any Error>) { lock.withLock { self.value = value } }
    func get() throws -> T { try lock.withLock { value! }.get() }
}
