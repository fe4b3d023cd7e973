// The playlist parsers and the natural sort of harmonia-play, as units
// (specs/inputs.md §Folders, §M3U, §PLS).
import Foundation
@testable import harmonia_play
import HarmoniaCore
import HarmoniaLibrary
import Testing

@Suite("Playlist parsers and natural sort")
struct PlaylistParserTests {
    @Test("natural order: numbers by value, letters case-insensitive, a total order")
    func naturalSort() {
        let names = ["track10.flac", "Track1.flac", "track2.flac", "track02b.flac", "a", "B", "b", "01", "1", "disc 2/x", "disc 10/x", "10"]
        #expect(names.sorted(by: NaturalOrder.less) ==
                ["01", "1", "10", "a", "B", "b", "disc 2/x", "disc 10/x", "Track1.flac", "track2.flac", "track02b.flac", "track10.flac"])
        #expect(NaturalOrder.sorted(names) == names.sorted(by: NaturalOrder.less), "the folder sort and the comparison agree")
        #expect(!NaturalOrder.less("x", "x"))
        #expect(NaturalOrder.less("track9999999999999999999999", "track10000000000000000000000"))
    }

    @Test("#EXTINF: 'Artist - Title', a title alone, attributes with commas, nothing")
    func extinf() {
        #expect(PlaylistParsers.extinf("#EXTINF:123,Artist - Title - Remix") == ("Title - Remix", "Artist"))
        #expect(PlaylistParsers.extinf("#EXTINF:-1,Just a Title") == ("Just a Title", nil))
        #expect(PlaylistParsers.extinf(#"#EXTINF:5 tvg-name="a,b" group="x",Radio - News"#) == ("News", "Radio"))
        #expect(PlaylistParsers.extinf("#EXTINF:5") == (nil, nil))
        #expect(PlaylistParsers.extinf("#EXTINF:5,") == (nil, nil))
    }

    @Test("M3U: comments and blanks skipped, EXTINF names only the next entry, entries resolved against the playlist")
    func m3u() {
        let text = "#EXTM3U\r\n#EXTINF:1,A - T\r\nsub/a.flac\r\n\r\n#comment\r\nhttp://host/s.ogg\r\n/abs/b.mp3\r\n#EXTINF:2,Only\r\nfile:///c.wav\r\n"
        let entries = PlaylistParsers.m3u(text, playlist: "/lists/x.m3u")
        #expect(entries == [
            PlaylistEntry(location: "/lists/sub/a.flac", title: "T", artist: "A"),
            PlaylistEntry(location: "http://host/s.ogg"),
            PlaylistEntry(location: "/abs/b.mp3"),
            PlaylistEntry(location: "file:///c.wav", title: "Only"),
        ])
        #expect(PlaylistParsers.m3u("a.mp3\n", playlist: "x.m3u") == [PlaylistEntry(location: "a.mp3")])
    }

    @Test("PLS: ordered by N, case-insensitive keys, titles; not PLS is decodeError")
    func pls() throws {
        let text = "[playlist]\nFile3=c.mp3\nTITLE1=One\nfile1=a.mp3\nLength1=10\nFile2=http://h/b\nNumberOfEntries=3\n"
        #expect(try PlaylistParsers.pls(text, playlist: "/p/l.pls") == [
            PlaylistEntry(location: "/p/a.mp3", title: "One"),
            PlaylistEntry(location: "http://h/b"),
            PlaylistEntry(location: "/p/c.mp3"),
        ])
        #expect(try PlaylistParsers.pls("[playlist]\nNumberOfEntries=0\n", playlist: "e.pls").isEmpty)
        #expect(throws: CoreError.self) { try PlaylistParsers.pls("hello\n", playlist: "bad.pls") }
    }

    @Test("text: .m3u8 must be UTF-8; .m3u and .pls fall back to Latin-1; a byte-order mark is skipped")
    func encodings() throws {
        let base = NSTemporaryDirectory() + "harmonia-m3u-\(getpid())-\(UUID().uuidString.prefix(8))"
        defer { for ext in ["m3u", "m3u8", "pls"] { try? FileManager.default.removeItem(atPath: base + "." + ext) } }
        let latin1 = Data(Array("#EXTINF:1,Caf".utf8) + [0xE9] + Array("\nx.mp3\n".utf8))
        try latin1.write(to: URL(fileURLWithPath: base + ".m3u"))
        try latin1.write(to: URL(fileURLWithPath: base + ".m3u8"))
        let text = try TextFile.read(base + ".m3u", what: "a playlist", utf8Only: false)
        #expect(PlaylistParsers.m3u(text, playlist: base + ".m3u").first?.title == "Café")
        do {
            _ = try TextFile.read(base + ".m3u8", what: "a playlist", utf8Only: true)
            Issue.record("an .m3u8 that is not UTF-8 was read")
        } catch {
            #expect(error.category == .decodeError)
        }
        try Data([0xEF, 0xBB, 0xBF] + Array("#EXTINF:1,Café\nx.mp3\n".utf8)).write(to: URL(fileURLWithPath: base + ".m3u8"))
        let utf8 = try TextFile.read(base + ".m3u8", what: "a playlist", utf8Only: true)
        #expect(PlaylistParsers.m3u(utf8, playlist: base + ".m3u8").first?.title == "Café")
        #expect(throws: CoreError.notFound("\(base).pls: no such file or directory; check the path")) {
            try TextFile.read(base + ".pls", what: "a playlist", utf8Only: false)
        }
    }

    @Test("input kinds: URLs are plain, playlists by extension, folders by looking")
    func kinds() {
        #expect(InputExpander.kind(of: "http://host/list.m3u") == .plain)
        #expect(InputExpander.kind(of: "/no/such/list.M3U8") == .playlist)
        #expect(InputExpander.kind(of: "/no/such/sheet.cue") == .playlist)
        #expect(InputExpander.kind(of: "/no/such/song.flac") == .plain)
        #expect(InputExpander.kind(of: "/") == .folder)
        #expect(InputExpander.kind(of: "file:///") == .folder)
        #expect(InputExpander.scheme(of: "HTTPS://x") == "https")
        #expect(InputExpander.scheme(of: "a/b://c") == nil)
    }
}
