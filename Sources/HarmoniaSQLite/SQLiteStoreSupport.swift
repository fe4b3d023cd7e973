// What every store of the package does alike on its SQLite database —
// specs/library.md §Store, specs/offline.md §Index
//
// Open in WAL mode with a busy timeout, run a body in one transaction, and
// bring a schema up to date through `PRAGMA user_version`. Each store owns
// its tables and its list of migrations; this file owns how they are run.
// No sqlite3_* call here: they are all in SQLiteCalls.swift.
import HarmoniaCore

extension SQLiteConnection {
    /// Opens (creating) the database at `file` for writing, in WAL mode,
    /// with `synchronous = NORMAL` (a commit survives a crash of the
    /// process; the last ones may be lost on power loss, never half-applied)
    /// and foreign keys on. Waits up to `busyTimeoutMilliseconds` for
    /// another connection's (or process's) lock.
    /// - Throws: `SQLiteError` from the open; `CoreError.ioError` naming
    ///   `what` when the file system refuses WAL mode (a network mount).
    package static func openWAL(file: String, what: String, busyTimeoutMilliseconds: Int32 = 5000) throws -> SQLiteConnection {
        let connection = try SQLiteConnection(file: file, readOnly: false, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        guard try connection.text("PRAGMA journal_mode = WAL")?.lowercased() == "wal" else {
            throw CoreError.ioError("\(what) '\(file)': cannot switch to WAL mode; put it on a local disk")
        }
        try connection.execute("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON")
        return connection
    }

    /// Runs `body` in one `BEGIN IMMEDIATE` transaction (the write lock is
    /// taken at once, so two processes never deadlock upgrading a read):
    /// committed when it returns, rolled back when it throws.
    /// - Throws: what `body` throws; `SQLiteError` from BEGIN or COMMIT
    ///   (SQLITE_BUSY once the busy timeout has passed).
    package func transaction<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body(self)
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    /// Brings the database to version `migrations.count`, in one
    /// transaction: `migrations[n]` takes it from version n to n + 1,
    /// recorded in `PRAGMA user_version`.
    /// - Throws: `CoreError.unsupported` for a database written by a newer
    ///   build (a version above ours) or with a negative version, naming
    ///   `what` and telling the user `remedy`; SQLite's errors.
    package func migrate(_ migrations: [String], what: String, remedy: String) throws {
        let version = migrations.count
        try transaction { db in
            let found = try db.integer("PRAGMA user_version") ?? 0
            guard found >= 0, found <= Int64(version) else {
                throw CoreError.unsupported("\(what) '\(db.file)' has schema version \(found); this build reads versions up to \(version): \(remedy)")
            }
            for next in Int(found)..<version {
                try db.execute(migrations[next])
                try db.execute("PRAGMA user_version = \(next + 1)")
            }
        }
    }
}
