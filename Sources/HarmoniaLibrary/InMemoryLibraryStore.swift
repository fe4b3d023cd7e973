// InMemoryLibraryStore — specs/library.md §LibraryStorePort
import HarmoniaCore

/// A `LibraryStorePort` in memory: for tests of the protocol adapters and for
/// tools that need no database. Every query scans all songs (fine for
/// thousands). Thread-safe: one lock guards the state; a batch's writes
/// become visible at `commitUpdate`, as in the SQLite store.
public final class InMemoryLibraryStore: LibraryStorePort, @unchecked Sendable {
    private struct Contents {
        var directories: [String: LibraryDirectory] = ["": LibraryDirectory(path: "", modified: 0)]
        var songs: [String: LibrarySong] = [:]
        var playlists: [String: LibraryPlaylist] = [:]
        var lastUpdate: Int64?
    }

    private let lock = ConditionLock()
    // Guarded by `lock`: the committed contents, the open batch's copy, closed.
    private var committed = Contents()
    private var batch: Contents?
    private var closed = false

    public init() {}

    // MARK: Queries

    public func listing(of directory: String, songOrder: LibrarySongOrder) throws(CoreError) -> LibraryListing {
        let contents = try read()
        guard contents.directories[directory] != nil else { throw .notFound("no folder '\(directory)' in the library") }
        let songs = NaturalOrder.sorted(contents.songs.values.filter { $0.directory == directory }, byName: { LibraryPath.name($0.path) })
        return LibraryListing(
            directories: NaturalOrder.sorted(contents.directories.values.filter { $0.path != "" && $0.parent == directory }, byName: { LibraryPath.name($0.path) }),
            songs: songOrder == .add ? LibraryAggregation.folderOrder(songs, namesInOrder: true) : songs,
            playlists: NaturalOrder.sorted(contents.playlists.values.filter { $0.directory == directory }, byName: { LibraryPath.name($0.path) }))
    }

    public func song(at path: String) throws(CoreError) -> LibrarySong? {
        try read().songs[path]
    }

    public func songs(matching filter: LibraryFilter) throws(CoreError) -> [LibrarySong] {
        let matcher = try LibraryFilterMatcher(filter)
        return LibraryAggregation.pathOrder(try read().songs.values.filter(matcher.matches))
    }

    public func stats() throws(CoreError) -> LibraryStats {
        let contents = try read()
        return LibraryAggregation.stats(Array(contents.songs.values), lastUpdate: contents.lastUpdate)
    }

    public func songsForAdd(under directory: String) throws(CoreError) -> [LibrarySong] {
        let contents = try read()
        guard contents.directories[directory] != nil else { throw .notFound("no folder '\(directory)' in the library") }
        return LibraryAggregation.addOrder(contents.songs.values.filter { LibraryPath.isInside($0.path, directory) })
    }

    public func allEntries(under directory: String) throws(CoreError) -> [LibraryEntry] {
        let contents = try read()
        guard contents.directories[directory] != nil else { throw .notFound("no folder '\(directory)' in the library") }
        return LibraryAggregation.allEntries(
            under: directory,
            directories: contents.directories.values.filter { LibraryPath.isInside($0.path, directory) },
            songs: contents.songs.values.filter { LibraryPath.isInside($0.path, directory) },
            playlists: contents.playlists.values.filter { LibraryPath.isInside($0.path, directory) })
    }

    // MARK: Updates

    public func beginUpdate() throws(CoreError) {
        try lock.withLock { () throws(CoreError) in
            try checkOpen()
            guard batch == nil else { throw .invalidState("a library update batch is already open") }
            batch = committed
        }
    }

    public func commitUpdate() throws(CoreError) {
        try lock.withLock { () throws(CoreError) in
            try checkOpen()
            guard let open = batch else { throw .invalidState("no library update batch is open") }
            committed = open
            batch = nil
        }
    }

    public func rollbackUpdate() {
        lock.withLock { batch = nil }
    }

    public func upsertDirectory(_ directory: LibraryDirectory) throws(CoreError) {
        try write { (c: inout Contents) throws(CoreError) in
            guard let parent = directory.parent else { c.directories[""]?.modified = directory.modified; return }
            guard c.directories[parent] != nil else { throw .notFound("folder '\(parent)' is not in the library: add it before '\(directory.path)'") }
            c.directories[directory.path] = directory
        }
    }

    public func deleteDirectory(at path: String) throws(CoreError) {
        guard !path.isEmpty else { throw .invalidArgument("the top folder cannot be deleted from the library") }
        try write { (c: inout Contents) throws(CoreError) in
            c.directories = c.directories.filter { !LibraryPath.isInside($0.key, path) }
            c.songs = c.songs.filter { !LibraryPath.isInside($0.key, path) }
            c.playlists = c.playlists.filter { !LibraryPath.isInside($0.key, path) }
        }
    }

    public func upsertSong(_ song: LibrarySong) throws(CoreError) {
        try write { (c: inout Contents) throws(CoreError) in
            guard c.directories[song.directory] != nil else { throw .notFound("folder '\(song.directory)' is not in the library: add it before '\(song.path)'") }
            c.songs[song.path] = song
        }
    }

    public func deleteSong(at path: String) throws(CoreError) {
        try write { (c: inout Contents) throws(CoreError) in c.songs[path] = nil }
    }

    public func upsertPlaylist(_ playlist: LibraryPlaylist) throws(CoreError) {
        try write { (c: inout Contents) throws(CoreError) in
            guard c.directories[playlist.directory] != nil else { throw .notFound("folder '\(playlist.directory)' is not in the library: add it before '\(playlist.path)'") }
            c.playlists[playlist.path] = playlist
        }
    }

    public func deletePlaylist(at path: String) throws(CoreError) {
        try write { (c: inout Contents) throws(CoreError) in c.playlists[path] = nil }
    }

    public func markUpdateComplete(at time: Int64) throws(CoreError) {
        try write { (c: inout Contents) throws(CoreError) in c.lastUpdate = time }
    }

    public func close() {
        lock.withLock {
            closed = true
            batch = nil
        }
    }

    // MARK: Private

    /// The committed contents (a copy: queries see no open batch).
    private func read() throws(CoreError) -> Contents {
        try lock.withLock { () throws(CoreError) -> Contents in
            try checkOpen()
            return committed
        }
    }

    /// Applies `change` to the open batch, or commits it at once outside one.
    private func write(_ change: (inout Contents) throws(CoreError) -> Void) throws(CoreError) {
        try lock.withLock { () throws(CoreError) in
            try checkOpen()
            if batch != nil { try change(&batch!) } else { try change(&committed) }
        }
    }

    /// Call with `lock` held.
    private func checkOpen() throws(CoreError) {
        if closed { throw .invalidState("the library store is closed") }
    }
}
