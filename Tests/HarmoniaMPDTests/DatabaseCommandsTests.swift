// The database group over loopback TCP on an InMemoryLibraryStore and a
// temporary music tree — specs/mpd-protocol.md §Database commands.
// Expected answers were recorded from MPD 0.23.12 on the `mpd_diff.py
// make-music` tree (songs here carry the scanner's values: see DatabaseFixture).
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaCore
import HarmoniaLibrary
import HarmoniaTestSupport
import Testing
@testable import HarmoniaMPD

/// The make-music tree on disk with stand-in contents, a cover of
/// `coverBytes` (ASCII without newlines, so the line-based test client reads
/// a chunk as one line), and hostile entries: a folder link and a cover
/// link leading outside, a FIFO named cover.jpg.
private final class DiskTree {
    let music = try! TemporaryTree()
    let outside = try! TemporaryTree()
    static let coverBytes: [UInt8] = (0..<20_000).map { UInt8(ascii: "a") + UInt8($0 % 26) }

    init() throws {
        for song in DatabaseFixture.songs() { try music.file(song.path, Array(repeating: 1, count: 100)) }
        try music.file("loose/mix.m3u", Array("hires.flac\nuntagged.wav\n".utf8))
        try music.file("Harmonia Artist/First Album/cover.jpg", Self.coverBytes)
        try music.file("loose/.hidden", [1, 2, 3])
        try outside.file("secret/cover.jpg", Array("SECRET".utf8))
        try outside.file("secret/song.flac", [1])
        try music.symlink("escape", to: outside.root + "/secret")
        try music.symlink("Other Artist/Second Album/cover.jpg", to: outside.root + "/secret/cover.jpg")
        try music.folder("fifo")
        guard mkfifo(music.root + "/fifo/cover.jpg", 0o600) == 0 else { throw TestFailure("mkfifo failed") }
        for folder in DatabaseFixture.folders { try music.touch(folder, DatabaseFixture.mtime) }
    }
}

private func withServer(mpdDecoders: Bool = false, calls: DatabaseCalls = DatabaseCalls(),
                        readPicture: @escaping MPDDatabaseCommands.PictureReader = { _ in nil },
                        configure: (inout MPDServerConfiguration) -> Void = { _ in },
                        _ body: (MPDTestClient, DiskTree) throws -> Void) throws {
    let tree = try DiskTree()
    let store = try DatabaseFixture.store(mpdDecoders: mpdDecoders)
    let server = try makeDatabaseServer(store: store, music: tree.music.root, calls: calls,
                                        readPicture: readPicture, configure: configure)
    defer { server.shutdown() }
    try body(try MPDTestClient(port: server.port), tree)
}

private let lastModified = "Last-Modified: 2023-11-14T22:13:20Z"

/// MPD 0.23.12's records (`lsinfo "Harmonia Artist/First Album"`).
private let opening = [
    "file: Harmonia Artist/First Album/01 Opening.flac", lastModified, "Format: 44100:16:2",
    "Artist: Harmonia Artist", "Album: First Album", "AlbumArtist: Harmonia Artist", "Title: Opening", "Track: 1",
    "Genre: Electronic", "Date: 2024", "Composer: Harmonia Composer", "Disc: 1", "Time: 2", "duration: 2.000",
]
private let quote = [
    "file: Harmonia Artist/First Album/02 Quote's \"Song\".ogg", lastModified, "Format: 44100:f:2",
    "Artist: Harmonia Artist", "Album: First Album", "Title: Quote's \"Song\" \\ back", "Track: 2",
    "Genre: Electronic", "Date: 2024", "Time: 2", "duration: 2.000",
]
private let hires = [
    "file: loose/hires.flac", lastModified, "Format: 96000:24:2", "Artist: harmonia artist", "Title: Hi-Res",
    "Time: 1", "duration: 1.000",
]
private let untagged = ["file: loose/untagged.wav", lastModified, "Format: 44100:16:2", "Time: 1", "duration: 1.000"]

@Suite struct DatabaseCommandsTests {
    @Test func theTableIsMPDs() {
        let rows = Dictionary(uniqueKeysWithValues: MPDDatabaseCommands.table.map { ($0.name, $0) })
        #expect(rows.count == 14)
        #expect(rows["update"]?.permission == .control && rows["rescan"]?.permission == .control)
        #expect(rows["findadd"]?.permission == .add && rows["searchadd"]?.permission == .add)
        #expect(rows["albumart"]?.arity == .exactly(2) && rows["lsinfo"]?.arity == .range(0, 1))
        #expect(rows["stats"] == nil)
    }

    @Test func lsinfoListsSongsPlaylistsThenFolders() throws {
        try withServer { client, _ in
            let folders = ["directory: Harmonia Artist", lastModified, "directory: loose", lastModified,
                           "directory: Other Artist", lastModified, "OK"]
            #expect(client.command("lsinfo") == folders)
            #expect(client.command("lsinfo /") == folders)
            #expect(client.command(#"lsinfo "Harmonia Artist""#) == ["directory: Harmonia Artist/First Album", lastModified, "OK"])
            // MPD's order within a folder: Album, Disc (none before 1), Track, name.
            #expect(client.command(#"lsinfo "Harmonia Artist/First Album""#) == quote + opening + ["OK"])
            #expect(client.command("lsinfo loose") == hires + untagged + ["playlist: loose/mix.m3u", lastModified, "OK"])
            #expect(client.command(#"lsinfo "loose/hires.flac""#) == hires + ["OK"])
            for missing in ["nothing", "loose/mix.m3u", "loose/", "loose/hires.flac/x", "..", "../etc", "loose/../loose", "escape"] {
                #expect(client.command("lsinfo \"\(missing)\"") == ["ACK [50@0] {lsinfo} No such directory"], "\(missing)")
            }
            #expect(client.command("lsinfo /etc") == ["ACK [4@0] {lsinfo} Access denied"])
            #expect(client.command("lsinfo file:///etc") == ["ACK [4@0] {lsinfo} Access denied"])
            #expect(client.command("lsinfo file://etc") == ["ACK [2@0] {lsinfo} Malformed file:// URI"])
            #expect(client.command("lsinfo http://example.com/x") == ["ACK [2@0] {lsinfo} Unsupported URI scheme"])
        }
    }

    @Test func listallAndListallinfoWalkTheTree() throws {
        try withServer { client, _ in
            #expect(client.command("listall") == [
                "directory: Harmonia Artist", "directory: Harmonia Artist/First Album",
                "file: Harmonia Artist/First Album/02 Quote's \"Song\".ogg", "file: Harmonia Artist/First Album/01 Opening.flac",
                "directory: loose", "file: loose/hires.flac", "file: loose/untagged.wav", "playlist: loose/mix.m3u",
                "directory: Other Artist", "directory: Other Artist/Second Album",
                "file: Other Artist/Second Album/01 Ünïcödé.mp3", "file: Other Artist/Second Album/02 Opus.opus", "OK",
            ])
            #expect(client.command("listall loose") == ["directory: loose", "file: loose/hires.flac", "file: loose/untagged.wav",
                                                        "playlist: loose/mix.m3u", "OK"])
            #expect(client.command(#"listall "loose/hires.flac""#) == ["file: loose/hires.flac", "OK"])
            #expect(client.command("listallinfo loose") == ["directory: loose", lastModified] + hires + untagged
                + ["playlist: loose/mix.m3u", lastModified, "OK"])
            #expect(client.command(#"listallinfo "loose/hires.flac""#) == hires + ["OK"])
            for missing in ["nothing", "..", "/etc", "escape"] {
                #expect(client.command("listall \(missing)") == ["ACK [50@0] {listall} No such directory"])
            }
        }
    }

    @Test func findAndSearchFollowMPDsFiltersOrderSortAndWindow() throws {
        try withServer { client, _ in
            #expect(client.command(#"find Artist "Harmonia Artist""#) == quote + opening + ["OK"])
            #expect(client.command(#"find artist "harmonia artist""#) == hires + ["OK"])
            #expect(client.command(#"search artist "HARMONIA""#) == quote + opening + hires + ["OK"])
            #expect(client.command(#"find Album """#) == hires + untagged + ["OK"])
            #expect(client.command("find base loose") == hires + untagged + ["OK"])
            #expect(client.command(#"find "(base 'loose/hires.flac')""#) == hires + ["OK"])
            #expect(client.command(#"find "(base 'nothing')""#) == ["ACK [50@0] {find} No such directory"])
            #expect(client.command(#"find "(base '..')""#) == ["ACK [50@0] {find} No such directory"])
            #expect(client.command(#"find base "..""#) == ["ACK [2@0] {find} Bad URI"])
            // sort: stable, by bytes; Track numerically; '-' descending; no
            // Format lines (MPD's sorted copies lose the audio format).
            let unformatted = { (record: [String]) in record.filter { !$0.hasPrefix("Format: ") } }
            #expect(client.command(#"find "(Artist == 'Harmonia Artist')" sort Title"#) == unformatted(opening + quote) + ["OK"])
            #expect(client.command(#"find "(Artist == 'Harmonia Artist')" sort -Track"#) == unformatted(quote + opening) + ["OK"])
            #expect(client.command(#"find "(Artist == 'Harmonia Artist')" sort Bogus"#) == ["ACK [2@0] {find} Unknown sort tag"])
            // window: positions of the (sorted) result.
            #expect(client.command(#"find base loose window 1:2"#) == untagged + ["OK"])
            #expect(client.command(#"find base loose window 5:"#) == ["OK"])
            #expect(client.command(#"search Title "" sort Title window 0:2"#) == unformatted(untagged + hires) + ["OK"])
            #expect(client.command(#"find base loose window 3:1"#) == ["ACK [2@0] {find} Malformed range: 3:1"])
            #expect(client.command(#"find base loose window 1:2 sort Title"#) == ["ACK [2@0] {find} Unknown filter type"])
            #expect(client.command("find window 1:2") == ["ACK [2@0] {find} Incorrect number of filter arguments"])
            #expect(client.command("find Artist") == ["ACK [2@0] {find} Incorrect number of filter arguments"])
            #expect(client.command(#"search "(Title =~ '[')""#).first?.hasPrefix("ACK [2@0] {search} ") == true)
        }
    }

    @Test func listNestsGroupsAndCountSums() throws {
        try withServer { client, _ in
            #expect(client.command("list albumartist") == ["AlbumArtist: ", "AlbumArtist: Harmonia Artist",
                                                           "AlbumArtist: Other Artist", "AlbumArtist: harmonia artist", "OK"])
            #expect(client.command("list album group artist group date") == [
                "Date: ", "Artist: ", "Album: ", "Artist: Other Artist", "Album: Second Album", "Artist: harmonia artist", "Album: ",
                "Date: 1999", "Artist: Other Artist", "Album: Second Album",
                "Date: 2024", "Artist: Harmonia Artist", "Album: First Album", "OK",
            ])
            #expect(client.command("list track group disc") == ["Disc: ", "Track: ", "Track: 1", "Track: 2", "Disc: 1", "Track: 1", "OK"])
            #expect(client.command("list Performer") == ["Performer: ", "OK"])
            #expect(client.command("list album group performer") == ["Performer: ", "Album: ", "Album: First Album", "Album: Second Album", "OK"])
            #expect(client.command("list artistsort") == ["ArtistSort: ", "ArtistSort: Harmonia Artist", "ArtistSort: Other Artist",
                                                          "ArtistSort: harmonia artist", "OK"])
            #expect(client.command(#"list album "Harmonia Artist""#) == ["Album: First Album", "OK"])
            #expect(client.command(#"list artist "Harmonia Artist""#) == [#"ACK [2@0] {list} should be "Album" for 3 arguments"#])
            #expect(client.command("list album group album") == ["ACK [2@0] {list} Conflicting group"])
            #expect(client.command("list album group bogus") == ["ACK [2@0] {list} Unknown tag type: bogus"])
            #expect(client.command(#"list file artist "Other Artist""#) == [
                "file: Other Artist/Second Album/01 Ünïcödé.mp3", "file: Other Artist/Second Album/02 Opus.opus", "OK"])
            #expect(client.command(#"list album "(base 'nothing')""#) == ["ACK [50@0] {list} No such directory"])
            #expect(client.command(#"count artist "Harmonia Artist""#) == ["songs: 2", "playtime: 4", "OK"])
            #expect(client.command(#"count title """#) == ["songs: 1", "playtime: 1", "OK"])
            #expect(client.command(#"count "(base 'loose')" group album"#) == ["Album: ", "songs: 2", "playtime: 2", "OK"])
            #expect(client.command(#"count "(Artist != '')" group artist"#) == [
                "Artist: Harmonia Artist", "songs: 2", "playtime: 4", "Artist: Other Artist", "songs: 2", "playtime: 4",
                "Artist: harmonia artist", "songs: 1", "playtime: 1", "OK"])
            #expect(client.command("count group performer") == ["Performer: ", "songs: 6", "playtime: 10", "OK"])
            #expect(client.command("count group bogus") == ["ACK [2@0] {count} Unknown tag type: bogus"])
            #expect(client.command("count group") == ["ACK [2@0] {count} Incorrect number of filter arguments"])
        }
    }

    @Test func findaddQueuesWhatFindListsAndUpdateStartsAScan() throws {
        let calls = DatabaseCalls()
        try withServer(calls: calls) { client, _ in
            #expect(client.command(#"findadd Artist "Harmonia Artist""#) == ["OK"])
            #expect(client.command(#"searchadd title "o" sort Title window 0:2 position 0"#) == ["OK"])
            #expect(client.command(#"findadd "(Artist == 'nobody')" position 3"#) == ["ACK [2@0] {findadd} Number too large: 3"])
            #expect(client.command(#"findadd "(Artist == 'nobody')" position x"#) == ["ACK [2@0] {findadd} Integer expected: x"])
            let queued = calls.enqueued.withLock { $0 }
            #expect(queued.map(\.0) == [
                ["Harmonia Artist/First Album/02 Quote's \"Song\".ogg", "Harmonia Artist/First Album/01 Opening.flac"],
                ["Harmonia Artist/First Album/01 Opening.flac", "Other Artist/Second Album/02 Opus.opus"],
            ])
            #expect(queued.map(\.1) == [nil, 0])
            #expect(client.command("update") == ["updating_db: 1", "OK"])
            #expect(client.command("rescan loose") == ["updating_db: 2", "OK"])
            #expect(client.command("update /") == ["updating_db: 3", "OK"])
            for bad in ["..", "/etc", "loose/", "a//b", "file:///etc"] {
                #expect(client.command("update \(bad)") == ["ACK [2@0] {update} Malformed path"], "\(bad)")
            }
            #expect(calls.updates.withLock { $0 } == 3)
        }
    }

    @Test func albumartSendsTheFolderCoverInChunks() throws {
        try withServer { client, _ in
            let song = #""Harmonia Artist/First Album/01 Opening.flac""#
            var received: [UInt8] = []
            while received.count < DiskTree.coverBytes.count {
                let answer = client.command("albumart \(song) \(received.count)")
                #expect(answer.count == 4 && answer[0] == "size: 20000" && answer[3] == "OK", "\(answer.prefix(2))")
                guard answer.count == 4, let size = Int(answer[1].dropFirst("binary: ".count)), size > 0 else { break }
                #expect(size == min(8192, 20000 - received.count))
                received += Array(answer[2].utf8)
            }
            #expect(received == DiskTree.coverBytes)
            #expect(client.command("albumart \(song) 20000") == ["size: 20000", "binary: 0", "", "OK"])
            #expect(client.command("albumart \(song) 20001") == ["ACK [2@0] {albumart} Offset too large"])
            #expect(client.command("binarylimit 100") == ["OK"])
            let small = client.command("albumart \(song) 19950")
            #expect(small == ["size: 20000", "binary: 50", String(decoding: DiskTree.coverBytes[19950...], as: UTF8.self), "OK"])
            // The URI's folder, whether or not the song exists (as MPD).
            #expect(client.command(#"albumart "Harmonia Artist/First Album/nothing.flac" 0"#).first == "size: 20000")
            #expect(client.command(#"albumart "Harmonia Artist/First Album" 0"#) == ["ACK [50@0] {albumart} No file exists"])
            #expect(client.command(#"albumart "loose/hires.flac" x"#) == ["ACK [2@0] {albumart} Integer expected: x"])
            #expect(client.command(#"albumart "loose/hires.flac" -1"#) == ["ACK [2@0] {albumart} Number too large: -1"])
        }
    }

    @Test func hostilePathsAreRefusedWithoutRevealingAnything() throws {
        try withServer { client, tree in
            // A cover that is a link out, a folder link out, `..`, a FIFO: no file exists.
            for uri in ["Other Artist/Second Album/01 Ünïcödé.mp3", "escape/song.flac", "../x", "../../etc/passwd",
                        "loose/../../x", "fifo/x.flac", "nothing/x.flac", "\(tree.outside.root)/secret/song.flac"] {
                let answer = client.command("albumart \"\(uri)\" 0")
                #expect(answer == ["ACK [50@0] {albumart} No file exists"] || answer == ["ACK [4@0] {albumart} Access denied"], "\(uri)")
                #expect(!answer.joined().contains("SECRET"))
            }
            #expect(client.command("albumart \"\(tree.outside.root)/secret/song.flac\" 0") == ["ACK [4@0] {albumart} Access denied"])
            #expect(client.command("albumart \"file://\(tree.outside.root)/secret/song.flac\" 0") == ["ACK [4@0] {albumart} Access denied"])
            for uri in ["..", "../..", "escape", "loose/hires.flac", "nothing", "loose/../..", "fifo/cover.jpg"] {
                #expect(client.command("listfiles \"\(uri)\"") == ["ACK [50@0] {listfiles} No such directory"], "\(uri)")
            }
            #expect(client.command("listfiles /etc") == ["ACK [4@0] {listfiles} Access denied"])
            #expect(client.command("listfiles \(tree.music.root)") == ["ACK [4@0] {listfiles} Access denied"])
            for uri in ["../x", "escape/song.flac", "loose"] {
                #expect(client.command("readpicture \"\(uri)\" 0") == ["ACK [50@0] {readpicture} No such song"], "\(uri)")
            }
            #expect(client.command("readpicture /etc/passwd 0") == ["ACK [4@0] {readpicture} Access denied"])
            #expect(client.command(#"find "(base '../x')""#) == ["ACK [50@0] {find} No such directory"])
        }
    }

    @Test func listfilesListsTheFolderOnDisk() throws {
        try withServer { client, _ in
            let loose = client.command("listfiles loose")
            #expect(loose.last == "OK")
            // Entries in the file system's order, as MPD: compare as a set of records.
            var records: Set<[String]> = []
            var i = 0
            while i < loose.count - 1 {
                let length = loose[i].hasPrefix("file: ") ? 3 : 2
                records.insert(Array(loose[i..<min(i + length, loose.count - 1)]))
                i += length
            }
            #expect(records == [
                ["file: hires.flac", "size: 100", lastModified], ["file: untagged.wav", "size: 100", lastModified],
                ["file: mix.m3u", "size: 24", lastModified], ["file: .hidden", "size: 3", lastModified],
            ])
            let top = client.command("listfiles")
            #expect(Set(top.filter { $0.hasPrefix("directory: ") || $0.hasPrefix("file: ") })
                == ["directory: Harmonia Artist", "directory: loose", "directory: Other Artist", "directory: fifo"])
            #expect(client.command("listfiles \"loose/.\"").count == loose.count)
        }
    }

    @Test func readpictureUsesTheReaderOnTheConfinedFile() throws {
        let seen = LockedValue<[String]>([])
        let picture: [UInt8] = Array("PICTURE-BYTES".utf8)
        try withServer(readPicture: { (path: String) throws(CoreError) in
            seen.withLock { $0.append(path) }
            if path.hasSuffix("untagged.wav") { throw .decodeError("not audio") }
            return path.hasSuffix("hires.flac") ? (picture, "image/png") : nil
        }) { client, tree in
            #expect(client.command(#"readpicture "loose/hires.flac" 0"#) == ["size: 13", "type: image/png", "binary: 13", "PICTURE-BYTES", "OK"])
            #expect(client.command(#"readpicture "loose/hires.flac" 8"#) == ["size: 13", "type: image/png", "binary: 5", "BYTES", "OK"])
            #expect(client.command(#"readpicture "loose/hires.flac" 14"#) == ["ACK [2@0] {readpicture} Bad file offset"])
            #expect(client.command(#"readpicture "loose/untagged.wav" 0"#) == ["ACK [50@0] {readpicture} Failed to load file"])
            #expect(client.command(#"readpicture "Harmonia Artist/First Album/01 Opening.flac" 0"#) == ["OK"])
            let root = try MusicDirectory(root: tree.music.root).root
            #expect(seen.withLock { $0 }.allSatisfy { $0.hasPrefix(root + "/") })
        }
    }

    @Test func aListingPastTheOutputLimitDropsTheClient() throws {
        try withServer(configure: { $0.maxOutputBytes = 600 }) { client, _ in
            client.send("listallinfo")
            #expect(client.waitForClose())
        }
    }
}
