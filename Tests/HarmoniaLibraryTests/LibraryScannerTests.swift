// LibraryScanner on real files with the FFmpeg tag reader — specs/library.md §Scanner
import Foundation
import HarmoniaCore
import HarmoniaLibrary
import HarmoniaSQLite
import HarmoniaTestSupport
import Testing

@Suite struct LibraryScannerTests {
    /// A tree of readable fixtures, plus hidden ones and files the library ignores.
    static func makeTree() throws -> TemporaryFolder {
        let tree = try TemporaryFolder("music")
        try tree.copyFixture("flac_s16_stereo_44k.flac", to: "Artist/Album/01 tagged.flac")
        try tree.copyFixture("mp3_cbr_stereo_44k.mp3", to: "Artist/Album/02 tagged.mp3")
        try tree.copyFixture("wav_s16_stereo_44k.wav", to: "Loose/track10.wav")
        try tree.copyFixture("wav_s24_stereo_48k.wav", to: "Loose/track2.wav")
        try tree.copyFixture("wav_f32_mono_44k.wav", to: "Loose/Track1.wav")
        try tree.copyFixture("opus_stereo_48k.opus", to: "Other/x.opus")
        try tree.write("#EXTM3U\n", to: "Loose/list.m3u")
        try tree.write("notes", to: "Loose/notes.txt")
        try tree.copyFixture("wavpack_apev2.wv", to: ".hidden/x.wv")
        try tree.copyFixture("wavpack_apev2.wv", to: "Loose/.hidden.wv")
        return tree
    }

    struct Setup {
        let tree: TemporaryFolder
        let storeFolder: TemporaryFolder
        let store: SQLiteLibraryStore
        var file: String { storeFolder.path + "/library.db" }

        init(tree: TemporaryFolder) throws {
            self.tree = tree
            storeFolder = try TemporaryFolder("db")
            store = try SQLiteLibraryStore(file: storeFolder.path + "/library.db")
        }

        func scanner(_ reader: CountingReader, warnings: WarningLog = WarningLog(), batchSize: Int = 32,
                     followOutside: Bool = false) throws -> LibraryScanner {
            LibraryScanner(musicDirectory: try MusicDirectory(root: tree.path), store: store, readTags: reader.read,
                           options: .init(followSymlinksOutside: followOutside, batchSize: batchSize),
                           warn: warnings.sink, now: { 1_700_000_000 })
        }

        func remove() { store.close(); tree.remove(); storeFolder.remove() }
    }

    @Test func fullScanStoresSongsTagsFormatsAndSkipsHiddenAndOtherFiles() throws {
        let setup = try Setup(tree: try Self.makeTree())
        defer { setup.remove() }
        let reader = CountingReader()
        let summary = try setup.scanner(reader).scan()
        #expect(summary.added == 6 && summary.updated == 0 && summary.removed == 0 && summary.skipped == 0)
        #expect(summary.completed)
        #expect(reader.count == 6)
        #expect(!reader.paths.withLock { $0 }.contains { $0.contains(".hidden") })

        let store = setup.store
        let top = try store.listing(of: "")
        #expect(top.directories.map(\.path) == ["Artist", "Loose", "Other"])
        let loose = try store.listing(of: "Loose")
        #expect(loose.songs.map(\.path) == ["Loose/Track1.wav", "Loose/track2.wav", "Loose/track10.wav"])
        #expect(loose.playlists.map(\.path) == ["Loose/list.m3u"])

        let flac = try #require(try store.song(at: "Artist/Album/01 tagged.flac"))
        #expect(flac.first(.artist) == "Harmonia Artist")
        #expect(flac.first(.albumArtist) == "Harmonia Album Artist")
        #expect(flac.first(.track) == "3" && flac.first(.disc) == "1" && flac.first(.date) == "2024")
        #expect(flac.format == "44100:16:2")
        #expect(flac.duration == 2.0)
        let attributes = try FileManager.default.attributesOfItem(atPath: setup.tree.path + "/Artist/Album/01 tagged.flac")
        #expect(flac.size == (attributes[.size] as? Int64) ?? -1)
        #expect(try store.song(at: "Loose/Track1.wav")?.format == "44100:f:1")
        #expect(try store.song(at: "Loose/track2.wav")?.format == "48000:24:2")
        #expect(try store.song(at: "Loose/track2.wav")?.duration == 0.5)
        #expect(try store.song(at: "Artist/Album/02 tagged.mp3")?.format == "44100:f:2")
        #expect(try store.stats().lastUpdate == 1_700_000_000)
        #expect(try store.integrityProblems().isEmpty)
    }

    @Test func rescanOfAnUnchangedTreeReadsNothingAndChangesNothing() throws {
        let setup = try Setup(tree: try Self.makeTree())
        defer { setup.remove() }
        _ = try setup.scanner(CountingReader()).scan()
        let before = try setup.store.allEntries(under: "")
        let reader = CountingReader()
        let summary = try setup.scanner(reader).scan()
        #expect(reader.count == 0)
        #expect(summary.added == 0 && summary.updated == 0 && summary.removed == 0 && summary.completed)
        #expect(try setup.store.allEntries(under: "") == before)
    }

    @Test func modifiedDeletedMovedAndAddedFilesAndDeletedFolders() throws {
        let setup = try Setup(tree: try Self.makeTree())
        defer { setup.remove() }
        _ = try setup.scanner(CountingReader()).scan()
        let tree = setup.tree
        try tree.touch("Loose/track10.wav", seconds: 1_000_000)           // modified
        try tree.delete("Loose/track2.wav")                               // deleted
        try tree.move("Other/x.opus", to: "Artist/Album/03 moved.opus")   // moved (Other is now empty)
        try tree.copyFixture("vorbis_stereo_44k.ogg", to: "New/Deep/n.ogg") // added in new folders
        try tree.delete("Artist/Album/02 tagged.mp3")
        let reader = CountingReader()
        let summary = try setup.scanner(reader).scan()
        #expect(summary.updated == 1)
        #expect(summary.removed == 3)  // track2, x.opus, 02 tagged.mp3
        #expect(summary.added == 2)    // 03 moved.opus, n.ogg
        #expect(reader.count == 3)
        let store = setup.store
        #expect(try store.song(at: "Loose/track10.wav")?.modified == 1_000_000)
        #expect(try store.songs(matching: .and([])).map(\.path) == [
            "Artist/Album/01 tagged.flac", "Artist/Album/03 moved.opus", "Loose/Track1.wav", "Loose/track10.wav", "New/Deep/n.ogg",
        ])
        #expect(try store.listing(of: "Other").songs.isEmpty)

        try tree.delete("New")
        let gone = try setup.scanner(CountingReader()).scan()
        #expect(gone.removed == 1)
        #expect(throws: CoreError.self) { try store.listing(of: "New/Deep") }
        #expect(try store.integrityProblems().isEmpty)
    }

    @Test func unreadableFilesAreSkippedWithOneWarningEach() throws {
        let setup = try Setup(tree: try Self.makeTree())
        defer { setup.remove() }
        try setup.tree.copy("bad/text.mp3", to: "Loose/broken.mp3")
        try setup.tree.copy("bad/empty.mp3", to: "Loose/empty.mp3")
        let warnings = WarningLog()
        let summary = try setup.scanner(CountingReader(), warnings: warnings).scan()
        #expect(summary.added == 6 && summary.skipped == 2 && summary.completed)
        #expect(warnings.all.count == 2)
        #expect(warnings.all.allSatisfy { !$0.contains("\n") && $0.hasPrefix("skipped '") })
        #expect(try setup.store.song(at: "Loose/broken.mp3") == nil)

        // A stored song whose file turns corrupt is removed.
        try setup.tree.delete("Loose/track2.wav")
        try setup.tree.copy("bad/text.mp3", to: "Loose/track2.wav")
        try setup.tree.touch("Loose/track2.wav", seconds: 123)
        let again = try setup.scanner(CountingReader()).scan()
        #expect(again.removed == 1)
        #expect(try setup.store.song(at: "Loose/track2.wav") == nil)
    }

    @Test func symlinksInsideAreFollowedOutsideAndLoopsAreNot() throws {
        let outside = try TemporaryFolder("outside")
        defer { outside.remove() }
        try outside.copyFixture("wav_f32_mono_44k.wav", to: "far.wav")
        let setup = try Setup(tree: try Self.makeTree())
        defer { setup.remove() }
        let tree = setup.tree
        try tree.symlink("Linked", to: "Artist/Album")                    // a folder inside
        try tree.symlink("Loose/alias.wav", to: tree.path + "/Loose/track10.wav")
        try tree.symlink("Away", to: outside.path)                        // a folder outside
        try tree.symlink("Loose/far.wav", to: outside.path + "/far.wav")  // a file outside
        try tree.symlink("Artist/Album/up", to: "..")                     // a loop
        try tree.symlink("Loose/dangling.wav", to: "nowhere.wav")
        let warnings = WarningLog()
        let summary = try setup.scanner(CountingReader(), warnings: warnings).scan()
        #expect(summary.completed)
        let paths = try setup.store.songs(matching: .and([])).map(\.path)
        #expect(paths.contains("Linked/01 tagged.flac"))
        #expect(paths.contains("Loose/alias.wav"))
        #expect(!paths.contains { $0.hasPrefix("Away") || $0 == "Loose/far.wav" || $0.hasPrefix("Artist/Album/up/") })
        #expect(warnings.all.contains { $0.contains("Away") && $0.contains("outside") })
        #expect(warnings.all.contains { $0.contains("loops back") })
        #expect(warnings.all.contains { $0.contains("dangling.wav") })

        let follow = try Setup(tree: try TemporaryFolder("music"))
        defer { follow.remove() }
        try follow.tree.symlink("Away", to: outside.path)
        _ = try follow.scanner(CountingReader(), followOutside: true).scan()
        #expect(try follow.store.songs(matching: .and([])).map(\.path) == ["Away/far.wav"])
    }

    @Test func searchFindsSigurRosOnlyWithItsAccent() throws {
        let tree = try TemporaryFolder("music")
        let setup = try Setup(tree: tree)
        defer { setup.remove() }
        try tree.folder("Sigur Rós")
        let made = try ProcessRunner.run("/usr/bin/env", [
            "ffmpeg", "-nostdin", "-v", "error", "-i", Fixtures.root + "/audio/wav_s16_stereo_44k.wav",
            "-metadata", "artist=Sigur Rós", "-metadata", "album=Takk", "-metadata", "track=3/12", "-metadata", "date=2005-09-12",
            "-c:a", "flac", tree.path + "/Sigur Rós/03 Glósóli.flac",
        ])
        #expect(made.status == 0, "\(made.stderrText)")
        _ = try setup.scanner(CountingReader()).scan()
        let store = setup.store
        #expect(try store.songs(matching: .tag(.artist, TagMatch(.contains, "SIGUR RÓS", foldCase: true))).count == 1)
        #expect(try store.songs(matching: .tag(.artist, TagMatch(.contains, "sigur ros", foldCase: true))).isEmpty)
        let song = try #require(try store.song(at: "Sigur Rós/03 Glósóli.flac"))
        #expect(song.first(.track) == "3" && song.first(.date) == "2005")
    }

    @Test func cancelledScanLeavesAConsistentLibraryAndTheNextScanCompletesIt() throws {
        let setup = try Setup(tree: try Self.makeTree())
        defer { setup.remove() }
        let cancellation = LibraryScanCancellation()
        let first = CountingReader(before: { number in if number == 3 { cancellation.cancel() } })
        let summary = try setup.scanner(first, batchSize: 2).scan(cancellation: cancellation)
        #expect(!summary.completed)
        // Tags are read on two threads: the read beside the third may already
        // have begun when it cancels (seen under load); what was read is kept.
        let read = first.count
        #expect((3...4).contains(read))
        #expect(summary.added == read)
        #expect(try setup.store.stats().lastUpdate == nil)
        setup.store.close()

        let reopened = try SQLiteLibraryStore(file: setup.file)
        defer { reopened.close() }
        #expect(try reopened.integrityProblems().isEmpty)
        #expect(try reopened.stats().songs == read)
        let second = CountingReader()
        let scanner = LibraryScanner(musicDirectory: try MusicDirectory(root: setup.tree.path), store: reopened,
                                     readTags: second.read, now: { 1_700_000_001 })
        let rest = try scanner.scan()
        #expect(rest.completed && rest.added == 6 - read)
        #expect(second.count == 6 - read)
        #expect(try reopened.stats().songs == 6)
        #expect(try reopened.stats().lastUpdate == 1_700_000_001)
    }

    @Test func aSecondConcurrentScanIsRefused() throws {
        let setup = try Setup(tree: try Self.makeTree())
        defer { setup.remove() }
        let scanner = LockedValue<LibraryScanner?>(nil)
        let refusal = LockedValue<CoreError?>(nil)
        let reader = CountingReader(before: { number in
            guard number == 1, let inner = scanner.withLock({ $0 }) else { return }
            do { _ = try inner.scan() } catch let error as CoreError { refusal.withLock { $0 = error } } catch {}
        })
        let outer = try setup.scanner(reader)
        scanner.withLock { $0 = outer }
        defer { scanner.withLock { $0 = nil } }  // the reader holds the scanner through `scanner`: no cycle left behind
        _ = try outer.scan()
        #expect(refusal.withLock { $0 }?.category == .invalidState)
    }
}
