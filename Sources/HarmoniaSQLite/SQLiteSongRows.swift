// Rows ↔ records, every number checked — specs/library.md §Store (Hostile files)
import HarmoniaLibrary

/// How songs, folders and playlists are read from rows. A database file may
/// be hostile: every value read back is checked before use, and an absurd one
/// is replaced (a negative size by 0, a duration that is not a finite,
/// non-negative number by "unknown"), never trapped on.
enum SQLiteRows {
    /// The song columns, in the order `song(from:_:)` reads them: the tags
    /// from their lines (`tag_lines`), or, for a row without well-formed
    /// lines, from their columns, looked up by `id`.
    static let songColumns = "path, modified, size, duration, format, tag_lines, id"

    /// How many columns `songColumns` names (a query may select more after them).
    static let songColumnCount = 7

    /// The columns `record(from:_:)` reads, in its order.
    static let recordColumns = "path, modified, duration, format, tag_lines, id"

    /// The tag columns, in `LibraryTag.allCases` order.
    static let tagColumns = LibraryTag.allCases.map(SQLiteLibrarySchema.column).joined(separator: ", ")

    /// What separates the values of a tag in its column: U+001F (unit
    /// separator), a control character no stored value holds (the scanner
    /// turns control characters into spaces).
    static let valueSeparator: Character = "\u{1F}"

    /// A column's text as values; nil for NULL, and for a column holding no
    /// value at all (a hostile row).
    static func values(_ text: String?) -> [String]? {
        guard let text else { return nil }
        if !text.utf8.contains(0x1F) { return [text] }  // one value: no Character walk
        let values = text.split(separator: valueSeparator, omittingEmptySubsequences: false).map(String.init)
        return values.isEmpty ? nil : values
    }

    /// The column text of `values` (nil for none).
    static func columnText(_ values: [String]?) -> String? {
        guard let values, !values.isEmpty else { return nil }
        return values.joined(separator: String(valueSeparator))
    }

    /// The song of a row of `songColumns`.
    static func song(from row: SQLiteStatement, _ db: SQLiteConnection) throws -> LibrarySong {
        LibrarySong(path: row.text(0) ?? "", modified: row.int64(1) ?? 0, size: max(0, row.int64(2) ?? 0),
                    tags: try tagLines(row.text(5)).map(\.tags) ?? tags(ofSong: row.int64(6) ?? 0, db),
                    duration: duration(row.double(3)), format: row.text(4))
    }

    /// The record of a row of `recordColumns`.
    static func record(from row: SQLiteStatement, _ db: SQLiteConnection) throws -> LibrarySongRecord {
        let tags: LibrarySongRecord.Tags
        if let lines = tagLines(row.text(4)) {
            tags = .lines(lines)
        } else {
            let values = try self.tags(ofSong: row.int64(5) ?? 0, db)
            tags = LibraryTagLines(values).map(LibrarySongRecord.Tags.lines) ?? .values(values)
        }
        return LibrarySongRecord(path: row.text(0) ?? "", modified: row.int64(1) ?? 0, duration: duration(row.double(2)),
                                 format: row.text(3), tags: tags)
    }

    /// A `tag_lines` column's lines, when well-formed; nil for NULL (a row
    /// whose tags cannot be lines, or written before schema version 6) and
    /// for text that is not lines (a hostile row).
    private static func tagLines(_ text: String?) -> LibraryTagLines? {
        text.flatMap { LibraryTagLines(text: $0) }
    }

    /// The tags of song `id` from their columns.
    static func tags(ofSong id: Int64, _ db: SQLiteConnection) throws -> [LibraryTag: [String]] {
        try db.withCached("SELECT \(tagColumns) FROM song WHERE id = ?") { row in
            try row.bind([.integer(id)])
            return try row.step() ? tags(from: row, at: 0) : [:]
        }
    }

    /// The tags of a row whose `tagColumns` start at column `first`.
    private static func tags(from row: SQLiteStatement, at first: Int32) -> [LibraryTag: [String]] {
        var tags = [LibraryTag: [String]](minimumCapacity: 10)
        for (offset, tag) in LibraryTag.allCases.enumerated() {
            if let values = values(row.text(first + Int32(offset))) { tags[tag] = values }
        }
        return tags
    }

    /// Writes the lines of every song that has none, from its columns, when
    /// the database is marked for it (`tag_lines_missing`: schema version 6
    /// added the column), then removes the mark; in the caller's
    /// transaction, so a process killed half-way leaves the mark and the
    /// next open starts again. A song whose values cannot be lines keeps
    /// none. Reads a thousand songs at a time.
    static func writeMissingTagLines(_ db: SQLiteConnection) throws {
        guard try db.integer("SELECT EXISTS (SELECT 1 FROM library_state WHERE key = 'tag_lines_missing')") != 0 else { return }
        var after: Int64 = -1
        while true {
            var batch: [(id: Int64, lines: String?)] = []
            try db.withCached("SELECT id, \(tagColumns) FROM song WHERE id > ? AND tag_lines IS NULL ORDER BY id LIMIT 1000") { row in
                try row.bind([.integer(after)])
                while try row.step() { batch.append((row.int64(0) ?? 0, LibraryTagLines(tags(from: row, at: 1))?.text)) }
            }
            guard let last = batch.last else { break }
            after = last.id
            for (id, lines) in batch where lines != nil {
                try db.run(cached: "UPDATE song SET tag_lines = ? WHERE id = ?", [SQLiteValue(lines), .integer(id)])
            }
        }
        try db.run(cached: "DELETE FROM library_state WHERE key = 'tag_lines_missing'", [])
    }

    /// The values of `writtenSongColumns`, bound by `SQLiteLibraryStore.upsertSong` after the folder id.
    static func songValues(_ song: LibrarySong) -> [SQLiteValue] {
        [.text(song.path), .integer(song.modified), .integer(max(0, song.size)), SQLiteValue(duration(song.duration)),
         SQLiteValue(song.format)] + LibraryTag.allCases.map { SQLiteValue(columnText(song.tags[$0])) }
            + [.integer(SQLiteFilterPushdown.foldsToASCII(song) ? 1 : 0), SQLiteValue(LibraryTagLines(song.tags)?.text)]
    }

    /// The song columns `songValues` writes: the song's fields, its tag
    /// columns, the mark of a row holding characters whose case folding is
    /// ASCII (SQLiteFilterPushdown), and its tag lines (NULL when its tags
    /// cannot be lines).
    static let writtenSongColumns = "path, modified, size, duration, format, " + tagColumns + ", folds_to_ascii, tag_lines"

    /// `value` when it is a finite, non-negative number of seconds, else nil.
    static func duration(_ value: Double?) -> Double? {
        guard let value, value.isFinite, value >= 0 else { return nil }
        return value
    }

    /// A count from SQLite as an Int (never negative).
    static func count(_ value: Int64?) -> Int {
        Int(clamping: max(0, value ?? 0))
    }

    /// A sum of seconds, 0 when absurd.
    static func seconds(_ value: Double?) -> Double {
        duration(value) ?? 0
    }
}

/// The part of a filter SQL can narrow with indexes: a WHERE clause that
/// keeps every song the filter matches (maybe more); the filter itself then
/// decides, in Swift.
struct SQLiteFilterPushdown {
    private(set) var clauses: [String] = []
    private(set) var values: [SQLiteValue] = []
    /// A clause is an index lookup (an exact path or indexed tag): few rows.
    private(set) var narrowsByIndex = false
    /// A clause is an index lookup or a text test (`LIKE`): usually few rows.
    var narrows: Bool { narrowsByIndex || tested }
    private var tested = false
    /// The first top-level `base` folder, if any.
    private(set) var base: String?

    init(_ filter: LibraryFilter) {
        switch filter {
        case .and(let parts): parts.forEach { add($0) }
        default: add(filter)
        }
    }

    /// "WHERE …" or "".
    var whereClause: String {
        clauses.isEmpty ? "" : "WHERE " + clauses.joined(separator: " AND ")
    }

    private mutating func add(_ filter: LibraryFilter) {
        switch filter {
        case .base(let directory) where !directory.isEmpty:
            if base == nil { base = directory }
            let range = Self.pathRange(under: directory)
            clauses.append("(path = ? OR (path >= ? AND path < ?))")
            values += [.text(directory), .text(range.from), .text(range.to)]
        case .modifiedSince(let time):
            clauses.append("modified >= ?")
            values.append(.integer(time))
        case .file(let match) where Self.isExact(match):
            clauses.append("path = ?")
            values.append(.text(match.value))
            narrowsByIndex = true
        case .tag(.albumArtist, let match) where Self.isExact(match):
            // The effective value (AlbumArtist, else Artist) on its index, or
            // a row holding several values of either (Swift decides).
            clauses.append("(coalesce(album_artist, artist) = ? OR \(Self.several("album_artist")) OR \(Self.several("artist")))")
            values += [.text(match.value), .text(match.value), .text(match.value)]
            narrowsByIndex = true
        case .tag(let tag, let match) where Self.isExact(match) && SQLiteLibrarySchema.indexedTags.contains(tag):
            let column = SQLiteLibrarySchema.column(tag)
            clauses.append("(\(column) = ? OR \(Self.several(column)))")
            values += [.text(match.value), .text(match.value)]
            narrowsByIndex = true
        case .tag(let tag, let match) where Self.isExact(match):
            clauses.append(Self.holds(SQLiteLibrarySchema.column(tag)))
            values += [.text(match.value), .text(match.value)]
        case .tag, .anyTag, .file:
            guard let test = Self.textTest(filter) else { break }
            clauses.append(test.clause)
            values += test.values
            tested = true
        case .not(.and(let parts)) where !parts.isEmpty:
            // NOT (NOT a AND NOT b …) = a OR b …: narrowed when each is a text test.
            let tests = parts.compactMap { part -> (clause: String, values: [SQLiteValue])? in
                guard case .not(let inner) = part else { return nil }
                return Self.textTest(inner)
            }
            guard tests.count == parts.count else { break }
            clauses.append("(" + tests.map(\.clause).joined(separator: " OR ") + ")")
            values += tests.flatMap(\.values)
            tested = true
        default:
            break
        }
    }

    /// The text test of a tag (AlbumArtist: and Artist, its fallback),
    /// of any tag, or of the path (`textTest(_:columns:marked:)`); nil for
    /// any other filter, or a match it cannot narrow.
    private static func textTest(_ filter: LibraryFilter) -> (clause: String, values: [SQLiteValue])? {
        switch filter {
        case .tag(let tag, let match):
            textTest(match, columns: tag == .albumArtist ? ["album_artist", "artist"] : [SQLiteLibrarySchema.column(tag)], marked: true)
        case .anyTag(let match):
            anyTagTest(match)
        case .file(let match):
            textTest(match, columns: ["path"], marked: false)
        default:
            nil
        }
    }

    /// The text test of any tag: one test of the song's tag lines (which
    /// hold every value, and the tag names: more rows may pass, never
    /// fewer), or, for a row without lines, of every tag column.
    private static func anyTagTest(_ match: TagMatch) -> (clause: String, values: [SQLiteValue])? {
        guard let lines = textTest(match, columns: ["tag_lines"], marked: true),
              let columns = textTest(match, columns: LibraryTag.allCases.map(SQLiteLibrarySchema.column), marked: true)
        else { return nil }
        return ("((tag_lines IS NOT NULL AND \(lines.clause)) OR (tag_lines IS NULL AND \(columns.clause)))",
                lines.values + columns.values)
    }

    /// For a match that needs the value to hold the needle's text (`==`,
    /// `contains`, `starts_with`; folded or not; not negated), a clause
    /// keeping the songs where one of `columns` may hold it: `LIKE`
    /// (ASCII case folded) on the column, or, for a row holding one of the
    /// characters whose Unicode case folding gives letters of the needle
    /// ("ß" → "ss" for "sun"; `foldedToASCII`), on the column with those
    /// spelled out. Such rows are those marked `folds_to_ascii` (tag
    /// columns, `marked`; schema version 4), else those where `instr` finds
    /// one. Only for a needle of printable ASCII (folded: ASCII lowercased).
    private static func textTest(_ match: TagMatch, columns: [String], marked: Bool) -> (clause: String, values: [SQLiteValue])? {
        guard match.operation != .regex, !match.negated, !match.value.isEmpty, match.value.utf8.count <= maxNeedleBytes,
              match.value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        let pattern = SQLiteValue.text("%" + String(match.value.flatMap { "%_\\".contains($0) ? ["\\", $0] : [$0] }) + "%")
        // Only the characters giving a letter of the needle can take part in a match.
        let letters = Set(match.value.lowercased())
        let relevant = foldedToASCII.filter { !letters.isDisjoint(with: $0.folded) }
        let plain = columns.map { "\($0) LIKE ? ESCAPE '\\'" }
        guard !relevant.isEmpty else {
            return ("(" + plain.joined(separator: " OR ") + ")", columns.map { _ in pattern })
        }
        let spelled = columns.map { column in
            let holds = marked ? "" : "(" + relevant.map { "instr(\(column), '\($0.character)')" }.joined(separator: " OR ") + ") AND "
            return holds + relevant.reduce(column) { "replace(\($0), '\($1.character)', '\($1.folded)')" } + " LIKE ? ESCAPE '\\'"
        }
        let special = (marked ? "folds_to_ascii <> 0 AND " : "") + "(" + spelled.joined(separator: " OR ") + ")"
        return ("(" + plain.joined(separator: " OR ") + " OR (" + special + "))", Array(repeating: pattern, count: 2 * columns.count))
    }

    /// The characters whose Unicode full case folding (`LibraryText.fold`)
    /// holds an ASCII character, with that folding: every such scalar
    /// (SQLiteLibraryStoreTests checks them all).
    static let foldedToASCII: [(character: String, folded: String)] = [
        ("\u{DF}", "ss"), ("\u{149}", "\u{2BC}n"), ("\u{17F}", "s"), ("\u{1E9A}", "a\u{2BE}"), ("\u{1E9E}", "ss"),
        ("\u{212A}", "k"), ("\u{FB00}", "ff"), ("\u{FB01}", "fi"), ("\u{FB02}", "fl"), ("\u{FB03}", "ffi"),
        ("\u{FB04}", "ffl"), ("\u{FB05}", "st"), ("\u{FB06}", "st"),
    ]

    /// True when one of `song`'s values holds a character of `foldedToASCII`.
    static func foldsToASCII(_ song: LibrarySong) -> Bool {
        song.tags.values.contains { values in
            values.contains { value in
                value.utf8.contains { $0 >= 0xC3 } && value.unicodeScalars.contains { foldingScalars.contains($0) }
            }
        }
    }

    /// The SQL condition of a row holding a character of `foldedToASCII`
    /// (schema version 4 computes the mark of existing rows with it).
    static var foldsToASCIICondition: String {
        LibraryTag.allCases.map(SQLiteLibrarySchema.column).flatMap { column in
            foldedToASCII.map { "instr(\(column), '\($0.character)') > 0" }
        }.joined(separator: " OR ")
    }

    private static let foldingScalars = Set(foldedToASCII.flatMap(\.character.unicodeScalars))

    /// A longer needle is tested in Swift only (SQLite limits LIKE patterns).
    private static let maxNeedleBytes = 1_000

    /// A column equal to the bound value, or holding several values (one of
    /// which may equal it: Swift decides). Binds two values.
    private static func holds(_ column: String) -> String {
        "(\(column) = ? OR (instr(\(column), char(31)) > 0 AND instr(\(column), ?) > 0))"
    }

    /// A row holding several values of `column`, one of which may be the
    /// bound value: looked up on the column's partial index of such rows
    /// (SQLiteLibrarySchema version 3), named, since SQLite's planner
    /// otherwise scans a whole index that holds the column (100,000 entries
    /// for an exact `find albumartist`: 22 ms). Binds one value. For the
    /// columns of `SQLiteLibrarySchema.indexedTags` only.
    static func several(_ column: String) -> String {
        "id IN (SELECT id FROM song INDEXED BY song_\(column)_several WHERE instr(\(column), char(31)) > 0 AND instr(\(column), ?) > 0)"
    }

    /// An `==` SQL's byte comparison decides exactly (a non-empty value: an
    /// empty one also matches songs without the tag).
    private static func isExact(_ match: TagMatch) -> Bool {
        match.operation == .equals && !match.negated && !match.foldCase && !match.value.isEmpty
    }

    /// Paths inside `directory` are those ≥ "directory/" and < "directory0"
    /// ("0" follows "/" in byte order).
    static func pathRange(under directory: String) -> (from: String, to: String) {
        (directory + "/", directory + "0")
    }
}
