// NaturalOrder — specs/library.md §Order
//
// Natural order of names and paths: "track2" before "track10", without case.
// One rule for the library and for harmonia-play's folder inputs (specs/inputs.md §Folders).

/// Natural order: runs of ASCII digits compare by their number, other runs
/// without case; a tie ("01" and "1", "A" and "a") falls back to the plain
/// text so the order is total. Pure functions; any thread.
public enum NaturalOrder {
    /// True when name `a` comes before name `b`.
    public static func less(_ a: String, _ b: String) -> Bool {
        NaturalKey(a) < NaturalKey(b)
    }

    /// True when path `a` comes before path `b`, compared folder by folder
    /// ("A/B" before "A b", and a folder before everything inside it), so a
    /// sorted list of paths is in tree order.
    public static func pathLess(_ a: String, _ b: String) -> Bool {
        NaturalPathKey(a) < NaturalPathKey(b)
    }

    /// `names` in natural order; each name is split into runs once.
    public static func sorted(_ names: [String]) -> [String] {
        names.map(NaturalKey.init).sorted(by: <).map(\.text)
    }

    /// `items` sorted by the natural order of `name(item)`, each name split
    /// once (`order(ofNames:)`). Fewer than two items are returned as they
    /// are: this generic is not specialized across modules, and its maps
    /// cost a listing about 7,000 instructions per call even for an empty
    /// folder list.
    public static func sorted<T>(_ items: [T], byName name: (T) -> String) -> [T] {
        guard items.count > 1 else { return items }
        return order(ofNames: items.map(name)).map { items[$0] }
    }

    /// The indices of `names` in their natural order. Not generic, so the
    /// keys are built and sorted in code specialized here: a generic sort
    /// of (key, item) pairs, called from another module, looked up type
    /// metadata at run time for every comparison (20 % of a `list file`).
    public static func order(ofNames names: [String]) -> [Int] {
        let keys = names.map(NaturalKey.init)
        return keys.indices.sorted { keys[$0] < keys[$1] }
    }

    /// `items` sorted by the natural order of `path(item)`, folder by folder.
    public static func sorted<T>(_ items: [T], byPath path: (T) -> String) -> [T] {
        items.map { (NaturalPathKey(path($0)), $0) }.sorted { $0.0 < $1.0 }.map { $0.1 }
    }
}

/// A path split at `/` into natural keys, for tree order.
struct NaturalPathKey: Comparable {
    let components: [NaturalKey]

    init(_ path: String) {
        components = path.split(separator: "/", omittingEmptySubsequences: false).map { NaturalKey(String($0)) }
    }

    static func < (x: Self, y: Self) -> Bool {
        for (p, q) in zip(x.components, y.components) where p != q {
            return p < q
        }
        return x.components.count < y.components.count
    }

    static func == (x: Self, y: Self) -> Bool { x.components == y.components }
}

/// A name split into runs of ASCII digits and of everything else (the latter
/// lowercased), with the name kept for ties.
struct NaturalKey: Comparable {
    let text: String
    private let runs: [Run]

    private struct Run {
        let digits: Bool
        /// Digit runs: without leading zeros. Other runs: lowercased.
        let folded: Substring.UTF8View
    }

    init(_ text: String) {
        self.text = text
        var runs: [Run] = []
        let lowered = LibraryText.asciiLowercased(text) ?? text.lowercased()
        var start = lowered.utf8.startIndex
        while start < lowered.utf8.endIndex {
            let digits = Self.isDigit(lowered.utf8[start])
            let end = lowered.utf8[start...].firstIndex { Self.isDigit($0) != digits } ?? lowered.utf8.endIndex
            var run = lowered[start..<end].utf8
            if digits { run = run.drop { $0 == UInt8(ascii: "0") } }
            runs.append(Run(digits: digits, folded: run))
            start = end
        }
        self.runs = runs
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    static func < (x: Self, y: Self) -> Bool {
        for (p, q) in zip(x.runs, y.runs) {
            if p.digits && q.digits, p.folded.count != q.folded.count { return p.folded.count < q.folded.count }
            // Same-length digit runs and text runs compare by their bytes
            // (UTF-8 order is code-point order).
            if !p.folded.elementsEqual(q.folded) { return p.folded.lexicographicallyPrecedes(q.folded) }
        }
        if x.runs.count != y.runs.count { return x.runs.count < y.runs.count }
        return x.text.utf8.lexicographicallyPrecedes(y.text.utf8)
    }

    /// Equal bytes (not canonical equivalence): consistent with `<`.
    static func == (x: Self, y: Self) -> Bool { x.text.utf8.elementsEqual(y.text.utf8) }
}
