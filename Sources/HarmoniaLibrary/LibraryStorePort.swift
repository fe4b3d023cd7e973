// LibraryStorePort — specs/library.md §LibraryStorePort
import HarmoniaCore

/// Where the library's songs, folders and playlists are kept: queries for the
/// MPD protocol and the application, writes for `LibraryScanner`.
///
/// Paths are relative to the music directory, `/`-separated, without a
/// leading or trailing `/`; "" is the top folder, which always exists.
///
/// Threads: every method may be called from any thread, concurrently; the
/// store does its own locking. Queries see the last committed update batch,
/// never a half-written one, and stay answered while the scanner writes.
/// Every method may block on disk I/O: call none from a real-time thread.
///
/// Errors: every failure is a `CoreError` whose message names the database
/// file and what to do. A closed store throws `invalidState`; a database that
/// is corrupt or not a database throws `decodeError`; a failing disk `ioError`.
public protocol LibraryStorePort: AnyObject, Sendable {
    // MARK: Queries

    /// The folder's subfolders and playlists in natural order of name, its
    /// songs in `songOrder`.
    /// - Throws: `notFound` when the folder is not in the library.
    func listing(of directory: String, songOrder: LibrarySongOrder) throws(CoreError) -> LibraryListing

    /// `listing(of:songOrder:)` with each song as its record: what a folder
    /// listing prints, which a store may read without building each song.
    /// - Throws: `notFound` when the folder is not in the library.
    func recordListing(of directory: String, songOrder: LibrarySongOrder) throws(CoreError) -> LibraryRecordListing

    /// What the scanner compares with the disk in `directory`: the paths and
    /// modification times of its subfolders, songs (with their sizes) and
    /// playlists — `listing(of:)` without tags or order, so an unchanged
    /// folder is checked without reading its songs' rows whole.
    /// - Throws: `notFound` when the folder is not in the library.
    func stamps(of directory: String) throws(CoreError) -> LibraryFolderStamps

    /// The song at `path`, or nil when the library has none there.
    func song(at path: String) throws(CoreError) -> LibrarySong?

    /// The folder at `path` ("" is the top), or nil when the library has none there.
    func directory(at path: String) throws(CoreError) -> LibraryDirectory?

    /// The songs `filter` matches (`LibraryFilter.matches`), in natural order
    /// of path (folder by folder).
    /// - Throws: `invalidArgument` for a bad regular expression in `filter`.
    func songs(matching filter: LibraryFilter) throws(CoreError) -> [LibrarySong]

    /// The distinct values of `tag` among the songs `filter` matches, grouped
    /// by `groups` (outermost first): MPD's `list TAG [FILTER] [group G...]`.
    /// AlbumArtist falls back to Artist, and a song lacking a tag counts as "",
    /// as in MPD 0.23. Rows sorted by their values' bytes (groups first), like MPD.
    /// - Throws: `invalidArgument` for a bad regular expression in `filter`.
    func tagValues(_ tag: LibraryTag, groupedBy groups: [LibraryTag], matching filter: LibraryFilter) throws(CoreError) -> [LibraryTagRow]

    /// How many songs `filter` matches and their total length (MPD's `count`).
    /// - Throws: `invalidArgument` for a bad regular expression in `filter`.
    func count(matching filter: LibraryFilter) throws(CoreError) -> LibraryCount

    /// `count(matching:)` per value of `tag` ("" for songs lacking it), sorted
    /// by the value's bytes (MPD's `count FILTER group TAG`).
    /// - Throws: `invalidArgument` for a bad regular expression in `filter`.
    func count(matching filter: LibraryFilter, groupedBy tag: LibraryTag) throws(CoreError) -> [LibraryGroupCount]

    /// Distinct artists and albums, songs, total playtime, last completed update.
    func stats() throws(CoreError) -> LibraryStats

    /// Every song inside `directory`, recursively, in the order MPD's `add DIR`
    /// queues them: a folder's own songs (by album, disc, track, file name)
    /// before its subfolders', subfolders in natural order.
    /// - Throws: `notFound` when the folder is not in the library.
    func songsForAdd(under directory: String) throws(CoreError) -> [LibrarySong]

    /// Everything inside `directory`, recursively (MPD's `listall`): for each
    /// folder its songs, then its playlists, then each subfolder followed by
    /// its contents; the folder itself is not included.
    /// - Throws: `notFound` when the folder is not in the library.
    func allEntries(under directory: String) throws(CoreError) -> [LibraryEntry]

    /// The songs `filter` matches, handed to `body` one at a time in MPD's
    /// walk order (`LibraryAggregation.addOrder`: folder by folder, a
    /// folder's own songs before its subfolders'), as they are read: a
    /// whole-library answer never sits in memory. Stops when `body` returns
    /// false. Between two folders a committed scan batch may become visible.
    /// - Throws: `invalidArgument` for a bad regular expression in `filter`.
    func visitSongs(matching filter: LibraryFilter, _ body: (LibrarySong) -> Bool) throws(CoreError)

    /// The paths of `visitSongs(matching:)`'s songs, in its order (`list
    /// file`), each as its UTF-8 bytes, valid only during the call: a store
    /// may read less than whole songs for them, and need not make a String
    /// of each.
    /// - Throws: as `visitSongs(matching:)`.
    func visitSongPaths(matching filter: LibraryFilter, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) throws(CoreError)

    /// The folder itself as `.directory` (not the top, ""), then
    /// `allEntries(under:)`, each folder's songs in `songOrder`, handed to
    /// `body` one at a time as read (folder by folder); stops when `body`
    /// returns false (MPD's `listall`).
    /// - Throws: `notFound` when the folder is not in the library, before
    ///   `body` is called.
    func visitEntries(under directory: String, songOrder: LibrarySongOrder, _ body: (LibraryEntry) -> Bool) throws(CoreError)

    /// `visitEntries(under:songOrder:_:)` with each song as its record
    /// (what `listallinfo` prints), which a store may read without building each song.
    /// - Throws: `notFound` when the folder is not in the library.
    func visitRecordEntries(under directory: String, songOrder: LibrarySongOrder,
                            _ body: (LibraryRecordEntry) -> Bool) throws(CoreError)

    // MARK: Updates (one writer: the scanner)

    /// Starts a batch: the writes until `commitUpdate` become visible together.
    /// Writes outside a batch are committed one by one.
    /// - Throws: `invalidState` when a batch is already open.
    func beginUpdate() throws(CoreError)

    /// Makes the batch's writes visible and durable (WAL: durable at the next
    /// checkpoint or sync; a crash loses at most the last batches, never
    /// leaves half of one).
    /// - Throws: `invalidState` when no batch is open.
    func commitUpdate() throws(CoreError)

    /// Drops the open batch's writes; nothing when none is open.
    func rollbackUpdate()

    /// Adds the folder or updates its modification time.
    /// - Throws: `notFound` when its parent folder is not in the library.
    func upsertDirectory(_ directory: LibraryDirectory) throws(CoreError)

    /// Removes the folder and everything inside it; nothing when absent.
    /// - Throws: `invalidArgument` for the top folder "".
    func deleteDirectory(at path: String) throws(CoreError)

    /// Adds or replaces the song at `song.path`.
    /// - Throws: `notFound` when its folder is not in the library.
    func upsertSong(_ song: LibrarySong) throws(CoreError)

    /// Removes the song; nothing when absent.
    func deleteSong(at path: String) throws(CoreError)

    /// Adds or replaces the playlist at `playlist.path`.
    /// - Throws: `notFound` when its folder is not in the library.
    func upsertPlaylist(_ playlist: LibraryPlaylist) throws(CoreError)

    /// Removes the playlist; nothing when absent.
    func deletePlaylist(at path: String) throws(CoreError)

    /// Records that a scan completed at `time` (seconds since 1970): `stats().lastUpdate`.
    func markUpdateComplete(at time: Int64) throws(CoreError)

    /// Releases the store (an open batch is rolled back). Later calls throw
    /// `invalidState`; a second `close` does nothing.
    func close()
}

/// The order of one folder's songs in a listing.
public enum LibrarySongOrder: Sendable, Equatable {
    /// Natural order of file name.
    case name
    /// The order MPD adds and lists a folder's songs in
    /// (`LibraryAggregation.folderOrder`: album, disc, track, file name).
    case add
}

extension LibraryStorePort {
    /// The folder's subfolders, songs and playlists, each in natural order of name.
    /// - Throws: `notFound` when the folder is not in the library.
    public func listing(of directory: String) throws(CoreError) -> LibraryListing {
        try listing(of: directory, songOrder: .name)
    }

    /// The records of `listing(of:songOrder:)`'s songs, for a store that has nothing leaner.
    public func recordListing(of directory: String, songOrder: LibrarySongOrder) throws(CoreError) -> LibraryRecordListing {
        LibraryRecordListing(try listing(of: directory, songOrder: songOrder))
    }

    /// The records of `visitEntries(under:songOrder:_:)`, for a store that has nothing leaner.
    public func visitRecordEntries(under directory: String, songOrder: LibrarySongOrder,
                                   _ body: (LibraryRecordEntry) -> Bool) throws(CoreError) {
        try visitEntries(under: directory, songOrder: songOrder) { body(LibraryRecordEntry($0)) }
    }

    /// `visitEntries(under:songOrder:_:)` with each folder's songs in natural order of name.
    public func visitEntries(under directory: String, _ body: (LibraryEntry) -> Bool) throws(CoreError) {
        try visitEntries(under: directory, songOrder: .name, body)
    }

    /// The stamps of `listing(of:)`, for a store that has nothing quicker.
    public func stamps(of directory: String) throws(CoreError) -> LibraryFolderStamps {
        LibraryFolderStamps(try listing(of: directory))
    }

    /// The folder's record from its parent's listing, for a store that has nothing quicker.
    public func directory(at path: String) throws(CoreError) -> LibraryDirectory? {
        guard let parent = LibraryDirectory(path: path, modified: 0).parent else {
            return (try? listing(of: path)).map { _ in LibraryDirectory(path: path, modified: -1) }
        }
        let listing: LibraryListing
        do {
            listing = try self.listing(of: parent)
        } catch where error.category == .notFound {
            return nil
        }
        return listing.directories.first { $0.path.utf8.elementsEqual(path.utf8) }
    }

    /// The answers computed from `songs(matching:)` (LibraryAggregation),
    /// for a store that has nothing quicker.
    public func tagValues(_ tag: LibraryTag, groupedBy groups: [LibraryTag], matching filter: LibraryFilter) throws(CoreError) -> [LibraryTagRow] {
        LibraryAggregation.tagValues(tag, groupedBy: groups, in: try songs(matching: filter))
    }

    public func count(matching filter: LibraryFilter) throws(CoreError) -> LibraryCount {
        LibraryAggregation.count(try songs(matching: filter))
    }

    /// `songs(matching:)` in walk order, for a store that has nothing leaner.
    public func visitSongs(matching filter: LibraryFilter, _ body: (LibrarySong) -> Bool) throws(CoreError) {
        for song in LibraryAggregation.addOrder(try songs(matching: filter)) where !body(song) { return }
    }

    /// `visitSongs(matching:)`'s paths, for a store that has nothing leaner.
    public func visitSongPaths(matching filter: LibraryFilter, _ body: (UnsafeBufferPointer<UInt8>) -> Bool) throws(CoreError) {
        try visitSongs(matching: filter) { song in
            var path = song.path
            return path.withUTF8(body)
        }
    }

    /// `allEntries(under:)`, each folder's run of songs put in `songOrder`,
    /// for a store that has nothing leaner.
    public func visitEntries(under directory: String, songOrder: LibrarySongOrder,
                             _ body: (LibraryEntry) -> Bool) throws(CoreError) {
        var run: [LibrarySong] = []
        func endRun() -> Bool {
            defer { run.removeAll(keepingCapacity: true) }
            for song in songOrder == .add ? LibraryAggregation.folderOrder(run, namesInOrder: true) : run where !body(.song(song)) {
                return false
            }
            return true
        }
        let entries = try allEntries(under: directory)
        if !directory.isEmpty, let folder = try self.directory(at: directory), !body(.directory(folder)) { return }
        for entry in entries {
            if case .song(let song) = entry {
                run.append(song)
                continue
            }
            guard endRun(), body(entry) else { return }
        }
        _ = endRun()
    }

    public func count(matching filter: LibraryFilter, groupedBy tag: LibraryTag) throws(CoreError) -> [LibraryGroupCount] {
        LibraryAggregation.count(try songs(matching: filter), groupedBy: tag)
    }
}

extension LibraryDirectory {
    /// The folder holding this folder ("" for a top-level folder); nil for the top itself.
    public var parent: String? {
        guard !path.isEmpty else { return nil }
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }
}

extension LibraryPlaylist {
    /// The folder holding the playlist ("" for the top).
    public var directory: String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }
}

/// Path helpers shared by the stores.
enum LibraryPath {
    /// The last component of `path` (the whole path at the top level).
    static func name(_ path: String) -> String {
        // Bytes: "/" is one byte in UTF-8, never part of another character's.
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return path }
        return String(path[path.utf8.index(after: slash)...])
    }

    /// True when `path` is `directory` or inside it ("" contains everything).
    static func isInside(_ path: String, _ directory: String) -> Bool {
        guard !directory.isEmpty else { return true }
        // Bytes, not Characters: "a" + U+0301 is not inside "a".
        let prefix = Array(directory.utf8)
        let bytes = path.utf8
        guard bytes.starts(with: prefix) else { return false }
        return bytes.count == prefix.count || bytes.dropFirst(prefix.count).first == UInt8(ascii: "/")
    }
}
