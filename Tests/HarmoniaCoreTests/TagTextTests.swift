// TagText: specs/models.md §TagText.
@testable import HarmoniaCore
import Testing

@Suite("TagText")
struct TagTextTests {
    @Test("cleaned: control characters become spaces, spaces and newlines trimmed, empty is no value")
    func rules() {
        #expect(TagText.cleaned("  Abbey Road\n") == "Abbey Road")
        #expect(TagText.cleaned("A\tB\u{7F}C") == "A B C")
        #expect(TagText.cleaned("\u{2028}Título\u{85}") == "Título")
        #expect(TagText.cleaned(" \r\n ") == nil)
        #expect(TagText.cleaned("") == nil)
        #expect(TagText.cleaned(nil as String?) == nil)
        #expect(TagText.cleaned(["", " x ", "y"]) == ["x", "y"])
    }

    /// The byte check that lets most values through unchanged must agree with
    /// the scalar-by-scalar rule on every string, including those where
    /// characters and scalars differ: combining marks after a space, a
    /// prepended mark before a space, CR LF, and the newlines beyond ASCII.
    @Test("the fast path for clean text gives what the full rule gives, on every string of up to 4 pieces")
    func fastPathAgreesWithTheRule() {
        let pieces = ["a", "1", " ", "\t", "\n", "\r\n", "\u{7F}", "\u{80}", "\u{85}", "\u{A0}", "\u{2028}",
                      "\u{2029}", "\u{301}", "\u{600}", "ñ", "東", "🎵", "\u{200D}"]
        var texts = [""]
        var last = [""]
        for _ in 1...4 {
            last = last.flatMap { prefix in pieces.map { prefix + $0 } }
            texts += last
        }
        var fast = 0
        for text in texts {
            let expected = TagText.cleanedScalarByScalar(text)
            #expect(TagText.cleaned(text) == expected, "\(text.unicodeScalars.map(\.value))")
            if TagText.isClean(text) {
                fast += 1
                #expect(expected == text, "\(text.unicodeScalars.map(\.value))")
            }
        }
        #expect(texts.count == 1 + 18 + 324 + 5_832 + 104_976 && fast > 10_000)
    }
}
