// The library over the control protocol (under `serve`): browse, search and
// queue by library path — specs/control-protocol.md §Library
import Foundation
import HarmoniaCore
import HarmoniaLibrary

/// The music library as the control protocol's clients see it: `uri`s
/// relative to the music directory, confined to it, and the `library/*`
/// commands. Every path a client names goes through `resolve`.
///
/// Threads: any (the store has its own reader connection); the dispatcher
/// calls it on the main loop.
public final class ControlLibrary: Sendable {
    public let store: any LibraryStorePort
    public let musicDirectory: MusicDirectory
    /// Starts a rescan (or joins the one running); its job number.
    private let requestUpdate: @Sendable () -> Int

    public static let commands = ["library/browse", "library/artists", "library/albums", "library/songs",
                                  "library/search", "library/stats", "library/update"]
    /// Rows in one answer, at most and by default: every list is paged
    /// (`offset`, `limit`), its `total` given.
    public static let pageLimit = 500

    public init(store: any LibraryStorePort, musicDirectory: MusicDirectory, requestUpdate: @escaping @Sendable () -> Int) {
        self.store = store
        self.musicDirectory = musicDirectory
        self.requestUpdate = requestUpdate
    }

    // MARK: Paths

    /// The file a client's `uri` names, as the queue keeps it: an http(s)
    /// URL as it is; anything else a path relative to the music directory
    /// that must stay inside it (`..`, absolute paths, `file://` and links
    /// out are refused with one `notFound`, which says nothing of the outside).
    public func resolve(_ uri: String) throws(CoreError) -> String {
        let lower = uri.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") { return uri }
        return try musicDirectory.resolve(uri)
    }

    /// A queue entry's `url` as clients name it: relative to the music
    /// directory when it is inside, else unchanged (a stream).
    public func uri(of url: String) -> String {
        let root = musicDirectory.root, prefix = root.hasSuffix("/") ? root : root + "/"
        return url.hasPrefix(prefix) ? String(url.dropFirst(prefix.count)) : url
    }

    /// The tracks `queue/add` queues for `uri`: one for a file, a folder's
    /// songs in `add` order (album, disc, track) for a folder.
    public func tracks(for uri: String) throws(CoreError) -> [Track] {
        let resolved = try resolve(uri)
        guard resolved.hasPrefix("/"), MusicDirectory.isDirectory(resolved) else {
            let known = (try? store.song(at: self.uri(of: resolved))) ?? nil
            return [known.map(track(for:)) ?? Track(url: resolved)]
        }
        let songs = try store.songsForAdd(under: resolved == musicDirectory.root ? "" : self.uri(of: resolved))
        guard !songs.isEmpty else { throw .notFound("'\(uri)': the folder holds no songs the library knows (run library/update?)") }
        return songs.map(track(for:))
    }

    /// A queue entry for `url` with the library's tags when it is a song
    /// the library knows (a restored queue), else the bare URL.
    public func track(forURL url: String) -> Track {
        let relative = uri(of: url)
        guard relative != url, let song = (try? store.song(at: relative)) ?? nil else { return Track(url: url) }
        return track(for: song)
    }

    /// A saved queue entry put back (`StateKeeper.restore`): a stream as it
    /// is; a file inside the music directory with the library's tags; a
    /// file that is gone, or whose real path is outside the music directory
    /// (an absolute path elsewhere, `..`, a link out), dropped.
    public func restoredTrack(forURL url: String) -> Result<Track, RestoreDrop> {
        switch musicDirectory.judge(savedURL: url) {
        case .stream: return .success(Track(url: url))
        case .file(let real): return .success(track(forURL: real))
        case .missing: return .failure(.missing)
        case .outside: return .failure(.outside)
        }
    }

    /// A queue entry for a library song (`Track(song:in:)`).
    public func track(for song: LibrarySong) -> Track {
        Track(song: song, in: musicDirectory)
    }

    // MARK: Commands

    /// Runs a `library/*` command.
    public func execute(_ command: String, _ args: ControlArgs) throws -> JSONValue {
        switch command {
        case "library/browse":
            let path = try folderPath(args.optionalString("path") ?? "")
            let page = try Self.page(args)
            let listing = try store.listing(of: path)
            // One list, folders then songs, paged.
            let folders = listing.directories.dropFirst(page.offset).prefix(page.limit)
            let songs = listing.songs.dropFirst(max(0, page.offset - listing.directories.count)).prefix(page.limit - folders.count)
            return .object([
                ("path", .string(path)),
                ("total", .int(Int64(listing.directories.count + listing.songs.count))), ("offset", .int(Int64(page.offset))),
                ("folders", .array(folders.map { .object([("uri", .string($0.path)), ("name", .string(Self.name($0.path)))]) })),
                ("songs", .array(songs.map(song))),
                ("playlists", .array(listing.playlists.map { .object([("uri", .string($0.path)), ("name", .string(Self.name($0.path)))]) })),
            ])
        case "library/artists":
            let page = try Self.page(args)
            let rows = try store.tagValues(.albumArtist, groupedBy: [], matching: .and([]))
            return .object([("total", .int(Int64(rows.count))), ("offset", .int(Int64(page.offset))),
                            ("artists", .array(rows.dropFirst(page.offset).prefix(page.limit).map { .string($0.value) }))])
        case "library/albums":
            let page = try Self.page(args)
            var filters: [LibraryFilter] = []
            if let artist = try args.optionalString("artist") { filters.append(.tag(.albumArtist, TagMatch(.equals, artist))) }
            let rows = try store.tagValues(.album, groupedBy: [.albumArtist], matching: .and(filters))
            return .object([("total", .int(Int64(rows.count))), ("offset", .int(Int64(page.offset))),
                            ("albums", .array(rows.dropFirst(page.offset).prefix(page.limit).map {
                                .object([("album", .string($0.value)), ("artist", .string($0.groups.first ?? ""))])
                            }))])
        case "library/songs":
            var filters: [LibraryFilter] = []
            if let artist = try args.optionalString("artist") { filters.append(.tag(.albumArtist, TagMatch(.equals, artist))) }
            if let album = try args.optionalString("album") { filters.append(.tag(.album, TagMatch(.equals, album))) }
            guard !filters.isEmpty else { throw ControlFailure.invalidRequest("library/songs: give 'artist', 'album' or both") }
            return try songsResult(.and(filters), try Self.page(args))
        case "library/search":
            let query = try args.string("query").trimmingCharacters(in: .whitespaces)
            guard !query.isEmpty else { throw CoreError.invalidArgument("library/search: 'query' is empty") }
            guard query.count <= 200 else { throw CoreError.invalidArgument("library/search: 'query' is longer than 200 characters") }
            // Every word must appear in some tag or in the path, case folded.
            let words = query.split(separator: " ").map(String.init)
            let filter = LibraryFilter.and(words.map { word in
                .not(.and([.not(.anyTag(TagMatch(.contains, word, foldCase: true))), .not(.file(TagMatch(.contains, word, foldCase: true)))]))
            })
            return try songsResult(filter, try Self.page(args))
        case "library/stats":
            let stats = try store.stats()
            return .object([("artists", .int(Int64(stats.artists))), ("albums", .int(Int64(stats.albums))),
                            ("songs", .int(Int64(stats.songs))), ("playtime", EventJSON.number(stats.playtime)),
                            ("last_update", stats.lastUpdate.map { .int($0) } ?? .null)])
        case "library/update":
            return .object([("job", .int(Int64(requestUpdate())))])
        default:
            throw ControlFailure.unknownCommand(command)
        }
    }

    /// A folder a client names, checked to be inside the music directory
    /// ("" is the top); as the library spells it.
    private func folderPath(_ path: String) throws(CoreError) -> String {
        let trimmed = path.hasSuffix("/") ? String(path.dropLast()) : path
        guard !trimmed.isEmpty else { return "" }
        let real = try musicDirectory.resolve(trimmed)
        return real == musicDirectory.root ? "" : uri(of: real)
    }

    /// The songs `filter` matches, in the library's walk order (folder by
    /// folder, by album, disc, track): the page's, and how many in all. Only
    /// the page is kept in memory.
    private func songsResult(_ filter: LibraryFilter, _ page: (offset: Int, limit: Int)) throws(CoreError) -> JSONValue {
        var total = 0
        var songs: [LibrarySong] = []
        try store.visitSongs(matching: filter) { found in
            if total >= page.offset && songs.count < page.limit { songs.append(found) }
            total += 1
            return true
        }
        return .object([("total", .int(Int64(total))), ("offset", .int(Int64(page.offset))), ("songs", .array(songs.map(song)))])
    }

    /// A list's page: `offset` (from 0, default 0) and `limit` (1 to
    /// `pageLimit`, default `pageLimit`).
    /// - Throws: `invalidRequest` for a value that is not an integer;
    ///   `invalidArgument` for one out of range.
    private static func page(_ args: ControlArgs) throws(ControlFailure) -> (offset: Int, limit: Int) {
        let offset = try args.optionalInt("offset") ?? 0
        let limit = try args.optionalInt("limit") ?? pageLimit
        guard offset >= 0 else { throw ControlFailure(.invalidArgument("'offset' must be 0 or more; got \(offset)")) }
        guard (1...pageLimit).contains(limit) else {
            throw ControlFailure(.invalidArgument("'limit' must be from 1 to \(pageLimit); got \(limit)"))
        }
        return (offset, limit)
    }

    /// A song as clients see it: its `uri` (for `queue/add`), the tag
    /// members of the track it queues as (`EventJSON.tagMembers`), its
    /// track number and duration.
    func song(_ song: LibrarySong) -> JSONValue {
        let number = song.tags[.track].map { JSONValue.string($0.joined(separator: TagBundle.valueSeparator)) } ?? .null
        return .object([("uri", .string(song.path))] + EventJSON.tagMembers(track(for: song))
                       + [("track", number), ("duration", song.duration.map(EventJSON.number) ?? .null)])
    }

    private static func name(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}
