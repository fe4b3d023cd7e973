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
        let scalars = text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? Unicode.Scalar(UInt8(0x20)) : $0 }
        let spaced = String(String.UnicodeScalarView(scalars))
        let isSpace: (Character) -> Bool = { $0 == " " || $0.isNewline }
        guard let first = spaced.firstIndex(where: { !isSpace($0) }), let last = spaced.lastIndex(where: { !isSpace($0) }) else {
            return nil
        }
        return String(spaced[first...last])
    }

    /// Each value cleaned, in order; the values left empty dropped.
    public static func cleaned(_ values: [String]) -> [String] {
        values.compactMap { cleaned($0) }
    }
}
