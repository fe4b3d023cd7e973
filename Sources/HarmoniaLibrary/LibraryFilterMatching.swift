// Filter evaluation — specs/library.md §Filters
import Foundation
import HarmoniaCore

/// The longest regular expression a filter may carry, in UTF-8 bytes.
public let maxFilterPatternBytes = 1024

extension LibraryFilter {
    /// True when `song` matches. A filter with a bad regular expression
    /// matches nothing: call `validate()` (or build a `LibraryFilterMatcher`)
    /// to get the error. Compiles the filter on every call: to test many
    /// songs, build one `LibraryFilterMatcher`.
    public func matches(_ song: LibrarySong) -> Bool {
        (try? LibraryFilterMatcher(self))?.matches(song) ?? false
    }

    /// Checks every regular expression in the filter.
    /// - Throws: `invalidArgument` for a pattern over `maxFilterPatternBytes`
    ///   or one NSRegularExpression rejects.
    public func validate() throws(CoreError) {
        _ = try LibraryFilterMatcher(self)
    }
}

/// A `LibraryFilter` with its values folded and regexes compiled once.
/// Immutable; any thread.
///
/// Semantics (MPD 0.23's): a tag the song lacks has the value "" for `==` and
/// `!=`, and otherwise fails (`!=`/`!~` then succeed); AlbumArtist falls back
/// to Artist when absent; `foldCase` compares after Unicode full case folding
/// (ß = ss), never folding accents (o ≠ ó) and comparing Characters
/// (canonically equivalent spellings are equal); an exact `==` without
/// `foldCase` compares bytes, as MPD's `find` does.
public struct LibraryFilterMatcher: Sendable {
    private let root: Node

    /// - Throws: `invalidArgument` for a bad or oversized regular expression.
    public init(_ filter: LibraryFilter) throws(CoreError) {
        root = try Node(filter)
    }

    /// True when `song` matches the filter.
    public func matches(_ song: LibrarySong) -> Bool {
        root.matches(song)
    }

    private indirect enum Node: Sendable {
        case tag(LibraryTag, TextTest)
        case anyTag(TextTest)
        case file(TextTest)
        case base(String)
        case modifiedSince(Int64)
        case audioFormat(TextTest)
        case not(Node)
        case and([Node])

        init(_ filter: LibraryFilter) throws(CoreError) {
            switch filter {
            case .tag(let tag, let match): self = .tag(tag, try TextTest(match))
            case .anyTag(let match): self = .anyTag(try TextTest(match))
            case .file(let match): self = .file(try TextTest(match))
            case .base(let directory): self = .base(directory)
            case .modifiedSince(let time): self = .modifiedSince(time)
            case .audioFormat(let match): self = .audioFormat(try TextTest(match))
            case .not(let inner): self = .not(try Node(inner))
            case .and(let parts):
                var nodes: [Node] = []
                for part in parts { nodes.append(try Node(part)) }
                self = .and(nodes)
            }
        }

        func matches(_ song: LibrarySong) -> Bool {
            switch self {
            case .tag(let tag, let test): test.matches(song, tag)
            case .anyTag(let test): song.tags.values.contains { $0.contains(where: test.matchesIgnoringNegation) } != test.negated
            case .file(let test): test.matches(song.path)
            case .base(let directory): LibraryPath.isInside(song.path, directory)
            case .modifiedSince(let time): song.modified >= time
            case .audioFormat(let test): test.matches(optional: song.format)
            case .not(let inner): !inner.matches(song)
            case .and(let nodes): nodes.allSatisfy { $0.matches(song) }
            }
        }
    }
}

/// One `TagMatch`, ready: the needle folded, the regex compiled.
private struct TextTest: Sendable {
    let operation: TagMatch.Operation
    let needle: String
    let negated: Bool
    let foldCase: Bool
    let regex: CompiledRegex?

    init(_ match: TagMatch) throws(CoreError) {
        operation = match.operation
        negated = match.negated
        foldCase = match.foldCase
        needle = match.foldCase ? LibraryText.fold(match.value) : match.value
        regex = match.operation == .regex ? try CompiledRegex(match.value, foldCase: match.foldCase) : nil
    }

    /// MPD's tag test: true when any of the song's values of `tag` passes;
    /// a song without the tag passes only an empty needle, except that
    /// AlbumArtist then falls back to the Artist values. Negation applies to
    /// the whole (`!=` holds when no value equals).
    func matches(_ song: LibrarySong, _ tag: LibraryTag) -> Bool {
        if let values = song.tags[tag] { return values.contains(where: matchesIgnoringNegation) != negated }
        if needle.isEmpty { return !negated }
        if tag == .albumArtist, let artists = song.tags[.artist] { return artists.contains(where: matchesIgnoringNegation) != negated }
        return negated
    }

    /// A value that may be absent (MPD: an absent tag equals only "").
    func matches(optional value: String?) -> Bool {
        guard let value else { return needle.isEmpty != negated }
        return matches(value)
    }

    func matches(_ value: String) -> Bool {
        matchesIgnoringNegation(value) != negated
    }

    func matchesIgnoringNegation(_ value: String) -> Bool {
        if let regex { return regex.matches(value) }
        let text = foldCase ? LibraryText.fold(value) : value
        switch operation {
        // Exact: bytes, as MPD's `find` (and SQL's `=`); folded: Characters.
        case .equals: return foldCase ? text == needle : text.utf8.elementsEqual(needle.utf8)
        case .contains: return LibraryText.contains(text, needle)
        case .startsWith: return text.hasPrefix(needle)
        case .regex: return false  // not reached: regex is set for .regex
        }
    }
}

/// An NSRegularExpression; immutable after init, and documented thread-safe
/// for matching, hence `@unchecked Sendable`.
private final class CompiledRegex: @unchecked Sendable {
    private let expression: NSRegularExpression

    init(_ pattern: String, foldCase: Bool) throws(CoreError) {
        guard pattern.utf8.count <= maxFilterPatternBytes else {
            throw .invalidArgument("regular expression too long (\(pattern.utf8.count) bytes; at most \(maxFilterPatternBytes))")
        }
        do {
            expression = try NSRegularExpression(pattern: pattern, options: foldCase ? [.caseInsensitive] : [])
        } catch {
            throw .invalidArgument("bad regular expression '\(pattern)': check its brackets and escapes")
        }
    }

    /// True when the pattern matches anywhere in `value` (not anchored, as MPD's PCRE).
    func matches(_ value: String) -> Bool {
        expression.firstMatch(in: value, range: NSRange(location: 0, length: value.utf16.count)) != nil
    }
}

/// Text comparison rules of the library.
public enum LibraryText {
    /// `text` with Unicode full case folding (Foundation's `.caseInsensitive`
    /// folding: "Straße" → "strasse", "ΣΊΣΥΦΟΣ" → "σίσυφοσ"), accents kept:
    /// what MPD 0.23 gets from ICU's `u_strFoldCase`.
    public static func fold(_ text: String) -> String {
        if let lowered = asciiLowercased(text) { return lowered }
        return text.folding(options: [.caseInsensitive], locale: nil)
    }

    /// `text` lowercased when it is all printable ASCII (where case folding
    /// is lowercasing, and a Character is a byte); nil otherwise.
    static func asciiLowercased(_ text: String) -> String? {
        var text = text
        return text.withUTF8 { bytes -> String? in
            guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
            guard bytes.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return String(decoding: bytes, as: UTF8.self) }
            return String(unsafeUninitializedCapacity: bytes.count) { out in
                for (i, byte) in bytes.enumerated() { out[i] = byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte }
                return bytes.count
            }
        }
    }

    /// True when `text` contains `needle`, compared by Characters; on bytes
    /// when both are printable ASCII (the same answer, without the walk).
    static func contains(_ text: String, _ needle: String) -> Bool {
        if needle.isEmpty { return true }
        var text = text, needle = needle
        let answer: Bool? = text.withUTF8 { t in
            needle.withUTF8 { n in
                guard t.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }), n.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
                guard n.count <= t.count else { return false }
                let first = n[0]
                var i = 0
                while i <= t.count - n.count {
                    if t[i] == first && memcmp(t.baseAddress! + i, n.baseAddress!, n.count) == 0 { return true }
                    i += 1
                }
                return false
            }
        }
        return answer ?? (text.firstRange(of: needle) != nil)
    }

    /// True when `a`'s UTF-8 bytes sort before `b`'s: the order of MPD's
    /// `std::map<std::string>` (used for `list` and `count group`).
    public static func byteLess(_ a: String, _ b: String) -> Bool {
        a.utf8.lexicographicallyPrecedes(b.utf8)
    }
}

extension LibrarySong {
    /// The tag's values as MPD's `list` and `count … group` see them
    /// (VisitTagWithFallbackOrEmpty): AlbumArtist falls back to Artist when
    /// the song has none; a song with neither has the one value "".
    public func values(of tag: LibraryTag) -> [String] {
        if let values = tags[tag], !values.isEmpty { return values }
        if tag == .albumArtist, let artists = tags[.artist], !artists.isEmpty { return artists }
        return [""]
    }
}
