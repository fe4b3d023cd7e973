// NaturalSort — specs/inputs.md §Folders
//
// Natural sort order for folder listings: "track2" before "track10", case-insensitive.
import Foundation

enum NaturalSort {
    /// True when `a` comes before `b`: runs of ASCII digits compare by their
    /// number, other runs case-insensitively; a tie (`"01"` and `"1"`, `"A"` and
    /// `"a"`) falls back to the plain text so the order is total.
    static func less(_ a: String, _ b: String) -> Bool {
        let x = chunks(a), y = chunks(b)
        for (p, q) in zip(x, y) {
            if p.digits && q.digits {
                let m = p.text.drop { $0 == "0" }, n = q.text.drop { $0 == "0" }
                if m.count != n.count { return m.count < n.count }
                if m != n { return m < n }
            } else {
                let m = p.text.lowercased(), n = q.text.lowercased()
                if m != n { return m < n }
            }
        }
        if x.count != y.count { return x.count < y.count }
        return a < b
    }

    private struct Chunk {
        let digits: Bool
        let text: Substring
    }

    private static func chunks(_ s: String) -> [Chunk] {
        var result: [Chunk] = []
        var start = s.startIndex
        while start < s.endIndex {
            let digits = s[start].isASCIIDigit
            let end = s[start...].firstIndex { $0.isASCIIDigit != digits } ?? s.endIndex
            result.append(Chunk(digits: digits, text: s[start..<end]))
            start = end
        }
        return result
    }
}

private extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
