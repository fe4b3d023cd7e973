// Filters — specs/mpd-protocol.md §Filters
//
// MPD's filter expressions (0.21+) and its older `TAG VALUE` pairs
// (src/song/Filter.cxx) become a `LibraryFilter`. Messages and quirks are
// MPD 0.23.12's (every error is ACK ARG); nesting is bounded.
import HarmoniaLibrary

/// Parses the filter arguments of `find`, `search`, `count`, `list`, … into
/// a `LibraryFilter`. Pure; safe on any input (bounded depth, quoted values
/// at most 4095 bytes as MPD).
public enum MPDFilterParser {
    /// The arguments (after any `sort`/`window`/`group` the command strips):
    /// each is an expression `(…)` or a `TAG VALUE` pair. `foldCase`: the
    /// command is a `search` (case folded; old-style pairs match substrings).
    /// - Throws: ACK ARG with MPD's message (`Incorrect number of filter
    ///   arguments`, `Unknown filter type`, `Word expected`, …).
    public static func parse(_ arguments: [String], foldCase: Bool) throws(MPDError) -> LibraryFilter {
        guard !arguments.isEmpty else { throw failure("Incorrect number of filter arguments") }
        var items: [LibraryFilter] = []
        var i = 0
        while i < arguments.count {
            if arguments[i].utf8.first == UInt8(ascii: "(") {
                items.append(try parseExpression(arguments[i], foldCase: foldCase))
                i += 1
                continue
            }
            guard arguments.count - i >= 2 else { throw failure("Incorrect number of filter arguments") }
            items.append(try parsePair(tag: arguments[i], value: arguments[i + 1], foldCase: foldCase))
            i += 2
        }
        return items.count == 1 ? items[0] : .and(items)
    }

    /// One expression argument, `(…)` with nothing after it.
    public static func parseExpression(_ text: String, foldCase: Bool) throws(MPDError) -> LibraryFilter {
        var scanner = Scanner(Array(text.utf8))
        guard scanner.peek == UInt8(ascii: "(") else { throw failure("'(' expected") }
        let filter = try scanner.expression(foldCase: foldCase, depth: 1)
        guard scanner.atEnd else { throw failure("Unparsed garbage after expression") }
        return filter
    }

    /// An old-style pair: `find` matches the whole value exactly, `search`
    /// (foldCase) a substring without case (MPD ≤ 0.20 semantics).
    static func parsePair(tag: String, value: String, foldCase: Bool) throws(MPDError) -> LibraryFilter {
        let match = TagMatch(foldCase ? .contains : .equals, value, foldCase: foldCase)
        switch FilterType(name: tag) {
        case nil: throw failure("Unknown filter type")
        case .base:
            guard isSafeLocalURI(value) else { throw failure("Bad URI") }
            return .base(value)
        case .modifiedSince: return .modifiedSince(try parseTimeStamp(value))
        case .file: return .file(match)
        case .any: return .anyTag(match)
        case .audioFormat: return .audioFormat(match)
        case .tag(let type): return tagFilter(type, match)
        }
    }

    /// What a filter names.
    enum FilterType: Equatable {
        case tag(MPDTagType), file, any, base, modifiedSince, audioFormat

        /// MPD's locate_parse_type: `file`/`filename`, `any`, `AudioFormat`
        /// and tag names without case; `base` and `modified-since` exactly.
        init?(name: String) {
            if asciiCaseEqual(name, "file") || asciiCaseEqual(name, "filename") { self = .file }
            else if asciiCaseEqual(name, "any") { self = .any }
            else if name == "base" { self = .base }
            else if name == "modified-since" { self = .modifiedSince }
            else if asciiCaseEqual(name, "AudioFormat") { self = .audioFormat }
            else if let tag = MPDTagType(name: name) { self = .tag(tag) }
            else { return nil }
        }
    }

    /// A tag the library indexes filters on it; one it does not is absent
    /// from every song, and MPD's TagSongFilter matches an absent tag when
    /// the filter's value is empty (whatever the operator, negation applied):
    /// the filter is constant.
    static func tagFilter(_ type: MPDTagType, _ match: TagMatch) -> LibraryFilter {
        if let tag = type.libraryTag { return .tag(tag, match) }
        return match.value.isEmpty != match.negated ? .and([]) : .not(.and([]))
    }

    static func failure(_ message: String) -> MPDError { MPDError(.arg, message) }

    /// MPD's uri_safe_local: relative, no `.`/`..` segment, no empty segment.
    /// Checked byte by byte (the segments are ASCII-delimited): every
    /// database command names a path, and splitting it into Substrings cost
    /// 2 % of an album's `lsinfo`.
    static func isSafeLocalURI(_ uri: String) -> Bool {
        var dots = 0          // the segment so far is this many dots and nothing else
        var length = 0        // bytes in the segment so far
        for byte in uri.utf8 {
            if byte == UInt8(ascii: "/") {
                guard length > 0, !(dots == length && dots <= 2) else { return false }
                dots = 0
                length = 0
            } else {
                if byte == UInt8(ascii: ".") && dots == length { dots += 1 }
                length += 1
            }
        }
        return uri.isEmpty || (length > 0 && !(dots == length && dots <= 2))
    }

    /// MPD's ParseTimeStamp: ISO 8601 (`MPDTimeStamp.parse`), else whole
    /// seconds since 1970; else the ISO 8601 error.
    static func parseTimeStamp(_ text: String) throws(MPDError) -> Int64 {
        do {
            return try MPDTimeStamp.parse(text)
        } catch {
            let digits = text.utf8
            if !digits.isEmpty, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int64(text) { return value }
            throw error
        }
    }
}

/// A cursor over an expression's bytes (MPD's `const char *&s`).
private struct Scanner {
    let bytes: [UInt8]
    var i = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var peek: UInt8? { i < bytes.count ? bytes[i] : nil }
    func peek(_ offset: Int) -> UInt8? { i + offset < bytes.count ? bytes[i + offset] : nil }
    var atEnd: Bool { i >= bytes.count }

    /// MPD's StripLeft: skips bytes 0x01…0x20.
    mutating func skipBlanks() {
        while i < bytes.count && bytes[i] > 0 && bytes[i] <= 0x20 { i += 1 }
    }

    /// `(` … `)`; the cursor is on the `(`. The forms and their quirks are
    /// MPD's: `((A) AND (B) …)` (an AND's operands are parenthesised; after a
    /// nested AND's `)` the blanks are not skipped, so `(((A) AND (B)) AND (C))`
    /// fails with `Word expected` as in MPD), `(!(A))`, `(TAG OP 'VALUE')`,
    /// `(base 'DIR')`, `(modified-since 'TIME')`, `(AudioFormat ==|=~ 'F')`.
    mutating func expression(foldCase: Bool, depth: Int) throws(MPDError) -> LibraryFilter {
        guard depth <= MPDProtocol.maxFilterDepth else { throw MPDFilterParser.failure("Filter nested too deeply") }
        i += 1
        skipBlanks()
        if peek == UInt8(ascii: "(") {
            let first = try expression(foldCase: foldCase, depth: depth + 1)
            if peek == UInt8(ascii: ")") {
                i += 1
                return first
            }
            guard try word() == "AND" else { throw MPDFilterParser.failure("'AND' expected") }
            var items = [first]
            while true {
                // As MPD, the operand's first byte is taken for its "(" unchecked.
                items.append(try expression(foldCase: foldCase, depth: depth + 1))
                if peek == UInt8(ascii: ")") {
                    i += 1
                    return .and(items)
                }
                guard try word() == "AND" else { throw MPDFilterParser.failure("'AND' expected") }
            }
        }
        if peek == UInt8(ascii: "!") {
            i += 1
            skipBlanks()
            guard peek == UInt8(ascii: "(") else { throw MPDFilterParser.failure("'(' expected") }
            let inner = try expression(foldCase: foldCase, depth: depth + 1)
            try closeParenthesis()
            return .not(inner)
        }
        let name = try word()
        guard let type = MPDFilterParser.FilterType(name: name) else {
            throw MPDFilterParser.failure("Unknown filter type: \(name)")
        }
        switch type {
        case .modifiedSince:
            let value = try quoted()
            try closeParenthesis()
            return .modifiedSince(try MPDFilterParser.parseTimeStamp(value))
        case .base:
            let value = try quoted()
            try closeParenthesis()
            return .base(value)
        case .audioFormat:
            let mask: Bool
            if peek == UInt8(ascii: "=") && peek(1) == UInt8(ascii: "=") { mask = false }
            else if peek == UInt8(ascii: "=") && peek(1) == UInt8(ascii: "~") { mask = true }
            else { throw MPDFilterParser.failure("'==' or '=~' expected") }
            i += 2
            skipBlanks()
            let format = try MPDAudioFormat.parse(try quoted(), mask: mask)
            try closeParenthesis()
            return .audioFormat(format.match)
        case .tag, .file, .any:
            let match = try stringMatch(foldCase: foldCase)
            try closeParenthesis()
            switch type {
            case .file: return .file(match)
            case .any: return .anyTag(match)
            case .tag(let tag): return MPDFilterParser.tagFilter(tag, match)
            default: fatalError("unreachable")
            }
        }
    }

    /// `)` then blanks: `')' expected`.
    mutating func closeParenthesis() throws(MPDError) {
        guard peek == UInt8(ascii: ")") else { throw MPDFilterParser.failure("')' expected") }
        i += 1
        skipBlanks()
    }

    /// `contains 'V'`, `!contains 'V'`, `=~ 'RE'`, `!~ 'RE'`, `== 'V'`, `!= 'V'`.
    mutating func stringMatch(foldCase: Bool) throws(MPDError) -> TagMatch {
        if hasPrefixIgnoringCase("contains ") || hasPrefixIgnoringCase("!contains ") {
            let negated = bytes[i] == UInt8(ascii: "!")
            i += negated ? 10 : 9
            skipBlanks()
            return TagMatch(.contains, try quoted(), negated: negated, foldCase: foldCase)
        }
        if (peek == UInt8(ascii: "!") || peek == UInt8(ascii: "=")) && peek(1) == UInt8(ascii: "~") {
            let negated = peek == UInt8(ascii: "!")
            i += 2
            skipBlanks()
            return TagMatch(.regex, try quoted(), negated: negated, foldCase: foldCase)
        }
        let negated: Bool
        if peek == UInt8(ascii: "!") && peek(1) == UInt8(ascii: "=") { negated = true }
        else if peek == UInt8(ascii: "=") && peek(1) == UInt8(ascii: "=") { negated = false }
        else { throw MPDFilterParser.failure("'==' or '!=' expected") }
        i += 2
        skipBlanks()
        return TagMatch(.equals, try quoted(), negated: negated, foldCase: foldCase)
    }

    func hasPrefixIgnoringCase(_ prefix: String) -> Bool {
        let p = Array(prefix.utf8)
        guard bytes.count - i >= p.count else { return false }
        for k in 0..<p.count where asciiLower(bytes[i + k]) != p[k] { return false }
        return true
    }

    /// Letters, `_` and `-`, then blanks: `Word expected` when there is none.
    mutating func word() throws(MPDError) -> String {
        let begin = i
        while let c = peek, ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7A) || c == 0x5F || c == 0x2D { i += 1 }
        guard i > begin else { throw MPDFilterParser.failure("Word expected") }
        let text = String(decoding: bytes[begin..<i], as: UTF8.self)
        skipBlanks()
        return text
    }

    /// `'…'` or `"…"`, `\` taking the next byte as it is, then blanks:
    /// `Quoted string expected`, `Closing quote not found`, and `Quoted value
    /// is too long` at 4096 bytes (MPD's buffer).
    mutating func quoted() throws(MPDError) -> String {
        guard let quote = peek, quote == 0x22 || quote == 0x27 else {
            throw MPDFilterParser.failure("Quoted string expected")
        }
        i += 1
        var value: [UInt8] = []
        while peek != quote {
            if peek == 0x5C { i += 1 }
            guard let c = peek else { throw MPDFilterParser.failure("Closing quote not found") }
            value.append(c)
            i += 1
            if value.count >= 4096 { throw MPDFilterParser.failure("Quoted value is too long") }
        }
        i += 1
        skipBlanks()
        return String(decoding: value, as: UTF8.self)
    }
}
