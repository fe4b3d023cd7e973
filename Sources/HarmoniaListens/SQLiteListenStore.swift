// SQLiteListenStore: the play history and the reporting outbox in one SQLite
// table — specs/listens.md §History, §Outbox
//
// On the package's one SQLite layer (HarmoniaSQLite's openWAL, transaction,
// migrate, GuardedSQLite); no sqlite3_* call here. Each write is one
// committed transaction before the call returns.
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaSQLite

/// The listens database (`$XDG_DATA_HOME/harmonia-play/listens.sqlite` by default).
///
/// Threads: any; one call at a time (a lock guards the connection). Two
/// processes share it through SQLite's locking.
public final class SQLiteListenStore: ListenStorePort, @unchecked Sendable {
    /// Most undelivered listens kept: past it the oldest are dropped (and counted).
    public static let defaultOutboxBound = 100_000
    private static let separator: Character = "\u{1F}"

    /// The database file.
    public let file: String
    private let outboxBound: Int
    private let opening = NSLock()
    /// Opened at once when the file exists, else at the first write (so a
    /// player that never counted a listen leaves no file). Guarded by `opening`.
    private var opened: GuardedSQLite?

    /// The default database: `$XDG_DATA_HOME/harmonia-play/listens.sqlite`
    /// (`~/.local/share/harmonia-play/listens.sqlite` without it).
    public static func defaultFile(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let data = environment["XDG_DATA_HOME"], data.hasPrefix("/") { return data + "/harmonia-play/listens.sqlite" }
        return (environment["HOME"] ?? NSHomeDirectory()) + "/.local/share/harmonia-play/listens.sqlite"
    }

    static let migrations: [String] = [
        // 1: one row per listen (specs/listens.md §History).
        """
        CREATE TABLE listen (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            listened_at INTEGER NOT NULL,
            seconds_heard REAL NOT NULL,
            title TEXT,
            artists TEXT NOT NULL DEFAULT '',
            album TEXT,
            album_artist TEXT,
            track_number INTEGER,
            duration REAL,
            recording_mbid TEXT,
            release_mbid TEXT,
            artist_mbids TEXT NOT NULL DEFAULT '',
            source TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sending', 'delivered', 'rejected')),
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            recorded_at REAL NOT NULL,
            delivered_at REAL
        );
        CREATE INDEX listen_undelivered ON listen(id) WHERE state IN ('pending', 'sending');
        """,
    ]

    /// The database at `file`: opened now when it exists; created (with its
    /// folder, mode 0700) by the first listen recorded. Reads of a file not
    /// yet created find nothing.
    /// - Throws: `ioError` when it cannot be opened; `decodeError` for a
    ///   damaged file; `unsupported` for one a newer build wrote.
    public init(file: String, outboxBound: Int = SQLiteListenStore.defaultOutboxBound) throws(CoreError) {
        self.file = file
        self.outboxBound = max(1, outboxBound)
        if FileManager.default.fileExists(atPath: file) { _ = try database(create: false) }
    }

    /// The open database; nil when the file does not exist and `create` is false.
    private func database(create: Bool) throws(CoreError) -> GuardedSQLite? {
        opening.lock()
        defer { opening.unlock() }
        if let opened { return opened }
        guard create || FileManager.default.fileExists(atPath: file) else { return nil }
        let folder = (file as NSString).deletingLastPathComponent
        if !folder.isEmpty, !FileManager.default.fileExists(atPath: folder) {
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw .ioError("listens database '\(file)': cannot create its folder: \(error.localizedDescription)")
            }
        }
        let rebuild = "a new file starts an empty history"
        let db: GuardedSQLite
        do {
            db = GuardedSQLite(try SQLiteConnection.openWAL(file: file, what: "listens database"), what: "listens database", rebuild: rebuild)
        } catch {
            throw GuardedSQLite.openError(error, file: file, what: "listens database", rebuild: rebuild)
        }
        try db.run { db in
            try db.migrate(Self.migrations, what: "listens database", remedy: "use a newer build, or move the file away")
        }
        opened = db
        return db
    }

    public func record(_ metadata: ListenMetadata, listenedAt: Int64, secondsHeard: Double) throws(CoreError) -> (id: Int64, dropped: Int) {
        try database(create: true)!.run { db in
            try db.transaction { db in
                try db.prepare("""
                    INSERT INTO listen(listened_at, seconds_heard, title, artists, album, album_artist, track_number,
                                       duration, recording_mbid, release_mbid, artist_mbids, source, recorded_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """).run([
                    .integer(listenedAt), .real(secondsHeard.isFinite ? secondsHeard : 0), SQLiteValue(metadata.title),
                    .text(Self.joined(metadata.artists)), SQLiteValue(metadata.album), SQLiteValue(metadata.albumArtist),
                    metadata.trackNumber.map { .integer(Int64($0)) } ?? .null,
                    SQLiteValue(metadata.duration.flatMap { $0.isFinite ? $0 : nil }),
                    SQLiteValue(metadata.recordingMBID), SQLiteValue(metadata.releaseMBID),
                    .text(Self.joined(metadata.artistMBIDs)), .text(metadata.source), .real(Date().timeIntervalSince1970),
                ])
                let id = try db.integer("SELECT last_insert_rowid()") ?? 0
                let waiting = try db.integer("SELECT count(*) FROM listen WHERE state IN ('pending', 'sending')") ?? 0
                let excess = max(0, waiting - Int64(outboxBound))
                if excess > 0 {
                    try db.prepare("""
                        DELETE FROM listen WHERE id IN (SELECT id FROM listen WHERE state IN ('pending', 'sending')
                                                        ORDER BY id LIMIT ?)
                        """).run([.integer(excess)])
                }
                return (id, Int(excess))
            }
        }
    }

    public func undelivered(limit: Int) throws(CoreError) -> [ListenRecord] {
        try select("WHERE state IN ('pending', 'sending') ORDER BY id LIMIT ?", [.integer(Int64(max(0, limit)))])
    }

    public func history(limit: Int) throws(CoreError) -> [ListenRecord] {
        try select("ORDER BY listened_at DESC, id DESC LIMIT ?", [.integer(Int64(max(0, limit)))])
    }

    public func mark(_ ids: [Int64], _ state: ListenDeliveryState, error: String?) throws(CoreError) {
        guard !ids.isEmpty, let db = try database(create: false) else { return }
        try db.run { db in
            try db.transaction { db in
                let statement = try db.prepare("""
                    UPDATE listen SET state = ?, last_error = ?, attempts = attempts + ?,
                                      delivered_at = CASE WHEN ? = 'delivered' THEN ? ELSE delivered_at END
                    WHERE id = ? AND state <> 'delivered'
                    """)
                for id in ids {
                    try statement.run([.text(state.rawValue), SQLiteValue(error), .integer(state == .pending ? 1 : 0),
                                       .text(state.rawValue), .real(Date().timeIntervalSince1970), .integer(id)])
                    try statement.reset()
                }
            }
        }
    }

    private func select(_ tail: String, _ values: [SQLiteValue]) throws(CoreError) -> [ListenRecord] {
        guard let db = try database(create: false) else { return [] }
        return try db.run { db in
            let statement = try db.prepare("""
                SELECT id, listened_at, seconds_heard, title, artists, album, album_artist, track_number, duration,
                       recording_mbid, release_mbid, artist_mbids, source, state, attempts, last_error FROM listen
                """ + " " + tail)
            try statement.bind(values)
            var rows: [ListenRecord] = []
            while try statement.step() {
                let metadata = ListenMetadata(
                    title: statement.text(3), artists: Self.split(statement.text(4)), album: statement.text(5),
                    albumArtist: statement.text(6), trackNumber: statement.int64(7).flatMap { Int(exactly: $0) },
                    duration: statement.double(8).flatMap { $0.isFinite && $0 >= 0 ? $0 : nil },
                    recordingMBID: statement.text(9), releaseMBID: statement.text(10),
                    artistMBIDs: Self.split(statement.text(11)), source: statement.text(12) ?? "")
                let heard = statement.double(2) ?? 0
                rows.append(ListenRecord(
                    id: statement.int64(0) ?? 0, metadata: metadata, listenedAt: statement.int64(1) ?? 0,
                    secondsHeard: heard.isFinite && heard >= 0 ? heard : 0,
                    state: ListenDeliveryState(rawValue: statement.text(13) ?? "") ?? .pending,
                    attempts: Int(clamping: max(0, statement.int64(14) ?? 0)), lastError: statement.text(15)))
            }
            return rows
        }
    }

    private static func joined(_ list: [String]) -> String {
        list.map { $0.replacingOccurrences(of: String(separator), with: " ") }.joined(separator: String(separator))
    }

    private static func split(_ text: String?) -> [String] {
        guard let text, !text.isEmpty else { return [] }
        return text.split(separator: separator, omittingEmptySubsequences: false).map(String.init)
    }
}
