// Every libsqlite3 call of HarmoniaSQLite — specs/library.md §Store, specs/offline.md §Index
//
// The one file that calls sqlite3_*: each failure is thrown as an SQLiteError
// naming the function and SQLite's message; each store maps it to CoreError.
// Package access: the one SQLite layer under every store of this package
// (the library here, the offline store in HarmoniaOfflineStore).
import CSQLite
import HarmoniaCore

/// A failed SQLite call: the function, SQLite's (extended) result code and message.
package struct SQLiteError: Error, CustomStringConvertible {
    package let function: String
    package let code: Int32
    package let message: String

    package init(function: String, code: Int32, message: String) {
        self.function = function
        self.code = code
        self.message = message
    }

    package var description: String { "\(function) failed (\(code)): \(message)" }

    /// The primary result code (the low byte of an extended code).
    package var primaryCode: Int32 { code & 0xFF }

    /// Another connection holds a lock this one needs (SQLITE_BUSY).
    package var isBusy: Bool { primaryCode == SQLITE_BUSY }

    /// The CoreError for this failure of the database at `file`, with what
    /// the user can do: `what` names the database ("library database"),
    /// `rebuild` says how a corrupt one is rebuilt.
    package func coreError(file: String, what: String = "library database",
                           rebuild: String = "a new scan rebuilds the library") -> CoreError {
        let text = "\(what) '\(file)': \(description)"
        switch primaryCode {
        case SQLITE_NOTADB, SQLITE_CORRUPT:
            return .decodeError(text + "; move the file away, and " + rebuild)
        case SQLITE_CONSTRAINT:
            return .invalidState(text)
        case SQLITE_BUSY, SQLITE_LOCKED:
            return .ioError(text + "; another program holds the database locked")
        case SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY:
            return .ioError(text + "; check that the folder exists and is writable")
        case SQLITE_FULL:
            return .ioError(text + "; the disk is full")
        default:
            return .ioError(text)
        }
    }
}

/// One connection (`sqlite3 *`). Not thread-safe: its owner guards it with a lock.
package final class SQLiteConnection {
    private var handle: OpaquePointer?
    package let file: String
    /// Statements compiled once and reused (`withCached`), by SQL text.
    private var statements: [String: SQLiteStatement] = [:]
    /// More distinct SQL texts than this and the cache starts again.
    private static let maxCachedStatements = 64
    /// The statements used last, looked at before `statements`: a text
    /// held in a constant compares equal to itself at once, where hashing it
    /// reads every byte (a scan's song insert, 1 KB of SQL, 100,000 times).
    private var recent: [(sql: String, statement: SQLiteStatement)] = []
    private static let recentCount = 8

    /// Opens (creating when `create`) the database at `file`; waits up to
    /// `busyTimeoutMilliseconds` for another connection's lock.
    package init(file: String, readOnly: Bool, busyTimeoutMilliseconds: Int32 = 5000) throws(SQLiteError) {
        self.file = file
        let flags = readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        var db: OpaquePointer?
        let status = PathBytes.withCString(file) { sqlite3_open_v2($0, &db, flags | SQLITE_OPEN_NOMUTEX, nil) }
        guard status == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(status))
            sqlite3_close_v2(db)
            throw SQLiteError(function: "sqlite3_open_v2", code: status, message: message)
        }
        handle = db
        sqlite3_extended_result_codes(db, 1)
        sqlite3_busy_timeout(db, busyTimeoutMilliseconds)
    }

    deinit { close() }

    /// Sleeps `milliseconds` (sqlite3_sleep): a pause before trying a busy statement again.
    package func pause(milliseconds: Int32) {
        _ = sqlite3_sleep(milliseconds)
    }

    /// Closes the connection; later calls fail with SQLITE_MISUSE. Idempotent.
    package func close() {
        statements = [:]
        recent = []
        if let handle { sqlite3_close_v2(handle) }
        handle = nil
    }

    /// Runs `sql` (one or more statements, no results wanted).
    package func execute(_ sql: String) throws(SQLiteError) {
        let db = try open("sqlite3_exec")
        var error: UnsafeMutablePointer<CChar>?
        let status = sqlite3_exec(db, sql, nil, nil, &error)
        guard status == SQLITE_OK else {
            let message = error.map { String(cString: $0) } ?? String(cString: sqlite3_errmsg(db))
            sqlite3_free(error)
            throw SQLiteError(function: "sqlite3_exec", code: status, message: message)
        }
    }

    /// Compiles one statement.
    package func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        let db = try open("sqlite3_prepare_v2")
        var statement: OpaquePointer?
        let status = sqlite3_prepare_v2(db, sql, -1, &statement, nil)
        guard status == SQLITE_OK, let statement else {
            throw SQLiteError(function: "sqlite3_prepare_v2", code: status, message: String(cString: sqlite3_errmsg(db)))
        }
        return SQLiteStatement(statement, connection: db)
    }

    /// Runs `body` with the statement of `sql`, compiled at its first use
    /// on this connection and kept; reset afterwards (its read ends, so a
    /// reader never holds an old snapshot), bindings replaced by the next
    /// `bind`. Not re-entrant for the same `sql`.
    package func withCached<T>(_ sql: String, _ body: (SQLiteStatement) throws -> T) throws -> T {
        let statement: SQLiteStatement
        if let hit = recent.firstIndex(where: { $0.sql == sql }) {
            statement = recent[hit].statement
        } else {
            if let cached = statements[sql] {
                statement = cached
            } else {
                if statements.count >= Self.maxCachedStatements {
                    statements = [:]
                    recent = []
                }
                statement = try prepare(sql)
                statements[sql] = statement
            }
            if recent.count == Self.recentCount { recent.removeFirst() }
            recent.append((sql, statement))
        }
        defer { try? statement.reset() }
        return try body(statement)
    }

    /// Runs `body`'s statements in one read transaction: SQLite takes its
    /// file locks (a handful of `fcntl` calls) once for all of them instead of
    /// once per statement, and they all read the same snapshot.
    package func reading<T>(_ body: () throws -> T) throws -> T {
        try run(cached: "BEGIN", [])
        let result: T
        do {
            result = try body()
        } catch {
            try? run(cached: "ROLLBACK", [])
            throw error
        }
        try run(cached: "COMMIT", [])
        return result
    }

    /// Runs the cached statement of `sql` (no rows wanted) with `values`.
    package func run(cached sql: String, _ values: [SQLiteValue]) throws {
        try withCached(sql) { statement in try statement.run(values) }
    }

    /// The first column of the first row of `sql`, as an integer (nil without a row or for NULL).
    package func integer(_ sql: String) throws(SQLiteError) -> Int64? {
        let statement = try prepare(sql)
        return try statement.step() ? statement.int64(0) : nil
    }

    /// The first column of the first row of `sql`, as text.
    package func text(_ sql: String) throws(SQLiteError) -> String? {
        let statement = try prepare(sql)
        return try statement.step() ? statement.text(0) : nil
    }

    /// True when a transaction is open (not in autocommit mode).
    package var inTransaction: Bool {
        guard let handle else { return false }
        return sqlite3_get_autocommit(handle) == 0
    }

    private func open(_ function: String) throws(SQLiteError) -> OpaquePointer {
        guard let handle else { throw SQLiteError(function: function, code: SQLITE_MISUSE, message: "the connection is closed") }
        return handle
    }
}

/// One prepared statement. Finalized when released; used by one thread at a time.
package final class SQLiteStatement {
    private let statement: OpaquePointer
    private let connection: OpaquePointer

    fileprivate init(_ statement: OpaquePointer, connection: OpaquePointer) {
        self.statement = statement
        self.connection = connection
    }

    deinit { sqlite3_finalize(statement) }

    /// Binds the parameters in order (1-based in SQL): String, Int64, Double or nil.
    package func bind(_ values: [SQLiteValue]) throws(SQLiteError) {
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            let status: Int32
            switch value {
            case .null: status = sqlite3_bind_null(statement, index)
            case .integer(let number): status = sqlite3_bind_int64(statement, index, number)
            case .real(let number): status = sqlite3_bind_double(statement, index, number)
            case .text(let text):
                status = sqlite3_bind_text(statement, index, text, Int32(clamping: text.utf8.count), harmonia_sqlite_transient())
            case .blob(let bytes):
                status = bytes.withUnsafeBytes { raw in
                    // A zero-length blob, not NULL, for no bytes.
                    sqlite3_bind_blob(statement, index, raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(clamping: raw.count),
                                      harmonia_sqlite_transient())
                }
            }
            guard status == SQLITE_OK else { throw failure("sqlite3_bind", status) }
        }
    }

    /// Advances to the next row: true for a row, false when done.
    package func step() throws(SQLiteError) -> Bool {
        let status = sqlite3_step(statement)
        switch status {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw failure("sqlite3_step", status)
        }
    }

    /// Makes the statement ready to run again (its bindings are replaced by the next `bind`).
    package func reset() throws(SQLiteError) {
        let status = sqlite3_reset(statement)
        guard status == SQLITE_OK else { throw failure("sqlite3_reset", status) }
    }

    /// Runs a statement that returns no rows.
    package func run(_ values: [SQLiteValue] = []) throws(SQLiteError) {
        try bind(values)
        while try step() {}
    }

    /// Column `index` as an integer; nil for NULL. A REAL is converted by
    /// SQLite, which clamps out-of-range values (no trap); TEXT is parsed.
    package func int64(_ index: Int32) -> Int64? {
        sqlite3_column_type(statement, index) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, index)
    }

    /// Column `index` as an integer, 0 for NULL (a column that is never NULL).
    package func integer(_ index: Int32) -> Int64 {
        sqlite3_column_int64(statement, index)
    }

    /// Column `index` as a Double; nil for NULL.
    package func double(_ index: Int32) -> Double? {
        sqlite3_column_type(statement, index) == SQLITE_NULL ? nil : sqlite3_column_double(statement, index)
    }

    /// Column `index` as UTF-8 text (bytes that are not UTF-8 are replaced); nil for NULL.
    package func text(_ index: Int32) -> String? {
        guard sqlite3_column_type(statement, index) != SQLITE_NULL, let bytes = sqlite3_column_text(statement, index) else { return nil }
        let count = Int(max(0, sqlite3_column_bytes(statement, index)))
        return String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
    }

    /// `body` on column `index`'s bytes as a blob (valid only during the call; empty for NULL).
    package func withBlob<T>(_ index: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T {
        let start = sqlite3_column_blob(statement, index)?.assumingMemoryBound(to: UInt8.self)
        let count = start == nil ? 0 : Int(max(0, sqlite3_column_bytes(statement, index)))
        return body(UnsafeBufferPointer(start: start, count: count))
    }

    private func failure(_ function: String, _ status: Int32) -> SQLiteError {
        SQLiteError(function: function, code: status, message: String(cString: sqlite3_errmsg(connection)))
    }
}

/// A value bound to a statement parameter.
package enum SQLiteValue {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    package init(_ text: String?) { self = text.map(SQLiteValue.text) ?? .null }
    package init(_ number: Double?) { self = number.map(SQLiteValue.real) ?? .null }
}
