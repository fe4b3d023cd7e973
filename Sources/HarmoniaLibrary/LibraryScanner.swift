// LibraryScanner — specs/library.md §Scanner
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import HarmoniaCore
import Synchronization

/// Stops a scan between two files. Any thread.
public final class LibraryScanCancellation: Sendable {
    private let cancelled = Atomic<Bool>(false)

    public init() {}

    /// Asks the scan to stop before its next file; it commits what it has read.
    public func cancel() { cancelled.store(true, ordering: .releasing) }

    public var isCancelled: Bool { cancelled.load(ordering: .acquiring) }
}

/// What a scan did.
public struct LibraryScanSummary: Sendable, Equatable {
    /// Songs new to the library.
    public var added = 0
    /// Songs whose file changed (modification time or size) and were read again.
    public var updated = 0
    /// Songs gone from the disk (or no longer readable), removed from the library.
    public var removed = 0
    /// Audio files that could not be read (each reported through `warn`).
    public var skipped = 0
    /// False when the scan was cancelled: the library holds what it read so
    /// far, consistently; the next scan continues.
    public var completed = false
    /// Wall time of the scan, seconds.
    public var seconds: Double = 0

    public init() {}
}

/// Brings the library store up to date with the music directory,
/// incrementally: files are read only when new or changed (modification
/// time or size); songs, playlists and folders gone from the disk are removed.
///
/// Threads: `scan` runs on the caller's thread and blocks until done or
/// cancelled; one scan at a time. Tags are read on `Options.readers` threads
/// at nice 10 (two by default on two cores or more): below the player's
/// threads, so playback does not wait for a scan. Writes are committed
/// in small batches, each leaving the store consistent, so a scan killed at
/// any point loses at most the batch in progress, and the next scan
/// completes the work.
public final class LibraryScanner: Sendable {
    /// Reads a file's tags and stream facts, given its absolute path
    /// (`FFmpegTagReaderAdapter().readWithStreamInfo(url:)`).
    public typealias TagReader = @Sendable (String) throws(CoreError) -> (tags: TagBundle, stream: StreamInfo)

    public struct Options: Sendable {
        /// Follow symbolic links that lead outside the music directory (MPD's
        /// `follow_outside_symlinks`, which defaults to yes there; here no).
        public var followSymlinksOutside: Bool
        /// Songs read before their writes are committed together.
        public var batchSize: Int
        /// Threads reading tags at once (each at nice 10).
        public var readers: Int

        public init(followSymlinksOutside: Bool = false, batchSize: Int = 32,
                    readers: Int = min(2, max(1, ProcessInfo.processInfo.activeProcessorCount))) {
            self.followSymlinksOutside = followSymlinksOutside
            self.batchSize = max(1, batchSize)
            self.readers = min(max(1, readers), 16)
        }
    }

    public let musicDirectory: MusicDirectory
    private let store: any LibraryStorePort
    private let readTags: TagReader
    private let options: Options
    private let warn: @Sendable (String) -> Void
    private let now: @Sendable () -> Int64
    private let running = Atomic<Bool>(false)

    /// - Parameters:
    ///   - warn: one line per file skipped (unreadable, corrupt, a link
    ///     leading outside or nowhere, a folder loop). Called on the scanning thread.
    ///   - now: seconds since 1970, written as the last update when a scan completes.
    public init(musicDirectory: MusicDirectory, store: any LibraryStorePort, readTags: @escaping TagReader,
                options: Options = Options(), warn: @escaping @Sendable (String) -> Void = { _ in },
                now: @escaping @Sendable () -> Int64 = { Int64(time(nil)) }) {
        self.musicDirectory = musicDirectory
        self.store = store
        self.readTags = readTags
        self.options = options
        self.warn = warn
        self.now = now
    }

    /// Walks the music directory and updates the store; returns when done
    /// or cancelled. The last update time is written only when it completes.
    /// - Throws: `invalidState` when a scan is already running; the store's
    ///   errors (the scan stops; what was committed stays, consistent);
    ///   `notFound` when the music directory is gone.
    public func scan(cancellation: LibraryScanCancellation = LibraryScanCancellation()) throws(CoreError) -> LibraryScanSummary {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else {
            throw .invalidState("a library scan is already running")
        }
        defer { running.store(false, ordering: .releasing) }
        let start = ContinuousClock.now
        let root = musicDirectory.root
        guard let top = DirectoryReader.folderInfo(root) else {
            throw .notFound("music directory '\(root)' is gone: check that its disk is mounted")
        }
        let pool = TagReadPool(threads: options.readers, reader: readTags)
        defer { pool.close() }
        var walk = Walk(scanner: self, cancellation: cancellation, pool: pool)
        try walk.write { () throws(CoreError) in try store.upsertDirectory(LibraryDirectory(path: "", modified: top.modified)) }
        try walk.visit(relative: "", absolute: root, ancestors: [top.identity])
        if !cancellation.isCancelled {
            try store.markUpdateComplete(at: now())
            walk.summary.completed = true
        }
        let elapsed = ContinuousClock.now - start
        walk.summary.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return walk.summary
    }

    /// One scan's state: the summary so far. Scanning thread only.
    private struct Walk {
        let scanner: LibraryScanner
        let cancellation: LibraryScanCancellation
        let pool: TagReadPool
        var summary = LibraryScanSummary()

        var store: any LibraryStorePort { scanner.store }

        /// Updates the folder `relative` ("" for the top) at `absolute`, then
        /// its subfolders; `ancestors` are the real folders above it, for loops.
        mutating func visit(relative: String, absolute: String, ancestors: Set<FileIdentity>) throws(CoreError) {
            guard !cancellation.isCancelled else { return }
            let entries: [DirectoryEntry]
            do {
                entries = try DirectoryReader.entries(of: absolute, in: scanner.musicDirectory,
                                                      followOutside: scanner.options.followSymlinksOutside, warn: scanner.warn)
            } catch {
                scanner.warn("skipped folder '\(absolute)': \(error.message)")
                return
            }
            let stored: LibraryFolderStamps
            do { stored = try store.stamps(of: relative) } catch .notFound { stored = LibraryFolderStamps() }

            func path(_ name: String) -> String { relative.isEmpty ? name : relative + "/" + name }
            // Subfolders are walked, and changed files read, in natural order;
            // the rest needs no order (an unchanged folder of 1,200 files is
            // then compared, not sorted: specs/library.md §Figures).
            var folders: [DirectoryEntry] = []
            for entry in NaturalOrder.sorted(entries.filter { $0.kind == .directory }, byName: \.name) {
                if ancestors.contains(entry.identity) {
                    scanner.warn("skipped folder '\(absolute)/\(entry.name)': it loops back to a folder above it")
                } else {
                    folders.append(entry)
                }
            }
            let audio = entries.filter { $0.kind == .file && LibraryFileKind(fileName: $0.name) == .audio }
            let playlists = entries.filter { $0.kind == .file && LibraryFileKind(fileName: $0.name) == .playlist }

            try removeGone(stored: stored, folders: Set(folders.map { path($0.name) }),
                           songs: Set(audio.map { path($0.name) }), playlists: Set(playlists.map { path($0.name) }))

            let changed = NaturalOrder.sorted(audio.filter { entry in
                guard let song = stored.songs[path(entry.name)] else { return true }
                return song.modified != entry.modified || song.size != entry.size
            }, byName: \.name)
            var index = 0
            while index < changed.count, !cancellation.isCancelled {
                let chunk = changed[index..<min(index + scanner.options.batchSize, changed.count)]
                try readAndStore(chunk, relative: relative, absolute: absolute, stored: stored.songs)
                index += chunk.count
            }

            let changedPlaylists = playlists.filter { stored.playlists[path($0.name)] != $0.modified }
            if !changedPlaylists.isEmpty {
                try write { () throws(CoreError) in
                    for entry in changedPlaylists { try store.upsertPlaylist(LibraryPlaylist(path: path(entry.name), modified: entry.modified)) }
                }
            }

            for folder in folders {
                guard !cancellation.isCancelled else { return }
                let child = LibraryDirectory(path: path(folder.name), modified: folder.modified)
                if stored.directories[child.path] != child.modified {
                    try write { () throws(CoreError) in try store.upsertDirectory(child) }
                }
                try visit(relative: child.path, absolute: absolute + "/" + folder.name,
                          ancestors: ancestors.union([folder.identity]))
            }
        }

        /// Removes what the store has in this folder and the disk no longer does.
        private mutating func removeGone(stored: LibraryFolderStamps, folders: Set<String>, songs: Set<String>,
                                         playlists: Set<String>) throws(CoreError) {
            let goneFolders = stored.directories.keys.filter { !folders.contains($0) }
            let goneSongs = stored.songs.keys.filter { !songs.contains($0) }
            let gonePlaylists = stored.playlists.keys.filter { !playlists.contains($0) }
            guard !goneFolders.isEmpty || !goneSongs.isEmpty || !gonePlaylists.isEmpty else { return }
            var removed = goneSongs.count
            for folder in goneFolders { removed += try store.count(matching: .base(folder)).songs }
            try write { () throws(CoreError) in
                for folder in goneFolders { try store.deleteDirectory(at: folder) }
                for song in goneSongs { try store.deleteSong(at: song) }
                for playlist in gonePlaylists { try store.deletePlaylist(at: playlist) }
            }
            summary.removed += removed
        }

        /// Reads the tags of `chunk` (no transaction open meanwhile), then
        /// writes the songs in one batch. Stops reading when cancelled.
        private mutating func readAndStore(_ chunk: ArraySlice<DirectoryEntry>, relative: String, absolute: String,
                                           stored: [String: LibraryFolderStamps.SongStamp]) throws(CoreError) {
            var upserts: [LibrarySong] = []
            var deletes: [String] = []
            let results = pool.read(chunk.map { absolute + "/" + $0.name }, cancellation: cancellation)
            for (entry, result) in zip(chunk, results) {
                guard let result else { continue }  // cancelled before it was read
                let songPath = relative.isEmpty ? entry.name : relative + "/" + entry.name
                switch result {
                case .success(let read):
                    upserts.append(LibrarySong(path: songPath, modified: entry.modified, size: entry.size,
                                               tags: read.tags, stream: read.stream))
                case .failure(let error):
                    scanner.warn("skipped '\(absolute)/\(entry.name)': \(error.message)")
                    summary.skipped += 1
                    if stored[songPath] != nil { deletes.append(songPath) }
                }
            }
            guard !upserts.isEmpty || !deletes.isEmpty else { return }
            try write { () throws(CoreError) in
                for song in upserts { try store.upsertSong(song) }
                for path in deletes { try store.deleteSong(at: path) }
            }
            for song in upserts {
                if stored[song.path] == nil { summary.added += 1 } else { summary.updated += 1 }
            }
            summary.removed += deletes.count
        }

        /// Runs `body`'s writes as one batch: committed together, or rolled back when one fails.
        func write(_ body: () throws(CoreError) -> Void) throws(CoreError) {
            try store.beginUpdate()
            do {
                try body()
                try store.commitUpdate()
            } catch {
                store.rollbackUpdate()
                throw error
            }
        }
    }
}
