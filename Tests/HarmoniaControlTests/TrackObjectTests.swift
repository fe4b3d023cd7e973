// The control protocol's track object is one shape whatever made the track
// (specs/control-protocol.md §Events): a file's tags, a library row, a bare
// URL, a UPnP control point's fields — the same members, the same null
// rules, the same cleaned text.
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaLibrary
import HarmoniaTestSupport
import Testing

@Suite("EventJSON.track: one shape")
struct TrackObjectTests {
    /// Tags as a tagger may leave them: lists, surrounding spaces, a control character, an empty value.
    static let tags: TagBundle = {
        var tags = TagBundle(title: " Together ", album: "Duets\t")
        tags.artists = ["Björk", "", "Ólafur\nArnalds"]
        tags.albumArtists = ["Björk"]
        tags.genres = ["Electronic", "Ambient", " "]
        tags.duration = 2
        return tags
    }()

    /// A music folder holding `01.flac`, and a library that knows it as the scanner stores it.
    private func library() throws -> (top: String, library: ControlLibrary) {
        let top = NSTemporaryDirectory() + "harmonia-track-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: top + "/music/Duets", withIntermediateDirectories: true)
        try Data("audio".utf8).write(to: URL(fileURLWithPath: top + "/music/Duets/01.flac"))
        let store = InMemoryLibraryStore()
        try store.beginUpdate()
        try store.upsertDirectory(LibraryDirectory(path: "Duets", modified: 1))
        try store.upsertSong(LibrarySong(path: "Duets/01.flac", modified: 1, size: 5, tags: Self.tags,
                                         stream: StreamInfo(duration: 2, sampleRate: 44_100, channels: 2, bitDepth: 16)))
        try store.commitUpdate()
        let music = try MusicDirectory(root: top + "/music")
        return (top, ControlLibrary(store: store, musicDirectory: music, requestUpdate: { 0 }))
    }

    /// The object's members but `id`, serialized.
    private func members(_ track: Track) -> [String] {
        guard case .object(let members) = EventJSON.track(track) else { return [] }
        return members.filter { $0.0 != "id" }.map { "\($0.0)=\($0.1.serialized)" }
    }

    @Test("a file's tags and the library's row of the same file give the same object, with every list and cleaned text")
    func fileAndLibraryAgree() throws {
        let (top, library) = try self.library()
        defer { try? FileManager.default.removeItem(atPath: top) }
        let url = library.musicDirectory.root + "/Duets/01.flac"
        let fromFile = Track(url: url).filled(from: Self.tags)
        let queued = try library.tracks(for: "Duets/01.flac")
        let fromLibrary = try #require(queued.first)
        #expect(members(fromLibrary) == members(fromFile))
        #expect(members(library.track(forURL: url)) == members(fromFile))  // a restored queue entry
        #expect(members(fromFile) == [
            "url=\(JSONValue.string(url).serialized)", #"title="Together""#, #"artist="Björk; Ólafur Arnalds""#,
            #"artists=["Björk","Ólafur Arnalds"]"#, #"album="Duets""#, #"album_artist="Björk""#, #"album_artists=["Björk"]"#,
            #"genres=["Electronic","Ambient"]"#, "duration=2.0",
        ])
        // Opening the library's track keeps its values: the file agrees.
        #expect(members(fromLibrary.filled(from: Self.tags)) == members(fromFile))
    }

    @Test("library songs carry the tag members of the track they queue as")
    func songsShareTheTagMembers() throws {
        let (top, library) = try self.library()
        defer { try? FileManager.default.removeItem(atPath: top) }
        let browse = try library.execute("library/browse", ControlArgs(.object([("path", .string("Duets"))])))
        guard case .array(let songs)? = browse["songs"], case .object(let song)? = songs.first else {
            Issue.record("no song in \(browse.serialized)")
            return
        }
        let track = try #require(try library.tracks(for: "Duets/01.flac").first)
        for (name, value) in EventJSON.tagMembers(track) {
            #expect(song.first { $0.0 == name }?.1 == value, "\(name)")
        }
    }

    @Test("null rules: an entry with nothing known has every member, lists empty, the rest null")
    func bareEntry() {
        let bare = Track(url: "http://127.0.0.1:9/stream", id: UUID(uuidString: "00000000-0000-0000-0000-000000000001")!)
        #expect(EventJSON.track(bare).serialized == #"{"id":"00000000-0000-0000-0000-000000000001","url":"http://127.0.0.1:9/stream","#
                + #""title":null,"artist":null,"artists":[],"album":null,"album_artist":null,"album_artists":[],"genres":[],"duration":null}"#)
        // Given fields are cleaned as the file's tags are: a blank title is no title.
        let given = Track(url: "u", title: "  ", album: " A ", artists: [" x ", ""], albumArtists: ["\u{7}"], genres: ["G"])
        #expect(given.title == nil && given.album == "A" && given.artists == ["x"] && given.albumArtists.isEmpty && given.genres == ["G"])
    }
}
