// Filter evaluation, case folding, natural order, song records — specs/library.md §Filters, §Order, §Scanner
import HarmoniaCore
@testable import HarmoniaLibrary
import Testing

@Suite struct LibraryFilterTests {
    let sigur = SampleLibrary.song("S/a.flac", [.artist: "Sigur Rós", .title: "Glósóli"])
    let strasse = SampleLibrary.song("S/b.flac", [.artist: "straße"])

    @Test func foldCaseIsFullUnicodeFoldingWithoutAccents() {
        #expect(LibraryFilter.tag(.artist, TagMatch(.equals, "SIGUR RÓS", foldCase: true)).matches(sigur))
        #expect(!LibraryFilter.tag(.artist, TagMatch(.equals, "sigur ros", foldCase: true)).matches(sigur))
        #expect(!LibraryFilter.tag(.artist, TagMatch(.contains, "sigur ros", foldCase: true)).matches(sigur))
        #expect(LibraryFilter.tag(.artist, TagMatch(.equals, "STRASSE", foldCase: true)).matches(strasse))
        #expect(LibraryFilter.tag(.artist, TagMatch(.startsWith, "STRAS", foldCase: true)).matches(strasse))
        // Without folding, exact bytes.
        #expect(!LibraryFilter.tag(.artist, TagMatch(.equals, "STRASSE")).matches(strasse))
        #expect(LibraryText.fold("ΣΊΣΥΦΟΣ") == "σίσυφοσ")
        // Canonically equivalent spellings match when folding; "o" never matches "ó".
        let decomposed = SampleLibrary.song("S/c.flac", [.artist: "Sigur Ro\u{301}s"])
        #expect(LibraryFilter.tag(.artist, TagMatch(.equals, "sigur r\u{F3}s", foldCase: true)).matches(decomposed))
        #expect(!LibraryFilter.tag(.artist, TagMatch(.contains, "sigur ro", foldCase: true)).matches(decomposed))
    }

    @Test func negationNotAndAndAbsentTags() {
        #expect(LibraryFilter.tag(.artist, TagMatch(.equals, "Other", negated: true)).matches(sigur))
        #expect(!LibraryFilter.not(.tag(.artist, TagMatch(.equals, "Sigur Rós"))).matches(sigur))
        #expect(LibraryFilter.and([]).matches(sigur))
        #expect(!LibraryFilter.and([.base("S"), .base("T")]).matches(sigur))
        // Absent tag: equals "" only; `!=` of a value matches it.
        #expect(LibraryFilter.tag(.genre, TagMatch(.equals, "")).matches(sigur))
        #expect(!LibraryFilter.tag(.genre, TagMatch(.contains, "x")).matches(sigur))
        #expect(LibraryFilter.tag(.genre, TagMatch(.equals, "Rock", negated: true)).matches(sigur))
        #expect(!LibraryFilter.tag(.genre, TagMatch(.equals, "", negated: true)).matches(sigur))
    }

    @Test func anyBaseModifiedSinceFileAndFormat() {
        #expect(LibraryFilter.anyTag(TagMatch(.contains, "glósóli", foldCase: true)).matches(sigur))
        #expect(!LibraryFilter.anyTag(TagMatch(.contains, "S/a", foldCase: true)).matches(sigur))  // not the path
        #expect(LibraryFilter.anyTag(TagMatch(.equals, "nothing", negated: true)).matches(sigur))
        #expect(LibraryFilter.base("").matches(sigur))
        #expect(LibraryFilter.base("S").matches(sigur))
        #expect(LibraryFilter.base("S/a.flac").matches(sigur))
        #expect(!LibraryFilter.base("S/a").matches(sigur))
        #expect(LibraryFilter.modifiedSince(1_000).matches(sigur))
        #expect(!LibraryFilter.modifiedSince(1_001).matches(sigur))
        #expect(LibraryFilter.file(TagMatch(.startsWith, "S/")).matches(sigur))
        #expect(LibraryFilter.audioFormat(TagMatch(.equals, "44100:16:2")).matches(sigur))
    }

    @Test func regexIsUnanchoredCaseSensitiveUnlessFoldedAndBounded() throws {
        #expect(LibraryFilter.tag(.title, TagMatch(.regex, "s.li$")).matches(sigur))
        #expect(!LibraryFilter.tag(.title, TagMatch(.regex, "^glós")).matches(sigur))
        #expect(LibraryFilter.tag(.title, TagMatch(.regex, "^glós", foldCase: true)).matches(sigur))
        #expect(LibraryFilter.tag(.title, TagMatch(.regex, "^Gl", negated: true)).matches(sigur) == false)
        #expect(!LibraryFilter.tag(.title, TagMatch(.regex, "(")).matches(sigur))
        #expect(throws: CoreError.self) { try LibraryFilter.tag(.title, TagMatch(.regex, "(")).validate() }
        #expect(throws: CoreError.self) { try LibraryFilter.tag(.title, TagMatch(.regex, String(repeating: "x", count: 1025))).validate() }
        try LibraryFilter.tag(.title, TagMatch(.regex, String(repeating: "x", count: 1024))).validate()
    }

    @Test func albumArtistFallsBackToArtist() {
        #expect(LibraryFilter.tag(.albumArtist, TagMatch(.equals, "Sigur Rós")).matches(sigur))
        let compilation = SampleLibrary.song("C/x.ogg", [.artist: "A", .albumArtist: "Various"])
        #expect(!LibraryFilter.tag(.albumArtist, TagMatch(.equals, "A")).matches(compilation))
    }

    @Test func naturalOrderOfNamesAndPaths() {
        #expect(NaturalOrder.sorted(["track10.flac", "Track1.flac", "track2.flac", "01 a", "1 a"])
                == ["01 a", "1 a", "Track1.flac", "track2.flac", "track10.flac"])
        #expect(NaturalOrder.sorted(["A b/x", "A/B/y", "A/x", "A"], byPath: { $0 }) == ["A", "A/B/y", "A/x", "A b/x"])
        #expect(NaturalOrder.pathLess("Disc 2/01.flac", "Disc 10/01.flac"))
        // Items by name, and the order of indices, agree with `less` on every name.
        let names = ["b10", "B2", "a", "", "a", "ß 1", "Ä", "x/y", "010", "10", "2"]
        let byLess = names.sorted(by: NaturalOrder.less)
        #expect(NaturalOrder.sorted(names.map { ($0, 0) }, byName: { $0.0 }).map(\.0) == byLess)
        #expect(NaturalOrder.order(ofNames: names).map { names[$0] } == byLess)
        #expect(NaturalOrder.sorted([("only", 1)], byName: { $0.0 }).map(\.1) == [1])
    }

    @Test func songFromTagsWritesBareNumbersYearAndFormat() {
        let tags = TagBundle(title: " Title\nwith newline ", artist: "", album: "Album", year: 2024, trackNumber: 3, trackTotal: 12,
                             discNumber: 1, discTotal: 2, encoding: "lossless")
        let stream = StreamInfo(duration: 2.5, sampleRate: 44_100, channels: 2, bitDepth: 24, codec: "flac")
        let song = LibrarySong(path: "a/b.flac", modified: 7, size: -5, tags: tags, stream: stream)
        #expect(song.tags == [.title: ["Title with newline"], .album: ["Album"], .date: ["2024"], .track: ["3"], .disc: ["1"]])
        #expect(song.format == "44100:24:2")
        #expect(song.size == 0)
        #expect(song.duration == 2.5)
        let float = StreamInfo(duration: .infinity, sampleRate: 48_000, channels: 2, bitDepth: 32, codec: "pcm_f32le")
        #expect(LibrarySong(path: "f.wav", modified: 0, size: 1, tags: TagBundle(), stream: float).format == "48000:f:2")
        #expect(LibrarySong(path: "f.wav", modified: 0, size: 1, tags: TagBundle(), stream: float).duration == nil)
        let lossy = StreamInfo(duration: 1, sampleRate: 44_100, channels: 1, bitDepth: 32, codec: "mp3")
        #expect(LibrarySong(path: "m.mp3", modified: 0, size: 1, tags: TagBundle(encoding: "lossy"), stream: lossy).format == "44100:f:1")
        let absurd = StreamInfo(duration: -1, sampleRate: .nan, channels: 0, bitDepth: 0)
        #expect(LibrarySong(path: "x.wav", modified: 0, size: 1, tags: TagBundle(), stream: absurd).format == "*:*:*")
    }

    @Test func fileKindsByExtension() {
        #expect(LibraryFileKind(fileName: "a.FLAC") == .audio)
        #expect(LibraryFileKind(fileName: "a.m3u8") == .playlist)
        #expect(LibraryFileKind(fileName: "cover.jpg") == nil)
        #expect(LibraryFileKind(fileName: ".flac") == nil)
        #expect(LibraryFileKind(fileName: "flac") == nil)
    }
}
