// The library database's schema and its migrations — specs/library.md §Store (Schema)
import HarmoniaCore
import HarmoniaLibrary

/// The tables, by version: `migrations[n]` brings a database from version n
/// to n + 1, recorded in `PRAGMA user_version`.
enum SQLiteLibrarySchema {
    /// The version this build writes.
    static var version: Int { migrations.count }

    static let migrations: [String] = [
        // 1: folders, songs (one column per tag), playlists, the update time.
        """
        CREATE TABLE directory (
            id INTEGER PRIMARY KEY,
            path TEXT NOT NULL UNIQUE,
            parent_id INTEGER REFERENCES directory(id) ON DELETE CASCADE,
            modified INTEGER NOT NULL
        );
        CREATE INDEX directory_parent ON directory(parent_id);
        INSERT INTO directory(id, path, parent_id, modified) VALUES (1, '', NULL, 0);
        CREATE TABLE song (
            id INTEGER PRIMARY KEY,
            directory_id INTEGER NOT NULL REFERENCES directory(id) ON DELETE CASCADE,
            path TEXT NOT NULL UNIQUE,
            modified INTEGER NOT NULL,
            size INTEGER NOT NULL,
            duration REAL,
            format TEXT,
            artist TEXT, album_artist TEXT, album TEXT, title TEXT, track TEXT,
            genre TEXT, date TEXT, composer TEXT, disc TEXT, comment TEXT
        );
        CREATE INDEX song_directory ON song(directory_id);
        CREATE INDEX song_artist ON song(artist);
        CREATE INDEX song_album_artist ON song(album_artist);
        CREATE INDEX song_album ON song(album);
        CREATE INDEX song_genre ON song(genre);
        CREATE TABLE playlist (
            id INTEGER PRIMARY KEY,
            directory_id INTEGER NOT NULL REFERENCES directory(id) ON DELETE CASCADE,
            path TEXT NOT NULL UNIQUE,
            modified INTEGER NOT NULL
        );
        CREATE INDEX playlist_directory ON playlist(directory_id);
        CREATE TABLE library_state (
            key TEXT PRIMARY KEY,
            value INTEGER NOT NULL
        ) WITHOUT ROWID;
        """,
        // 2: a column per new tag (Performer, the MusicBrainz IDs); a column
        // may now hold several values (SQLiteRows.valueSeparator). Every song
        // and folder is marked changed, so the next scan reads every file's
        // lists (a stored "A;B" was one value FFmpeg had joined).
        """
        ALTER TABLE song ADD COLUMN performer TEXT;
        ALTER TABLE song ADD COLUMN musicbrainz_artistid TEXT;
        ALTER TABLE song ADD COLUMN musicbrainz_albumid TEXT;
        ALTER TABLE song ADD COLUMN musicbrainz_albumartistid TEXT;
        ALTER TABLE song ADD COLUMN musicbrainz_trackid TEXT;
        ALTER TABLE song ADD COLUMN musicbrainz_releasetrackid TEXT;
        ALTER TABLE song ADD COLUMN musicbrainz_workid TEXT;
        UPDATE song SET modified = -1;
        UPDATE directory SET modified = -1;
        """,
        // 3: indexes for the queries of a large library (specs/library.md
        // §Store): Date; the album artist as `list` and `find` see it
        // (AlbumArtist, else Artist) with the album, for `list albumartist`
        // and `list album group albumartist` without a sort; and, per
        // indexed tag, the few rows holding several values, so an exact
        // `find` is an index lookup, not a table scan (SQLiteFilterPushdown).
        """
        CREATE INDEX song_date ON song(date);
        CREATE INDEX song_effective_album_artist ON song(coalesce(album_artist, artist), album);
        CREATE INDEX song_artist_several ON song(id) WHERE instr(artist, char(31)) > 0;
        CREATE INDEX song_album_artist_several ON song(id) WHERE instr(album_artist, char(31)) > 0;
        CREATE INDEX song_album_several ON song(id) WHERE instr(album, char(31)) > 0;
        CREATE INDEX song_genre_several ON song(id) WHERE instr(genre, char(31)) > 0;
        CREATE INDEX song_date_several ON song(id) WHERE instr(date, char(31)) > 0;
        """,
        // 4: the mark of a song holding a character whose Unicode case
        // folding is ASCII ("ß" → "ss"), so that a folded text search tests
        // those rows spelled out and the others with LIKE alone
        // (SQLiteFilterPushdown). The index of AlbumArtist alone goes: every
        // query takes AlbumArtist with its Artist fallback, on
        // song_effective_album_artist, which now also holds the two columns
        // its expression reads, so that `list album group albumartist` is
        // answered from the index alone (SQLite 3.40 reads an expression
        // index's rows in the table otherwise).
        """
        DROP INDEX song_album_artist;
        DROP INDEX song_effective_album_artist;
        CREATE INDEX song_effective_album_artist ON song(coalesce(album_artist, artist), album, album_artist, artist);
        ALTER TABLE song ADD COLUMN folds_to_ascii INTEGER NOT NULL DEFAULT 0;
        UPDATE song SET folds_to_ascii = 1 WHERE \(SQLiteFilterPushdown.foldsToASCIICondition);
        """,
        // 5: each song's place in its folder, in natural order of file name
        // (`lsinfo`) and in add order (album, disc, track, name: `listall`,
        // `find`, `add`), kept by the store as songs are written
        // (SQLiteFolderRanks), so a folder's songs are read in order instead
        // of sorted at every query. NULL until ranked: the store ranks every
        // folder on opening a database that has unranked songs.
        """
        ALTER TABLE song ADD COLUMN name_rank INTEGER;
        ALTER TABLE song ADD COLUMN add_rank INTEGER;
        """,
        // 6: each song's tags as the lines of its record (LibraryTagLines),
        // so that a listing reads one column instead of one per tag and
        // prints it as it is (specs/library.md §Song records). NULL for a
        // song whose tags cannot be lines: it is read from its columns. The
        // existing songs' lines are written from their columns when the
        // store opens (`SQLiteRows.writeMissingTagLines`), while the mark
        // set here stays.
        """
        ALTER TABLE song ADD COLUMN tag_lines TEXT;
        INSERT INTO library_state(key, value) VALUES ('tag_lines_missing', 1);
        """,
        // 7: a folder's songs in each order on an index of the folder and
        // the rank, so a listing reads them in order instead of sorting them
        // in a temporary b-tree at every query (an album's `lsinfo` spent
        // 13 % of its instructions there). They replace `song_directory`,
        // whose lookups they serve; a first scan adds to them at their end
        // (folders are written one after another), so they are not deferred.
        // The add order's also holds the path: the paths of a walk (`list
        // file`) are read from the index alone, not from each song's row.
        """
        DROP INDEX IF EXISTS song_directory;
        CREATE INDEX song_directory_add ON song(directory_id, add_rank, path);
        CREATE INDEX song_directory_name ON song(directory_id, name_rank);
        """,
        // 8: each folder's place among its siblings in natural order of
        // name, kept by the store as folders are added (SQLiteFolderRanks),
        // so a walk or a listing puts subfolders in order without comparing
        // their names (the natural sort of the top's 4,322 folders was a
        // tenth of a whole-library `list file`); NULL until ranked, on
        // opening. The index of the parent gains the rank: a folder's
        // subfolders are read in order from it. And each folder's song
        // paths in add order, each followed by a NUL byte (`song_paths`,
        // kept with the ranks): `list file` reads a row per folder instead
        // of one per song, so the add order's index no longer holds the
        // paths. Written for every folder when the store opens a database
        // with the mark set here. The partial indexes of the rows holding
        // several values hold the value too: an exact `find` tests them in
        // the index instead of reading each such row (1 song in 20 with two
        // artists made `find albumartist` read 5,000 rows).
        """
        ALTER TABLE directory ADD COLUMN name_rank INTEGER;
        DROP INDEX IF EXISTS directory_parent;
        CREATE INDEX directory_parent ON directory(parent_id, name_rank);
        ALTER TABLE directory ADD COLUMN song_paths BLOB NOT NULL DEFAULT x'';
        INSERT OR REPLACE INTO library_state(key, value) VALUES ('song_paths_missing', 1);
        DROP INDEX IF EXISTS song_directory_add;
        CREATE INDEX song_directory_add ON song(directory_id, add_rank);
        DROP INDEX IF EXISTS song_artist_several;
        CREATE INDEX song_artist_several ON song(id, artist) WHERE instr(artist, char(31)) > 0;
        DROP INDEX IF EXISTS song_album_artist_several;
        CREATE INDEX song_album_artist_several ON song(id, album_artist) WHERE instr(album_artist, char(31)) > 0;
        DROP INDEX IF EXISTS song_album_several;
        CREATE INDEX song_album_several ON song(id, album) WHERE instr(album, char(31)) > 0;
        DROP INDEX IF EXISTS song_genre_several;
        CREATE INDEX song_genre_several ON song(id, genre) WHERE instr(genre, char(31)) > 0;
        DROP INDEX IF EXISTS song_date_several;
        CREATE INDEX song_date_several ON song(id, date) WHERE instr(date, char(31)) > 0;
        """,
    ]

    /// The song indexes a first scan builds once at its end instead of row by
    /// row (specs/library.md §Store, Large libraries): as the latest
    /// migration leaves them. Each insert lands at a random place in these,
    /// so row by row every commit of a first scan rewrote most of their
    /// pages (4.3 GB written for a 45 MB database of 100,000 songs).
    static let deferredIndexes: [(name: String, sql: String)] = [
        ("song_artist", "CREATE INDEX IF NOT EXISTS song_artist ON song(artist)"),
        ("song_album", "CREATE INDEX IF NOT EXISTS song_album ON song(album)"),
        ("song_genre", "CREATE INDEX IF NOT EXISTS song_genre ON song(genre)"),
        ("song_date", "CREATE INDEX IF NOT EXISTS song_date ON song(date)"),
        ("song_effective_album_artist",
         "CREATE INDEX IF NOT EXISTS song_effective_album_artist ON song(coalesce(album_artist, artist), album, album_artist, artist)"),
    ]

    /// Drops the deferred indexes when the song table is empty (a first
    /// scan's first batch, inside its transaction); true when it did.
    static func deferIndexesIfEmpty(_ db: SQLiteConnection) throws -> Bool {
        guard try db.integer("SELECT EXISTS (SELECT 1 FROM song)") == 0 else { return false }
        for index in deferredIndexes { try db.execute("DROP INDEX IF EXISTS \(index.name)") }
        return true
    }

    /// Builds any deferred index that is missing (after a first scan, and on
    /// opening a database whose first scan was stopped).
    static func buildDeferredIndexes(_ db: SQLiteConnection) throws {
        for index in deferredIndexes { try db.execute(index.sql) }
    }

    /// Tags with an index on their column (and on the rows holding several
    /// values): an exact match on them is looked up, not scanned.
    static let indexedTags: Set<LibraryTag> = [.artist, .albumArtist, .album, .genre, .date]

    /// The SQL expression of a tag's values as `list` and `count … group`
    /// see them: AlbumArtist falls back to Artist (NULL: the song has neither).
    static func listExpression(_ tag: LibraryTag) -> String {
        tag == .albumArtist ? "coalesce(album_artist, artist)" : column(tag)
    }

    /// The song column of each tag.
    static func column(_ tag: LibraryTag) -> String {
        switch tag {
        case .artist: "artist"
        case .albumArtist: "album_artist"
        case .album: "album"
        case .title: "title"
        case .track: "track"
        case .genre: "genre"
        case .date: "date"
        case .composer: "composer"
        case .disc: "disc"
        case .comment: "comment"
        case .performer: "performer"
        case .musicBrainzArtistID: "musicbrainz_artistid"
        case .musicBrainzAlbumID: "musicbrainz_albumid"
        case .musicBrainzAlbumArtistID: "musicbrainz_albumartistid"
        case .musicBrainzTrackID: "musicbrainz_trackid"
        case .musicBrainzReleaseTrackID: "musicbrainz_releasetrackid"
        case .musicBrainzWorkID: "musicbrainz_workid"
        }
    }

    /// Brings the database to `version`, in one transaction (SQLiteStoreSupport).
    /// - Throws: `unsupported` for a database written by a newer build (its
    ///   version above ours) or with a negative version; SQLite's errors.
    static func migrate(_ db: SQLiteConnection) throws {
        try db.migrate(migrations, what: "library database",
                       remedy: "use a newer build, or move the file away to rebuild the library")
    }
}
