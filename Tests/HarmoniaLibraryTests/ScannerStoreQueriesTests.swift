// What the scanner asks the store for — specs/library.md §Scanner: a folder
// is compared with the disk through `stamps(of:)` (paths, times, sizes),
// never through a whole listing with every song's tags (issue 37: an
// unchanged `update` of 1,200 files spent half its time there).
import HarmoniaCore
import HarmoniaLibrary
import HarmoniaSQLite
import HarmoniaTestSupport
import Testing

@Suite struct ScannerStoreQueriesTests {
    @Test func aRescanComparesStampsAndReadsNoListing() throws {
        let setup = try LibraryScannerTests.Setup(tree: try LibraryScannerTests.makeTree())
        defer { setup.remove() }
        let store = QueryCountingStore(setup.store)
        func scanner(_ reader: CountingReader) throws -> LibraryScanner {
            LibraryScanner(musicDirectory: try MusicDirectory(root: setup.tree.path), store: store, readTags: reader.read,
                           now: { 1_700_000_000 })
        }
        _ = try scanner(CountingReader()).scan()
        store.queries.withLock { $0 = [:] }

        let summary = try scanner(CountingReader()).scan()
        #expect(summary.completed && summary.added == 0 && summary.updated == 0 && summary.removed == 0)
        let queries = store.queries.withLock { $0 }
        #expect(queries["listing"] == nil, "\(queries)")
        #expect(queries["stamps"] == 5, "one a folder (the top, Artist, Artist/Album, Loose, Other), none for .hidden: \(queries)")

        try setup.tree.touch("Loose/track10.wav", seconds: 1_000_000)
        try setup.tree.delete("Loose/track2.wav")
        let changed = try scanner(CountingReader()).scan()
        #expect(changed.updated == 1 && changed.removed == 1)
        #expect(store.queries.withLock { $0 }["listing"] == nil)
    }
}

/// A store that counts the scanner's queries and hands every call to `base`.
private final class QueryCountingStore: LibraryStorePort, @unchecked Sendable {
    let base: any LibraryStorePort
    let queries = LockedValue<[String: Int]>([:])

    init(_ base: any LibraryStorePort) { self.base = base }

    private func count(_ name: String) { queries.withLock { $0[name, default: 0] += 1 } }

    func listing(of directory: String, songOrder: LibrarySongOrder) throws(CoreError) -> LibraryListing {
        count("listing")
        return try base.listing(of: directory, songOrder: songOrder)
    }
    func stamps(of directory: String) throws(CoreError) -> LibraryFolderStamps {
        count("stamps")
        return try base.stamps(of: directory)
    }
    func song(at path: String) throws(CoreError) -> LibrarySong? { try base.song(at: path) }
    func songs(matching filter: LibraryFilter) throws(CoreError) -> [LibrarySong] { try base.songs(matching: filter) }
    func tagValues(_ tag: LibraryTag, groupedBy groups: [LibraryTag], matching filter: LibraryFilter) throws(CoreError) -> [LibraryTagRow] {
        try base.tagValues(tag, groupedBy: groups, matching: filter)
    }
    func count(matching filter: LibraryFilter) throws(CoreError) -> LibraryCount { try base.count(matching: filter) }
    func count(matching filter: LibraryFilter, groupedBy tag: LibraryTag) throws(CoreError) -> [LibraryGroupCount] {
        try base.count(matching: filter, groupedBy: tag)
    }
    func stats() throws(CoreError) -> LibraryStats { try base.stats() }
    func songsForAdd(under directory: String) throws(CoreError) -> [LibrarySong] { try base.songsForAdd(under: directory) }
    func allEntries(under directory: String) throws(CoreError) -> [LibraryEntry] { try base.allEntries(under: directory) }
    func beginUpdate() throws(CoreError) { try base.beginUpdate() }
    func commitUpdate() throws(CoreError) { try base.commitUpdate() }
    func rollbackUpdate() { base.rollbackUpdate() }
    func upsertDirectory(_ directory: LibraryDirectory) throws(CoreError) { try base.upsertDirectory(directory) }
    func deleteDirectory(at path: String) throws(CoreError) { try base.deleteDirectory(at: path) }
    func upsertSong(_ song: LibrarySong) throws(CoreError) { try base.upsertSong(song) }
    func deleteSong(at path: String) throws(CoreError) { try base.deleteSong(at: path) }
    func upsertPlaylist(_ playlist: LibraryPlaylist) throws(CoreError) { try base.upsertPlaylist(playlist) }
    func deletePlaylist(at path: String) throws(CoreError) { try base.deletePlaylist(at: path) }
    func markUpdateComplete(at time: Int64) throws(CoreError) { try base.markUpdateComplete(at: time) }
    func close() { base.close() }
}
