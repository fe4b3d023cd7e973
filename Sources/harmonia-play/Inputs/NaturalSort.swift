// NaturalSort — specs/inputs.md §Folders
//
// Natural sort order for folder listings: "track2" before "track10", case-insensitive.

enum NaturalSort {
    /// True when `a` comes before `b`: runs of ASCII digits compare by their
    /// number, other runs case-insensitively; a tie (`"01"` and `"1"`, `"A"` and
    /// `"a"`) falls back to the plain text so the order is total.
    static func less(_ a: String, _ b: String) -> Bool {
        Key(a) < Key(b)
    }

    /// `names` in natural order. Each name is split into runs once (not once
    /// per comparison, as `sorted(by: less)` would): a folder of thousands of
    /// files sorts in a few milliseconds.
    static func sorted(_ names: [String]) -> [String] {
        names.map(Key.init).sorted(by: <).map(\.text)
    }

    /// A name split into runs of ASCII digits and of everything else, the
    /// latter lowercased, with the name kept for ties.
    private struct Key: Comparable {
        let text: String
        let runs: [Run]

        struct Run {
            let digits: Bool
            /// Digit runs: without leading zeros. Other runs: lowercased.
            let folded: Substring.UTF8View
        }

        init(_ text: String) {
            self.text = text
            var runs: [Run] = []
            let lowered = text.lowercased()
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

        static func < (x: Key, y: Key) -> Bool {
            for (p, q) in zip(x.runs, y.runs) {
                if p.digits && q.digits, p.folded.count != q.folded.count { return p.folded.count < q.folded.count }
                // Same-length digit runs and text runs both compare by their
                // bytes (UTF-8 order is code-point order).
                if !p.folded.elementsEqual(q.folded) { return p.folded.lexicographicallyPrecedes(q.folded) }
            }
            if x.runs.count != y.runs.count { return x.runs.count < y.runs.count }
            return x.text < y.text
        }

        static func == (x: Key, y: Key) -> Bool { x.text == y.text }
    }
}
