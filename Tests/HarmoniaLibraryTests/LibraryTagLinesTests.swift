// Tag lines and song records — specs/library.md §Song records
import HarmoniaLibrary
import Testing

@Suite struct LibraryTagLinesTests {
    @Test func recordOrderHoldsEveryTagOnce() {
        #expect(LibraryTag.recordOrder.count == LibraryTag.allCases.count)
        #expect(Set(LibraryTag.recordOrder) == Set(LibraryTag.allCases))
    }

    @Test func linesAreOnePerValueInRecordOrderAndReadBack() throws {
        let tags: [LibraryTag: [String]] = [
            .title: ["Glósóli"], .artist: ["Sigur Rós", "Amiina"], .albumArtist: ["Sigur Rós"], .album: ["Takk…"],
            .track: ["2"], .disc: ["1"], .comment: [""], .musicBrainzWorkID: ["a: b"], .date: ["  2005 "],
        ]
        let lines = try #require(LibraryTagLines(tags))
        #expect(lines.text == """
            Artist: Sigur Rós
            Artist: Amiina
            Album: Takk…
            AlbumArtist: Sigur Rós
            Title: Glósóli
            Track: 2
            Date:   2005 \nComment: \nDisc: 1
            MUSICBRAINZ_WORKID: a: b

            """)
        #expect(lines.tags == tags)
        #expect(LibraryTagLines(text: lines.text) == lines)
        let expectedBits = tags.keys.reduce(UInt32(0)) { $0 | 1 << UInt32($1.index) }
        #expect(lines.presentTags == expectedBits)
        var seen: [(LibraryTag, String)] = []
        lines.forEachLine { seen.append(($0, String(decoding: $1, as: UTF8.self))) }
        #expect(seen.map(\.0) == [.artist, .artist, .album, .albumArtist, .title, .track, .date, .comment, .disc, .musicBrainzWorkID])
        #expect(seen[1].1 == "Amiina")

        let none = try #require(LibraryTagLines([:]))
        #expect(none.text.isEmpty && none.presentTags == 0 && none.tags.isEmpty)
    }

    /// A value a line cannot hold as it is: control bytes and the line separators.
    @Test(arguments: ["a\nb", "a\rb", "tab\there", "\u{1F}", "nel\u{85}", "ls\u{2028}", "ps\u{2029}", "\0"])
    func aValueThatCannotBeALineHasNoLines(value: String) {
        #expect(LibraryTagLines([.title: ["fine"], .artist: [value]]) == nil)
        let record = LibrarySongRecord(LibrarySong(path: "x.flac", modified: 1, size: 2, tags: [.artist: [value]]))
        #expect(record.tags == .values([.artist: [value]]))
    }

    /// Text from a hostile database: anything but lines as `init?(_:)` writes them is refused.
    @Test(arguments: [
        "OK\n", "ACK [5@0] {} x\n", "Artist: a", "Artist: a\nTitle", "Title: t\nArtist: a\n", "artist: a\n",
        "Artist:a\n", "Name: x\n", "Artist: a\tb\n", "Artist: a\u{2028}\n", "\n", "Artist: a\r\n", "AlbumArtistX: a\n",
        "file: x.flac\n",
    ])
    func textThatIsNotLinesIsRefused(text: String) {
        #expect(LibraryTagLines(text: text) == nil)
    }

    @Test func similarNamesAreToldApart() throws {
        let lines = try #require(LibraryTagLines(text: "Album: A\nAlbumArtist: B\nMUSICBRAINZ_ALBUMID: 1\nMUSICBRAINZ_ALBUMARTISTID: 2\n"))
        #expect(lines.tags == [.album: ["A"], .albumArtist: ["B"], .musicBrainzAlbumID: ["1"], .musicBrainzAlbumArtistID: ["2"]])
    }
}
