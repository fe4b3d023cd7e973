// MPD's stored playlist commands: listplaylists, listplaylist,
// listplaylistinfo, load, save, playlistadd, playlistclear, playlistdelete,
// playlistmove, rename, rm — specs/mpd-protocol.md §Stored playlists
//
// MPD 0.23's src/command/PlaylistCommands.cxx, src/PlaylistFile.cxx and
// src/playlist/PlaylistSong.cxx (how a playlist's entries become songs).
import HarmoniaControl
import HarmoniaCore
import HarmoniaLibrary

/// The stored playlist group: playlists in `StoredPlaylists`' folder, and
/// the music folder's own `.m3u`/`.m3u8`/`.pls` files, read by path.
///
/// An entry is a path relative to the music folder, or a URL; a music
/// folder playlist's relative entries are relative to its own folder. An
/// entry leading outside the music folder (`..` past the top, an absolute
/// path elsewhere, `file://`) is skipped: never listed, queued or read.
/// `load` queues the entries that are songs of the library and http(s)
/// URLs; the listings show every entry (`file:` alone for one the library
/// lacks, as MPD).
///
/// Every change tells idle clients `stored_playlist`.
///
/// Threads: as every group (several connections at once); edits are
/// serialised by the store, queue changes run on the main loop.
public struct MPDStoredPlaylistCommands: MPDCommandGroup {
    let player: MPDPlayer
    let playlists: StoredPlaylists

    public init(player: MPDPlayer, playlists: StoredPlaylists) {
        self.player = player
        self.playlists = playlists
    }

    /// MPD 0.23's rows (src/command/AllCommands.cxx).
    public static let table: [MPDCommandInfo] = [
        MPDCommandInfo("listplaylist", .read, .exactly(1)),
        MPDCommandInfo("listplaylistinfo", .read, .exactly(1)),
        MPDCommandInfo("listplaylists", .read, .none),
        MPDCommandInfo("load", .add, .range(1, 3)),
        MPDCommandInfo("playlistadd", .control, .range(2, 3)),
        MPDCommandInfo("playlistclear", .control, .exactly(1)),
        MPDCommandInfo("playlistdelete", .control, .exactly(2)),
        MPDCommandInfo("playlistmove", .control, .exactly(3)),
        MPDCommandInfo("rename", .control, .exactly(2)),
        MPDCommandInfo("rm", .control, .exactly(1)),
        MPDCommandInfo("save", .control, .exactly(1)),
    ]

    public var commands: [MPDCommandInfo] { Self.table }

    public func handle(_ request: MPDRequest, context: MPDContext, into writer: inout MPDResponseWriter) throws(MPDError) {
        let args = request.arguments
        switch request.command {
        case "listplaylists":
            Self.appendPlaylists(try playlists.list(), into: &writer)
        case "listplaylist", "listplaylistinfo":
            for uri in try resolvedEntries(of: args[0]).compactMap({ $0 }) where !writer.isFull {
                if request.command == "listplaylistinfo", !isURL(uri),
                   let song = try? player.library.store.song(at: uri) {
                    writer.appendSong(song)
                } else {
                    writer.append("file", uri)
                }
            }
        case "load":
            try load(args)
        case "save":
            let entries = player.syncQueue().map { player.uri(of: $0.track) }
            try playlists.create(args[0], entries: entries)
            player.notify(.storedPlaylist)
        case "playlistadd":
            try playlistAdd(args)
        case "playlistclear":
            try playlists.edit(args[0]) { entries throws(MPDError) in entries.removeAll() }
            player.notify(.storedPlaylist)
        case "playlistdelete":
            let range = try MPDArgument.range(args[1])
            try playlists.edit(args[0]) { entries throws(MPDError) in
                // As MPD 0.23: the start may be the end (nothing goes); the end is clipped.
                guard Int(range.start) <= entries.count else { throw MPDError(.arg, "Bad song index") }
                let end = min(range.end.map(Int.init) ?? entries.count, entries.count)
                if Int(range.start) < end { entries.removeSubrange(Int(range.start)..<end) }
            }
            player.notify(.storedPlaylist)
        case "playlistmove":
            let from = Int(try MPDArgument.unsigned(args[1])), to = Int(try MPDArgument.unsigned(args[2]))
            try playlists.edit(args[0]) { entries throws(MPDError) in
                guard from < entries.count, to < entries.count else { throw MPDError(.arg, "Bad range") }
                let moved = entries.remove(at: from)
                entries.insert(moved, at: to)
            }
            player.notify(.storedPlaylist)
        case "rename":
            try playlists.rename(args[0], to: args[1])
            player.notify(.storedPlaylist)
        case "rm":
            try playlists.remove(args[0])
            player.notify(.storedPlaylist)
        default:
            throw MPDError.unknownCommand(request.command)
        }
    }

    /// `playlist: NAME` and `Last-Modified:` for each (listplaylists, lsinfo of the top).
    static func appendPlaylists(_ list: [StoredPlaylists.Info], into writer: inout MPDResponseWriter) {
        for playlist in list where !writer.isFull {
            writer.append("playlist", playlist.name)
            writer.append("Last-Modified", MPDResponseWriter.iso8601(playlist.modified))
        }
    }

    // MARK: load, playlistadd

    /// `load NAME [START:END] [POS]`: the playlist's songs (those the library
    /// has, and http(s) URLs) queued at the end or at POS. The range counts
    /// the playlist's entries; past the end it adds nothing.
    private func load(_ args: [String]) throws(MPDError) {
        let range = try args.count > 1 ? MPDArgument.range(args[1]) : MPDRange.all
        let position: Int?
        if args.count > 2 {
            // MPD checks the position against the queue before it opens the playlist.
            let count = UInt32(clamping: player.service.queue.count)
            position = Int(try MPDArgument.unsigned(args[2], max: count))
        } else {
            position = nil
        }
        let entries = try resolvedEntries(of: args[0])
        let start = min(Int(range.start), entries.count)
        let end = max(start, min(range.end.map(Int.init) ?? entries.count, entries.count))
        var found: [Track] = []
        for uri in entries[start..<end].compactMap({ $0 }) {
            if isURL(uri) {
                let scheme = PlaylistParsers.scheme(of: uri)
                if scheme == "http" || scheme == "https" { found.append(Track(url: uri)) }
            } else if let song = try? player.library.store.song(at: uri) {
                found.append(player.track(for: song))
            }
        }
        let tracks = found
        try player.run { () throws(MPDError) in _ = try player.enqueue(tracks: tracks, at: position) }
    }

    /// `playlistadd NAME URI [POS]`: a song, a folder's songs (MPD's add
    /// order; "" everything) or an http(s) URL, appended or inserted at POS;
    /// a missing playlist is created.
    private func playlistAdd(_ args: [String]) throws(MPDError) {
        let position = try args.count > 2 ? Int(MPDArgument.unsigned(args[2])) : nil
        guard StoredPlaylists.isValidName(args[0]) else { throw MPDError(.arg, "Bad playlist name") }
        let added = try player.tracks(forURI: args[1], single: false).map(player.uri(of:))
        try playlists.edit(args[0], createIfMissing: true) { entries throws(MPDError) in
            guard entries.count + added.count <= StoredPlaylists.maxEntries else { throw .tooLarge }
            if let position {
                guard position <= entries.count else { throw MPDError(.arg, "Bad position") }
                entries.insert(contentsOf: added, at: position)
            } else {
                entries += added
            }
        }
        player.notify(.storedPlaylist)
    }

    // MARK: Reading a playlist by name

    /// The entries of the playlist `name` resolved (MPD's order of lookup: a
    /// stored playlist, then a playlist file of the music folder): library
    /// paths or URLs; nil for an entry that leads outside the music folder,
    /// kept so that positions count every entry.
    /// - Throws: `No such playlist`, as MPD, for anything else.
    func resolvedEntries(of name: String) throws(MPDError) -> [String?] {
        if StoredPlaylists.isValidName(name), playlists.exists(name) {
            return try playlists.entries(of: name).map { PlaylistEntries.resolve($0, folder: "", root: root) }
        }
        guard let kind = PlaylistEntries.kind(of: name),
              let path = try? player.library.musicDirectory.resolve(name), !MusicDirectory.isDirectory(path) else {
            throw .noSuchPlaylist
        }
        let text: String
        do throws(CoreError) { text = try TextFile.read(path, what: "a playlist") } catch { throw .noSuchPlaylist }
        let written: [PlaylistEntry]
        switch kind {
        case .pls:
            do throws(CoreError) { written = try PlaylistParsers.plsEntries(text, playlist: name) } catch { throw .noSuchPlaylist }
        case .m3u:
            written = PlaylistParsers.m3uEntries(text)
        }
        let folder = PlaylistEntries.parent(of: name)
        return written.prefix(StoredPlaylists.maxEntries).map { PlaylistEntries.resolve($0.location, folder: folder, root: root) }
    }

    private var root: String { player.library.musicDirectory.root }

    private func isURL(_ uri: String) -> Bool { PlaylistParsers.scheme(of: uri) != nil }
}

/// How a playlist's entries become library paths (MPD's
/// playlist_check_translate_song, confined). Pure; thread-safe.
enum PlaylistEntries {
    enum Kind { case m3u, pls }

    /// The kind of a music folder playlist, by extension (without case); nil
    /// for anything else (CUE sheets are not read as playlists here).
    static func kind(of path: String) -> Kind? {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
        switch path[path.index(after: dot)...].lowercased() {
        case "m3u", "m3u8": return .m3u
        case "pls": return .pls
        default: return nil
        }
    }

    /// The folder part of a library path ("" at the top).
    static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    /// An entry as a library path (relative to the music folder, `.` and
    /// `..` applied) or a URL as it is; nil when it leads outside the music
    /// folder: `..` above the top, an absolute path not under `root`, a
    /// `file://` URL, or nothing left.
    /// - Parameters:
    ///   - folder: the playlist's folder in the library ("" for a stored playlist).
    ///   - root: the music folder's real absolute path.
    static func resolve(_ entry: String, folder: String, root: String) -> String? {
        if let scheme = PlaylistParsers.scheme(of: entry) { return scheme == "file" ? nil : entry }
        let relative: Substring
        if entry.hasPrefix("/") {
            let prefix = root.hasSuffix("/") ? root : root + "/"
            guard entry.hasPrefix(prefix) else { return nil }
            relative = entry.dropFirst(prefix.count)
        } else {
            relative = Substring(folder.isEmpty ? entry : folder + "/" + entry)
        }
        var parts: [Substring] = []
        for part in relative.split(separator: "/", omittingEmptySubsequences: true) {
            switch part {
            case ".": continue
            case "..":
                guard !parts.isEmpty else { return nil }
                parts.removeLast()
            default: parts.append(part)
            }
        }
        return parts.isEmpty ? nil : parts.joined(separator: "/")
    }
}
