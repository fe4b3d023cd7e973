// What the database-command tests share: the library of `mpd_diff.py
// make-music` as the scanner stores it, a temporary music tree on disk, and
// a server hosting the database group — specs/mpd-protocol.md §Database commands
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import HarmoniaCore
import HarmoniaLibrary
import HarmoniaTestSupport
@testable import HarmoniaMPD

/// The tree `Tests/MPD/mpd_diff.py make-music` builds, as records.
enum DatabaseFixture {
    /// Every file and folder of the tree has this mtime (mpd_diff.py's FIXED_MTIME).
    static let mtime: Int64 = 1_700_000_000

    static let folders = ["Harmonia Artist", "Harmonia Artist/First Album", "loose", "Other Artist", "Other Artist/Second Album"]

    /// The songs as the real scanner stores them (LibraryScanner with
    /// FFmpegTagReaderAdapter: read back from `harmonia-play serve`'s SQLite
    /// library of the make-music tree). With `mpdDecoders`, the MP3 and the
    /// Opus file carry what MPD 0.23.12's own decoders report instead (mad:
    /// 24 bits and the length with the encoder delay; opus: 16 bits), for
    /// comparing the protocol adapter alone with real MPD.
    static func songs(mpdDecoders: Bool = false) -> [LibrarySong] {
        [
            LibrarySong(path: "Harmonia Artist/First Album/01 Opening.flac", modified: mtime, size: 64319,
                        tags: [.artist: ["Harmonia Artist"], .albumArtist: ["Harmonia Artist"], .album: ["First Album"],
                               .title: ["Opening"], .track: ["1"], .genre: ["Electronic"], .date: ["2024"],
                               .composer: ["Harmonia Composer"], .disc: ["1"]],
                        duration: 2, format: "44100:16:2"),
            LibrarySong(path: "Harmonia Artist/First Album/02 Quote's \"Song\".ogg", modified: mtime, size: 11389,
                        tags: [.artist: ["Harmonia Artist"], .album: ["First Album"], .title: ["Quote's \"Song\" \\ back"],
                               .track: ["2"], .genre: ["Electronic"], .date: ["2024"]],
                        duration: 2, format: "44100:f:2"),
            LibrarySong(path: "loose/hires.flac", modified: mtime, size: 186_453,
                        tags: [.artist: ["harmonia artist"], .title: ["Hi-Res"]], duration: 1, format: "96000:24:2"),
            LibrarySong(path: "loose/untagged.wav", modified: mtime, size: 176_478, duration: 1, format: "44100:16:2"),
            LibrarySong(path: "Other Artist/Second Album/01 Ünïcödé.mp3", modified: mtime, size: 33213,
                        tags: [.artist: ["Other Artist"], .album: ["Second Album"], .title: ["Ünïcödé Title"], .track: ["1"],
                               .genre: ["Jazz"], .date: ["1999"], .comment: ["a comment"]],
                        duration: mpdDecoders ? 2.037 : 2, format: mpdDecoders ? "44100:24:2" : "44100:f:2"),
            LibrarySong(path: "Other Artist/Second Album/02 Opus.opus", modified: mtime, size: 35393,
                        tags: [.artist: ["Other Artist"], .album: ["Second Album"], .title: ["Opus Track"], .track: ["2"]],
                        duration: mpdDecoders ? 2.005 : 2, format: mpdDecoders ? "48000:16:2" : "48000:f:2"),
        ]
    }

    static let playlists = [LibraryPlaylist(path: "loose/mix.m3u", modified: mtime)]

    static func store(mpdDecoders: Bool = false) throws -> InMemoryLibraryStore {
        let store = InMemoryLibraryStore()
        try store.beginUpdate()
        for folder in folders { try store.upsertDirectory(LibraryDirectory(path: folder, modified: mtime)) }
        for song in songs(mpdDecoders: mpdDecoders) { try store.upsertSong(song) }
        for playlist in playlists { try store.upsertPlaylist(playlist) }
        try store.commitUpdate()
        return store
    }
}

/// A temporary folder, removed at deinit. Not thread-safe.
final class TemporaryTree {
    let root: String

    init() throws {
        var template = Array((NSTemporaryDirectory() + "/harmonia-mpddb-XXXXXX").utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TestFailure("mkdtemp failed")
        }
        root = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    /// Writes `bytes` at `relative` (folders made), with mtime `mtime`.
    func file(_ relative: String, _ bytes: [UInt8], mtime: Int64 = DatabaseFixture.mtime) throws {
        let path = root + "/" + relative
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes)) else { throw TestFailure("cannot write \(path)") }
        try touch(relative, mtime)
    }

    func folder(_ relative: String, mtime: Int64 = DatabaseFixture.mtime) throws {
        try FileManager.default.createDirectory(atPath: root + "/" + relative, withIntermediateDirectories: true)
        try touch(relative, mtime)
    }

    func symlink(_ relative: String, to target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: root + "/" + relative, withDestinationPath: target)
    }

    func touch(_ relative: String, _ mtime: Int64) throws {
        var times = [timespec(tv_sec: Int(mtime), tv_nsec: 0), timespec(tv_sec: Int(mtime), tv_nsec: 0)]
        guard utimensat(AT_FDCWD, root + "/" + relative, &times, AT_SYMLINK_NOFOLLOW) == 0 else {
            throw TestFailure("utimensat \(relative) failed")
        }
    }
}

/// Routes every command of one group (what MPDPlayerHandler will do for all groups).
struct GroupHandler: MPDCommandHandler {
    let group: any MPDCommandGroup
    var commands: [MPDCommandInfo] { group.commands }
    func handle(_ request: MPDRequest, context: MPDContext, into writer: inout MPDResponseWriter) throws(MPDError) {
        try group.handle(request, context: context, into: &writer)
    }
}

/// What the fake player saw: update requests and queued songs.
final class DatabaseCalls: Sendable {
    let updates = LockedValue(0)
    let enqueued = LockedValue<[([String], Int?)]>([])

    func access(store: any LibraryStorePort, musicDirectory: MusicDirectory) -> MPDLibraryAccess {
        MPDLibraryAccess(
            store: store, musicDirectory: musicDirectory,
            requestUpdate: { self.updates.withLock { $0 += 1; return $0 } },
            enqueue: { (songs: [LibrarySong], position: Int?) throws(MPDError) in
                // An empty queue, as in the differential session: any position but 0 is too large.
                if let position, position > 0 { throw MPDError(.arg, "Number too large: \(position)") }
                self.enqueued.withLock { $0.append((songs.map(\.path), position)) }
            })
    }
}

/// A server on 127.0.0.1 with the database group over `store` and `music`.
func makeDatabaseServer(store: any LibraryStorePort, music: String, calls: DatabaseCalls = DatabaseCalls(),
                        readPicture: @escaping MPDDatabaseCommands.PictureReader = { _ in nil },
                        configure: (inout MPDServerConfiguration) -> Void = { _ in }) throws -> MPDServer {
    var configuration = MPDServerConfiguration(host: "127.0.0.1", port: 0)
    configuration.tagTypes = .mpdDefault
    configure(&configuration)
    let access = calls.access(store: store, musicDirectory: try MusicDirectory(root: music))
    let server = MPDServer(configuration: configuration,
                           handler: GroupHandler(group: MPDDatabaseCommands(library: access, readPicture: readPicture)))
    try server.start()
    return server
}
