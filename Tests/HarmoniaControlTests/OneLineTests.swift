// Console.oneLine: error lines stay one line (specs/inputs.md, Names).
import HarmoniaCore
import Testing
import HarmoniaControl

@Suite("one-line escaping (units)")
struct OneLineTests {
    @Test("control characters, backslashes and bytes that are not UTF-8 are escaped; other text is kept")
    func escapes() {
        #expect(Console.oneLine("plain Música – ok") == "plain Música – ok")
        #expect(Console.oneLine("a\nb\tc\rd") == #"a\nb\tc\rd"#)
        #expect(Console.oneLine("bell\u{07} del\u{7F} c1\u{85}") == #"bell\x07 del\x7f c1\x85"#)
        #expect(Console.oneLine(#"back\slash"#) == #"back\\slash"#)
        #expect(Console.oneLine(PathBytes.string([0x61, 0xFF, 0x0A, 0x62])) == #"a\xff\nb"#)
    }
}
