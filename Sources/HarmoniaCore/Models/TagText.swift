// TagText — specs/models.md §TagText

/// The one rule for tag text that leaves a file for a queue entry or the
/// library: control characters (which would break a line protocol) become
/// spaces, surrounding white space goes, and a value left empty is no value.
/// `Track` holds its tags so and the library stores them so, whichever
/// source they came from (a file, a library row, a playlist, a UPnP control
/// point), so every frontend shows the same values. Pure; any thread.
public enum TagText {
    /// `text` cleaned; nil when nothing is left (or `text` is nil).
    public static func cleaned(_ text: String?) -> String? {
        guard let text else { return nil }
        return isClean(text) ? text : cleanedScalarByScalar(text)
    }

    /// `cleaned` for any text: control characters mapped, then whole
    /// spaces and newlines trimmed from both ends.
    static func cleanedScalarByScalar(_ text: String) -> String? {
        let scalars = text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? Unicode.Scalar(UInt8(0x20)) : $0 }
        let spaced = String(String.UnicodeScalarView(scalars))
        let isSpace: (Character) -> Bool = { $0 == " " || $0.isNewline }
        guard let first = spaced.firstIndex(where: { !isSpace($0) }), let last = spaced.lastIndex(where: { !isSpace($0) }) else {
            return nil
        }
        return String(spaced[first...last])
    }

    /// Whether `cleaned` would give `text` back unchanged, told from its
    /// UTF-8 bytes (most tag values; a library scan cleans a million):
    /// not empty, no control character, and neither starting nor ending
    /// with a space or a newline (U+0085, U+2028, U+2029; the rest of the
    /// newlines are control characters). A first or last character is a
    /// space or a newline only when its first scalar is one: a control
    /// character stands alone, and a space joins no scalar before it.
    static func isClean(_ text: String) -> Bool {
        let clean = text.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard let first = bytes.first, let last = bytes.last, first != 0x20, last != 0x20 else { return false }
            for byte in bytes where byte < 0x20 || byte == 0x7F { return false }
            let n = bytes.count
            let startsWithNewline = (n >= 2 && bytes[0] == 0xC2 && bytes[1] == 0x85)
                || (n >= 3 && bytes[0] == 0xE2 && bytes[1] == 0x80 && bytes[2] | 1 == 0xA9)
            let endsWithNewline = (n >= 2 && bytes[n - 2] == 0xC2 && bytes[n - 1] == 0x85)
                || (n >= 3 && bytes[n - 3] == 0xE2 && bytes[n - 2] == 0x80 && bytes[n - 1] | 1 == 0xA9)
            if startsWithNewline || endsWithNewline { return false }
            return true
        }
        return clean ?? false  // a string without contiguous UTF-8 (bridged): the long way
    }

    /// Each value cleaned, in order; the values left empty dropped.
    public static func cleaned(_ values: [String]) -> [String] {
        values.compactMap { cleaned($0) }
    }
}
