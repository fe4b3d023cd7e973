// The status line's layout and the key parser, without a terminal.
import Testing
@testable import harmonia_play

@Suite("status line and keys (units)")
struct StatusLineTests {
    let line = StatusLine(title: "A Rather Long Title", artist: "Someone", elapsed: 75, total: 300,
                          volumePercent: 80, muted: false, state: "playing", position: (2, 3))

    @Test("wide: everything, the bar a quarter full")
    func wide() {
        #expect(line.render(width: 120)
            == "A Rather Long Title — Someone  [#####---------------]  1:15 / 5:00  vol 80%  playing  2/3")
    }

    @Test("narrower: the title is cut first, then the bar narrows and goes; never more than width - 1")
    func narrow() {
        for width in 1...120 {
            #expect(line.render(width: width).count <= max(width - 1, 1), "\(width)")
        }
        #expect(line.render(width: 80) == "A Rather Long Titl…  [#####---------------]  1:15 / 5:00  vol 80%  playing  2/3")
        #expect(line.render(width: 60) == "A Rather Lo…  [#------]  1:15 / 5:00  vol 80%  playing  2/3")
        #expect(line.render(width: 45) == "A Rathe…  1:15 / 5:00  vol 80%  playing  2/3")
        #expect(line.render(width: 30) == "1:15 / 5:00  vol 80%  playing")
    }

    @Test("wide characters count two columns")
    func wideCharacters() {
        var cjk = line
        cjk.title = "日本語のとても長い曲名です"  // 13 characters, 26 columns
        cjk.artist = nil
        for width in 40...120 {
            #expect(StatusLine.columns(cjk.render(width: width)) <= width - 1, "\(width)")
        }
        #expect(cjk.render(width: 84) == "日本語のとても長い曲名…  [#####---------------]  1:15 / 5:00  vol 80%  playing  2/3")
    }

    @Test("muted, unknown length, no position")
    func variants() {
        var stream = line
        stream.total = nil
        stream.muted = true
        stream.position = nil
        stream.artist = nil
        #expect(stream.render(width: 100) == "A Rather Long Title  1:15  muted  playing")
    }

    @Test("keys: characters, both arrow encodings, modifiers, Alt+key, split reads, junk dropped")
    func keys() {
        var parser = KeyParser()
        #expect(parser.feed(Array(" q+".utf8)) == [.character(" "), .character("q"), .character("+")])
        #expect(parser.feed([0x1B, 0x5B, 0x41, 0x1B, 0x5B, 0x42, 0x1B, 0x5B, 0x43, 0x1B, 0x5B, 0x44]) == [.up, .down, .right, .left])
        #expect(parser.feed([0x1B, 0x4F, 0x41, 0x1B, 0x4F, 0x44]) == [.up, .left])
        #expect(parser.feed(Array("\u{1B}[1;5C".utf8)) == [.right])
        #expect(parser.feed(Array("\u{1B}[5~".utf8)) == [])  // page up: not ours
        #expect(parser.feed([0x1B]) == [])
        #expect(parser.feed([0x5B]) == [])
        #expect(parser.feed([0x43]) == [.right])  // one sequence over three reads
        #expect(parser.feed(Array("\u{1B}m".utf8)) == [.character("m")])
        #expect(parser.feed([0x03, 0x7F, 0xC3, 0xA9, 0x0A]) == [])
        #expect(parser.feed(Array("n".utf8)) == [.character("n")])
    }
}
