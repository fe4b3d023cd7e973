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
/// threads, so playback does not wait for a scan; a run of changed files is
/// read together across folders. Writes are committed in batches (every
/// `commitRows` rows or `commitSeconds`, whichever first), each leaving
/// the store consistent, so a scan killed at any point loses at most the
/// batch in progress, and the next scan completes the work.
public final class LibraryScanner: Sendable {
    /// Reads a file's tags and stream facts, given its absolute path
    /// (`FFmpegTagReaderAdapter().readHeaders(url:)`: no audio decoded).
    public typealias TagReader = @Sendable (String) throws(CoreError) -> (tags: TagBundle, stream: StreamInfo)

    public struct Options: Sendable {
        /// Follow symbolic links that lead outside the music directory (MPD's
        /// `follow_outside_symlinks`, which defaults to yes there; here no).
        public var followSymlinksOutside: Bool
        /// Changed files read together (across folders) before their songs are written.
        public var batchSize: Int
        /// Rows written (songs, folders, playlists, removals) before a commit.
        public var commitRows: Int
        /// Seconds after which the writes so far are committed at the next write.
        public var commitSeconds: Double
        /// Threads reading tags at once (each at nice 10).
        public var readers: Int

        public init(followSymlinksOutside: Bool = false, batchSize: Int = 64, commitRows: Int = 2_000,
                    commitSeconds: Double = 1,
                    readers: Int = min(2, max(1, ProcessInfo.processInfo.activeProcessorCount))) {
            self.followSymlinksOutside = followSymlinksOutside
            self.batchSize = max(1, batchSize)
            self.commitRows = max(1, commitRows)
            self.commitSeconds = commitSeconds.isFinite ? max(0, commitSeconds) : 1
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
        do {
            try walk.write { (store) throws(CoreError) in try store.upsertDirectory(LibraryDirectory(path: "", modified: top.modified)) }
            try walk.visit(relative: "", absolute: root, ancestors: [top.identity])
            try walk.readQueued()
            try walk.finishReading()
            try walk.commit()
        } catch {
            walk.rollback()
            throw error
        }
        if !cancellation.isCancelled {
            try store.markUpdateComplete(at: now())
            walk.summary.completed = true
        }
        let elapsed = ContinuousClock.now - start
        walk.summary.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return walk.summary
    }

    /// One scan's state: the summary so far, the changed files waiting to
    /// be read, the open batch. Scanning thread only.
    private struct Walk {
        let scanner: LibraryScanner
        let cancellation: LibraryScanCancellation
        let pool: TagReadPool
        var summary = LibraryScanSummary()
        /// Changed files to read, in walk order, from any folders.
        var queue: [Changed] = []
        /// The files the pool is reading (submitted, not yet collected).
        var reading: [Changed]?
        /// The open batch: rows written, when it began; nil when none is open.
        var batch: (rows: Int, began: ContinuousClock.Instant)?

        /// A changed audio file: its entry, its folder (relative and
        /// absolute), and whether the library had it.
        struct Changed {
            let entry: DirectoryEntry
            let relative: String
            let absolute: String
            let stored: Bool

            /// The song's path in the library.
            var songPath: String { relative.isEmpty ? entry.name : relative + "/" + entry.name }
        }

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

            // A folder new to the library (a first scan's every folder) has
            // nothing to compare: its paths are not hashed.
            let isNew = stored.directories.isEmpty && stored.songs.isEmpty && stored.playlists.isEmpty
            if !isNew {
                try removeGone(stored: stored, folders: Set(folders.map { path($0.name) }),
                               songs: Set(audio.map { path($0.name) }), playlists: Set(playlists.map { path($0.name) }))
            }

            let changed = NaturalOrder.sorted(isNew ? audio : audio.filter { entry in
                guard let song = stored.songs[path(entry.name)] else { return true }
                return song.modified != entry.modified || song.size != entry.size
            }, byName: \.name)
            for entry in changed {
                queue.append(Changed(entry: entry, relative: relative, absolute: absolute,
                                     stored: !isNew && stored.songs[path(entry.name)] != nil))
                if queue.count >= scanner.options.batchSize { try readQueued() }
            }

            let changedPlaylists = isNew ? playlists : playlists.filter { stored.playlists[path($0.name)] != $0.modified }
            if !changedPlaylists.isEmpty {
                try write(rows: changedPlaylists.count) { (store) throws(CoreError) in
                    for entry in changedPlaylists { try store.upsertPlaylist(LibraryPlaylist(path: path(entry.name), modified: entry.modified)) }
                }
            }

            for folder in folders {
                guard !cancellation.isCancelled else { return }
                let child = LibraryDirectory(path: path(folder.name), modified: folder.modified)
                if isNew || stored.directories[child.path] != child.modified {
                    try write { (store) throws(CoreError) in try store.upsertDirectory(child) }
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
            try write(rows: goneFolders.count + goneSongs.count + gonePlaylists.count) { (store) throws(CoreError) in
                for folder in goneFolders { try store.deleteDirectory(at: folder) }
                for song in goneSongs { try store.deleteSong(at: song) }
                for playlist in gonePlaylists { try store.deletePlaylist(at: playlist) }
            }
            summary.removed += removed
        }

        /// Starts reading the tags of the queued files (on the pool's
        /// threads), and writes the songs of the files read before them
        /// meanwhile: the reads of one batch overlap the writes of the one
        /// before. Stops reading when cancelled.
        mutating func readQueued() throws(CoreError) {
            guard !queue.isEmpty else { return }
            let chunk = queue
            queue.removeAll(keepingCapacity: true)
            guard !cancellation.isCancelled else { return }
            let previous = reading.map { ($0, pool.collect()) }
            pool.submit(chunk.map { file in
                TagReadPool.File(absolute: file.absolute + "/" + file.entry.name, songPath: file.songPath,
                                 modified: file.entry.modified, size: file.entry.size)
            }, cancellation: cancellation)
            reading = chunk
            if let previous { try writeRead(previous.0, previous.1) }
        }

        /// Waits for the files being read and writes their songs.
        mutating func finishReading() throws(CoreError) {
            guard let files = reading else { return }
            reading = nil
            try writeRead(files, pool.collect())
        }

        /// Writes the songs of `files` from their read `results` (nil: not
        /// read, the scan was cancelled); a file that could not be read is
        /// skipped, and removed when the library had it.
        private mutating func writeRead(_ files: [Changed], _ results: [TagReadPool.Result?]) throws(CoreError) {
            var upserts: [(LibrarySong, stored: Bool)] = []
            var deletes: [String] = []
            for (file, result) in zip(files, results) {
                guard let result else { continue }  // cancelled before it was read
                switch result {
                case .success(let song):
                    upserts.append((song, file.stored))
                case .failure(let error):
                    scanner.warn("skipped '\(file.absolute)/\(file.entry.name)': \(error.message)")
                    summary.skipped += 1
                    if file.stored { deletes.append(file.songPath) }
                }
            }
            guard !upserts.isEmpty || !deletes.isEmpty else { return }
            try write(rows: upserts.count + deletes.count) { (store) throws(CoreError) in
                for (song, _) in upserts { try store.upsertSong(song) }
                for path in deletes { try store.deleteSong(at: path) }
            }
            for (_, stored) in upserts {
                if stored { summary.updated += 1 } else { summary.added += 1 }
            }
            summary.removed += deletes.count
        }

        /// Runs `body`'s writes (`rows` of them, on the store it is given) in the open batch, opening
        /// one if needed; commits the batch once it holds `commitRows` rows
        /// or is `commitSeconds` old. A failure is thrown with the batch
        /// still open: the caller rolls it back (`rollback`).
        mutating func write(rows: Int = 1, _ body: (any LibraryStorePort) throws(CoreError) -> Void) throws(CoreError) {
            if batch == nil {
                try store.beginUpdate()
                batch = (0, ContinuousClock.now)
            }
            try body(scanner.store)
            batch!.rows += rows
            let age = ContinuousClock.now - batch!.began
            if batch!.rows >= scanner.options.commitRows || age >= .seconds(scanner.options.commitSeconds) { try commit() }
        }

        /// Commits the open batch, if any.
        mutating func commit() throws(CoreError) {
            guard batch != nil else { return }
            batch = nil
            try store.commitUpdate()
        }

        /// Drops the open batch's writes, if any.
        mutating func rollback() {
            guard batch != nil else { return }
            batch = nil
            store.rollbackUpdate()
        }
    }
}
