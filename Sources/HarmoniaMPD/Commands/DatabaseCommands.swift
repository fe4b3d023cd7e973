// The database commands — specs/mpd-protocol.md §Listings (Updates)
//
// MPD 0.23's database group (src/command/DatabaseCommands.cxx,
// OtherCommands.cxx's lsinfo/update, FileCommands.cxx, StorageCommands.cxx,
// src/db/DatabasePrint.cxx, src/db/Count.cxx), answered from the library
// port. This file: the table, the dispatch, the listings and `update`;
// DatabaseQueries.swift: find/search/list/count and their adding forms;
// DatabaseFiles.swift: listfiles, albumart, readpicture.
import HarmoniaCore
import HarmoniaLibrary

/// MPD's database commands over the library: `lsinfo`, `listall`,
/// `listallinfo`, `listfiles`, `find`, `search`, `findadd`, `searchadd`,
/// `list`, `count`, `update`, `rescan`, `albumart`, `readpicture`.
///
/// Paths a client names never reach the disk unchecked: listings answer from
/// the store, and the commands that read files (`listfiles`, `albumart`,
/// `readpicture`) go through `MusicDirectory`, so nothing outside the music
/// directory is read or revealed.
///
/// Threads: immutable; `handle` runs on the calling connection's reader
/// thread, several at once; it may block on the store and the disk.
public struct MPDDatabaseCommands: MPDCommandGroup {
    /// Reads the first embedded picture of the audio file at an absolute path
    /// (already confined to the music directory): its bytes and MIME type, or
    /// nil when the file has none. Throws when the file cannot be read.
    public typealias PictureReader = @Sendable (_ path: String) throws(CoreError) -> (data: [UInt8], mimeType: String?)?

    let library: MPDLibraryAccess
    let readPicture: PictureReader
    let storedPlaylists: StoredPlaylists?

    /// - Parameters:
    ///   - library: the store, the music directory, updates and the queue.
    ///   - storedPlaylists: listed by `lsinfo` of the top, as MPD lists its
    ///     playlist directory's (specs/mpd-protocol.md §Stored playlists); nil: none.
    ///   - readPicture: the embedded-picture reader for `readpicture` (the
    ///     composition passes FFmpeg's); by default no file has a picture.
    public init(library: MPDLibraryAccess, storedPlaylists: StoredPlaylists? = nil,
                readPicture: @escaping PictureReader = { _ in nil }) {
        self.library = library
        self.storedPlaylists = storedPlaylists
        self.readPicture = readPicture
    }

    /// MPD 0.23's rows (src/command/AllCommands.cxx).
    public static let table: [MPDCommandInfo] = [
        MPDCommandInfo("albumart", .read, .exactly(2)),
        MPDCommandInfo("count", .read, .range(1, nil)),
        MPDCommandInfo("find", .read, .range(1, nil)),
        MPDCommandInfo("findadd", .add, .range(1, nil)),
        MPDCommandInfo("list", .read, .range(1, nil)),
        MPDCommandInfo("listall", .read, .range(0, 1)),
        MPDCommandInfo("listallinfo", .read, .range(0, 1)),
        MPDCommandInfo("listfiles", .read, .range(0, 1)),
        MPDCommandInfo("lsinfo", .read, .range(0, 1)),
        MPDCommandInfo("readpicture", .read, .exactly(2)),
        MPDCommandInfo("rescan", .control, .range(0, 1)),
        MPDCommandInfo("search", .read, .range(1, nil)),
        MPDCommandInfo("searchadd", .add, .range(1, nil)),
        MPDCommandInfo("update", .control, .range(0, 1)),
    ]

    public var commands: [MPDCommandInfo] { Self.table }

    public func handle(_ request: MPDRequest, context: MPDContext, into writer: inout MPDResponseWriter) throws(MPDError) {
        let args = request.arguments
        switch request.command {
        case "lsinfo": try lsinfo(args.first ?? "", into: &writer)
        case "listall": try listAll(args.first ?? "", full: false, into: &writer)
        case "listallinfo": try listAll(args.first ?? "", full: true, into: &writer)
        case "listfiles": try listFiles(args.first ?? "", into: &writer)
        case "find": try find(args, foldCase: false, into: &writer)
        case "search": try find(args, foldCase: true, into: &writer)
        case "findadd": try findAdd(args, foldCase: false)
        case "searchadd": try findAdd(args, foldCase: true)
        case "list": try list(args, into: &writer)
        case "count": try count(args, into: &writer)
        case "update", "rescan": try update(args.first, into: &writer)
        case "albumart": try albumArt(args[0], offset: args[1], into: &writer)
        case "readpicture": try embeddedPicture(args[0], offset: args[1], into: &writer)
        default: throw .unknownCommand(request.command)
        }
    }

    // MARK: lsinfo, listall, listallinfo

    /// `lsinfo [URI]`: the folder's songs (records), playlists, then
    /// subfolders, in MPD's walk order; a song's path gives its record.
    /// "/" is the top (MPD's workaround for old clients). Absolute paths and
    /// URLs are refused as MPD refuses them to a TCP client.
    func lsinfo(_ argument: String, into writer: inout MPDResponseWriter) throws(MPDError) {
        let uri = try Self.relativeURI(argument == "/" ? "" : argument)
        // No library path has `..`, empty segments or a leading `/`.
        guard uri.isEmpty || MPDFilterParser.isSafeLocalURI(uri) else { throw .noSuchDirectory }
        let listing: LibraryRecordListing
        do {
            listing = try library.store.recordListing(of: uri, songOrder: .add)
        } catch where error.category == .notFound {
            if let song = try songIfSafe(uri) {
                writer.appendSong(song)
                return
            }
            throw .noSuchDirectory
        } catch {
            throw MPDError(error)
        }
        for song in listing.songs where !writer.isFull { writer.appendSong(song) }
        for playlist in listing.playlists where !writer.isFull { appendPlaylist(playlist, full: true, into: &writer) }
        for directory in listing.directories where !writer.isFull { appendDirectory(directory, full: true, into: &writer) }
        if uri.isEmpty, let storedPlaylists {
            // MPD lists its stored playlists after the top's folders.
            MPDStoredPlaylistCommands.appendPlaylists(try storedPlaylists.list(), into: &writer)
        }
    }

    /// `listall [URI]` / `listallinfo [URI]`: the folder itself (unless the
    /// top), then everything inside it, recursively; a song's path gives that song.
    func listAll(_ uri: String, full: Bool, into writer: inout MPDResponseWriter) throws(MPDError) {
        guard uri.isEmpty || MPDFilterParser.isSafeLocalURI(uri) else { throw .noSuchDirectory }
        do {
            // Streamed folder by folder as read, each folder's songs in MPD's order.
            try library.store.visitRecordEntries(under: uri, songOrder: .add) { entry in
                switch entry {
                case .song(let record):
                    if full { writer.appendSong(record) } else { writer.append("file", record.path) }
                case .directory(let d):
                    appendDirectory(d, full: full, into: &writer)
                case .playlist(let p):
                    appendPlaylist(p, full: full, into: &writer)
                }
                return !writer.isFull
            }
        } catch where error.category == .notFound {
            // No such folder (nothing was written): a song's path, or nothing.
            guard let song = try songIfSafe(uri) else { throw .noSuchDirectory }
            if full { writer.appendSong(song) } else { writer.append("file", song.path) }
        } catch {
            throw MPDError(error)
        }
    }

    /// The song at `uri`, or nil; nil without asking the store for a path no
    /// library path can be (`..`, empty segments, a leading `/`).
    private func songIfSafe(_ uri: String) throws(MPDError) -> LibrarySong? {
        guard !uri.isEmpty, MPDFilterParser.isSafeLocalURI(uri) else { return nil }
        return try mapped { () throws(CoreError) in try library.store.song(at: uri) }
    }

    func appendDirectory(_ directory: LibraryDirectory, full: Bool, into writer: inout MPDResponseWriter) {
        writer.append("directory", directory.path)
        if full && directory.modified >= 0 {
            writer.append("Last-Modified", MPDResponseWriter.iso8601(directory.modified))
        }
    }

    func appendPlaylist(_ playlist: LibraryPlaylist, full: Bool, into writer: inout MPDResponseWriter) {
        writer.append("playlist", playlist.path)
        if full && playlist.modified >= 0 {
            writer.append("Last-Modified", MPDResponseWriter.iso8601(playlist.modified))
        }
    }

    // MARK: update, rescan

    /// `update [URI]` / `rescan [URI]`: `updating_db: JOB`. The scanner
    /// rescans the whole library (incrementally) whatever the URI; a URI
    /// that is not a safe relative path is `Malformed path`, as MPD says.
    func update(_ argument: String?, into writer: inout MPDResponseWriter) throws(MPDError) {
        if let path = argument, !path.isEmpty, path != "/", !MPDFilterParser.isSafeLocalURI(path) {
            throw MPDError(.arg, "Malformed path")
        }
        writer.append("updating_db", library.requestUpdate())
    }

    // MARK: Shared

    /// Songs in MPD's walk order: folder by folder (a folder's own songs
    /// before its subfolders'), within a folder by Album, Disc, Track, then
    /// name (MPD's song_list_sort; text in natural order here).
    static func walkOrder(_ songs: [LibrarySong]) -> [LibrarySong] {
        LibraryAggregation.addOrder(songs)
    }

    /// The URI as a path relative to the music directory, or MPD's refusal
    /// for what is not (src/LocateUri.cxx, to a client that is not local):
    /// an absolute path or `file:///…` → `Access denied` (PERMISSION, whether
    /// or not it exists: it reveals nothing); `file://x` → `Malformed
    /// file:// URI`; a URL → `Unsupported URI scheme` (nothing remote is read).
    static func relativeURI(_ uri: String) throws(MPDError) -> String {
        let bytes = Array(uri.utf8)
        let filePrefix = Array("file://".utf8)
        if bytes.count >= filePrefix.count, zip(bytes, filePrefix).allSatisfy({ asciiLower($0) == $1 }) {
            guard bytes.count > filePrefix.count, bytes[filePrefix.count] == UInt8(ascii: "/") else {
                throw MPDError(.arg, "Malformed file:// URI")
            }
            throw MPDError(.permission, "Access denied")
        }
        if bytes.first == UInt8(ascii: "/") { throw MPDError(.permission, "Access denied") }
        if hasScheme(bytes) { throw MPDError(.arg, "Unsupported URI scheme") }
        return uri
    }

    /// MPD's uri_has_scheme: a lowercase letter, then lowercase letters,
    /// digits, `+`, `.`, `-`, then `://`.
    static func hasScheme(_ bytes: [UInt8]) -> Bool {
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0 else { return false }
        let isLower = { (c: UInt8) in c >= 0x61 && c <= 0x7A }
        guard isLower(bytes[0]) else { return false }
        for c in bytes[1..<colon] where !(isLower(c) || (c >= 0x30 && c <= 0x39) || c == 0x2B || c == 0x2E || c == 0x2D) {
            return false
        }
        return bytes.count >= colon + 3 && bytes[colon + 1] == 0x2F && bytes[colon + 2] == 0x2F
    }

    /// Runs a store call, its `CoreError` turned into MPD's class of error.
    func mapped<T>(_ body: () throws(CoreError) -> T) throws(MPDError) -> T {
        do {
            return try body()
        } catch {
            throw MPDError(error)
        }
    }
}

extension MPDError {
    /// `No such directory` (NO_EXIST): MPD's answer for a path the database lacks.
    static let noSuchDirectory = MPDError(.noExist, "No such directory")
}
