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
        // Two processes creating the same database: the one switching it to
        // WAL needs it alone, and SQLite answers the other SQLITE_BUSY at
        // once, without its busy handler (it would deadlock). Tried again,
        // as the busy timeout would, for as long.
        var mode: String?
        var waited: Int32 = 0
        while true {
            do throws(SQLiteError) {
                mode = try connection.text("PRAGMA journal_mode = WAL")
                break
            } catch {
                guard error.isBusy, waited < busyTimeoutMilliseconds else { throw error }
                connection.pause(milliseconds: 5)
                waited += 5
            }
        }
        guard mode?.lowercased() == "wal" else {
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

/// A store's one connection behind a lock, every failure a `CoreError`
/// naming the database: what each store of the package needs around its
/// calls. Threads: any, one body at a time.
package final class GuardedSQLite: @unchecked Sendable {
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private let db: SQLiteConnection
    private let what: String
    private let rebuild: String

    /// `what` names the database in errors ("listens database"); `rebuild`
    /// says how a damaged one is replaced.
    package init(_ db: SQLiteConnection, what: String, rebuild: String) {
        self.db = db
        self.what = what
        self.rebuild = rebuild
    }

    package var file: String { db.file }

    /// Runs `body` on the connection under the lock.
    /// - Throws: what `body` throws, as a `CoreError` (SQLite's errors mapped).
    package func run<T>(_ body: (SQLiteConnection) throws -> T) throws(CoreError) -> T {
        do {
            return try lock.withLock { () throws -> T in try body(db) }
        } catch {
            throw coreError(error)
        }
    }

    /// `error` as a CoreError naming this database.
    package func coreError(_ error: any Error) -> CoreError {
        Self.openError(error, file: db.file, what: what, rebuild: rebuild)
    }

    /// `error` (from opening the database at `file`, or any call) as a CoreError naming it.
    package static func openError(_ error: any Error, file: String, what: String, rebuild: String) -> CoreError {
        switch error {
        case let error as CoreError: error
        case let error as SQLiteError: error.coreError(file: file, what: what, rebuild: rebuild)
        default: .ioError("\(what) '\(file)': \(error)")
        }
    }
}
