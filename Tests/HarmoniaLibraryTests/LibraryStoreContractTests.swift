// LibraryStorePort's contract, on every store — specs/library.md §LibraryStorePort, §Queries
import HarmoniaCore
import HarmoniaLibrary
import Testing

@Suite struct LibraryStoreContractTests {
    /// A store holding `SampleLibrary.songs`, a playlist and an empty folder.
    private func sampleStore(_ kind: StoreKind) throws -> (any LibraryStorePort, TemporaryFolder) {
        let (store, folder) = try kind.make()
        try store.add(SampleLibrary.songs)
        try store.upsertDirectory(LibraryDirectory(path: "Empty", modified: 3))
        try store.upsertPlaylist(LibraryPlaylist(path: "Loose/all.m3u", modified: 4))
        return (store, folder)
    }

    @Test(arguments: StoreKind.allCases)
    func listingIsInNaturalOrderAndMissingFolderIsNotFound(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { store.close(); folder.remove() }
        let top = try store.listing(of: "")
        #expect(top.directories.map(\.path) == ["Compilations", "Empty", "Kraftwerk", "Loose", "Sigur Rós"])
        #expect(top.songs.isEmpty)
        let loose = try store.listing(of: "Loose")
        #expect(loose.songs.map(\.path) == ["Loose/track2.wav", "Loose/track10.wav"])
        #expect(loose.playlists == [LibraryPlaylist(path: "Loose/all.m3u", modified: 4)])
        #expect(try store.listing(of: "Sigur Rós/Takk").songs.map(\.path)
                == ["Sigur Rós/Takk/01 Takk.flac", "Sigur Rós/Takk/02 Glósóli.flac", "Sigur Rós/Takk/10 Mílanó.flac"])
        #expect(throws: CoreError.self) { try store.listing(of: "Nope") }
        do { _ = try store.listing(of: "Nope"); Issue.record("no error") } catch { #expect(error.category == .notFound) }
    }

    @Test(arguments: StoreKind.allCases)
    func stampsAreTheListingsPathsTimesAndSizes(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { store.close(); folder.remove() }
        for directory in ["", "Loose", "Sigur Rós/Takk", "Empty"] {
            #expect(try store.stamps(of: directory) == LibraryFolderStamps(try store.listing(of: directory)), "\(directory)")
        }
        let loose = try store.stamps(of: "Loose")
        #expect(loose.songs["Loose/track2.wav"] == .init(modified: SampleLibrary.songs.first { $0.path == "Loose/track2.wav" }?.modified ?? -1,
                                                          size: SampleLibrary.songs.first { $0.path == "Loose/track2.wav" }?.size ?? -1))
        #expect(loose.playlists == ["Loose/all.m3u": 4])
        #expect(try store.stamps(of: "").directories["Empty"] == 3)
        do { _ = try store.stamps(of: "Nope"); Issue.record("no error") } catch { #expect(error.category == .notFound) }
    }

    @Test(arguments: StoreKind.allCases)
    func songByPathRoundTripsEveryField(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { store.close(); folder.remove() }
        let original = SampleLibrary.songs[3]
        #expect(try store.song(at: original.path) == original)
        #expect(try store.song(at: "Kraftwerk/Autobahn/none.mp3") == nil)
    }

    @Test(arguments: StoreKind.allCases)
    func filtersSelectSongsInPathOrder(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { store.close(); folder.remove() }
        func paths(_ filter: LibraryFilter) throws -> [String] { try store.songs(matching: filter).map(\.path) }

        #expect(try paths(.and([])).count == SampleLibrary.songs.count)
        #expect(try paths(.tag(.artist, TagMatch(.equals, "Sigur Rós")))
                == ["Sigur Rós/Takk/01 Takk.flac", "Sigur Rós/Takk/02 Glósóli.flac", "Sigur Rós/Takk/10 Mílanó.flac"])
        #expect(try paths(.tag(.artist, TagMatch(.equals, "sigur rós"))).isEmpty)
        #expect(try paths(.tag(.artist, TagMatch(.contains, "SIGUR RÓS", foldCase: true))).count == 3)
        #expect(try paths(.tag(.artist, TagMatch(.contains, "sigur ros", foldCase: true))).isEmpty)
        #expect(try paths(.tag(.artist, TagMatch(.equals, "strasse", foldCase: true)))
                == ["Compilations/Mix/a.ogg", "Compilations/Mix/b.ogg"])
        #expect(try paths(.base("Loose")) == ["Loose/track2.wav", "Loose/track10.wav"])
        #expect(try paths(.base("Loo")).isEmpty)
        #expect(try paths(.modifiedSince(2_000)) == ["Kraftwerk/Autobahn/1 Autobahn.mp3"])
        // AlbumArtist falls back to Artist (MPD): Sigur Rós has none.
        #expect(try paths(.tag(.albumArtist, TagMatch(.equals, "Sigur Rós"))).count == 3)
        #expect(try paths(.and([.base("Compilations"), .not(.tag(.albumArtist, TagMatch(.equals, "Various Artists")))]))
                == ["Compilations/Mix/c.ogg"])
        // An absent tag equals "" (MPD): songs without a genre.
        #expect(try paths(.and([.base("Compilations"), .tag(.genre, TagMatch(.equals, ""))])).count == 3)
        #expect(try paths(.file(TagMatch(.equals, "Loose/track2.wav"))) == ["Loose/track2.wav"])
        #expect(try paths(.anyTag(TagMatch(.contains, "autobahn", foldCase: true))) == ["Kraftwerk/Autobahn/1 Autobahn.mp3"])
        #expect(try paths(.tag(.title, TagMatch(.regex, "^M.lan"))) == ["Sigur Rós/Takk/10 Mílanó.flac"])
    }

    @Test(arguments: StoreKind.allCases)
    func badRegexIsInvalidArgument(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { store.close(); folder.remove() }
        for pattern in ["(unclosed", String(repeating: "a", count: 1025)] {
            do {
                _ = try store.songs(matching: .tag(.title, TagMatch(.regex, pattern)))
                Issue.record("no error for \(pattern.prefix(20))")
            } catch {
                #expect(error.category == .invalidArgument)
            }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func tagValuesListEmptyForMissingTagsAndGroup(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { store.close(); folder.remove() }
        let albums = try store.tagValues(.album, groupedBy: [], matching: .and([]))
        #expect(albums.map(\.value) == ["", "Autobahn", "Mix", "Takk"])
        let grouped = try store.tagValues(.album, groupedBy: [.albumArtist], matching: .not(.base("Loose")))
        #expect(grouped == [
            LibraryTagRow(groups: ["Kraftwerk"], value: "Autobahn"),
            LibraryTagRow(groups: ["Nobody"], value: "Mix"),
            LibraryTagRow(groups: ["Sigur Rós"], value: "Takk"),
            LibraryTagRow(groups: ["Various Artists"], value: "Mix"),
        ])
        // Byte order, as MPD's std::map: "STRASSE" < "Straße".
        #expect(try store.tagValues(.artist, groupedBy: [], matching: .base("Compilations")).map(\.value)
                == ["Nobody", "STRASSE", "Straße"])
    }

    @Test(arguments: StoreKind.allCases)
    func countTotalsAndGroups(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { store.close(); folder.remove() }
        #expect(try store.count(matching: .base("Sigur Rós")) == LibraryCount(songs: 3, playtime: 372.5 + 55.25 + 644))
        let byGenre = try store.count(matching: .and([]), groupedBy: .genre)
        #expect(byGenre.map(\.value) == ["", "Electronic", "Post-rock"])
        #expect(byGenre[0].count == LibraryCount(songs: 5, playtime: 302))
        #expect(byGenre[2].count.songs == 3)
    }

    @Test(arguments: StoreKind.allCases)
    func statsCountDistinctArtistsAlbumsAndLastUpdate(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { store.close(); folder.remove() }
        var stats = try store.stats()
        #expect(stats == LibraryStats(artists: 5, albums: 3, songs: 9, playtime: 372.5 + 55.25 + 644 + 1357 + 300 + 2, lastUpdate: nil))
        try store.markUpdateComplete(at: 1_700_000_000)
        stats = try store.stats()
        #expect(stats.lastUpdate == 1_700_000_000)
    }

    @Test(arguments: StoreKind.allCases)
    func songsForAddFollowAlbumDiscTrackThenSubfolders(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { store.close(); folder.remove() }
        try store.add([SampleLibrary.song("Compilations/zz-top.ogg", [.album: "Zeta"]),
                       SampleLibrary.song("Compilations/Mix/Bonus/x.ogg", [:])])
        #expect(try store.songsForAdd(under: "Compilations").map(\.path) == [
            "Compilations/zz-top.ogg",
            "Compilations/Mix/c.ogg",  // no disc sorts first
            "Compilations/Mix/a.ogg",  // disc 1
            "Compilations/Mix/b.ogg",  // disc 2
            "Compilations/Mix/Bonus/x.ogg",
        ])
        #expect(try store.songsForAdd(under: "Sigur Rós").map { $0.first(.track) } == ["1", "2", "10"])
        #expect(try store.songsForAdd(under: "").count == SampleLibrary.songs.count + 2)
        #expect(throws: CoreError.self) { try store.songsForAdd(under: "Missing") }
    }

    @Test(arguments: StoreKind.allCases)
    func allEntriesListSongsPlaylistsThenEachSubfolder(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { store.close(); folder.remove() }
        let entries = try store.allEntries(under: "")
        #expect(entries.map(\.path) == [
            "Compilations", "Compilations/Mix", "Compilations/Mix/a.ogg", "Compilations/Mix/b.ogg", "Compilations/Mix/c.ogg",
            "Empty",
            "Kraftwerk", "Kraftwerk/Autobahn", "Kraftwerk/Autobahn/1 Autobahn.mp3",
            "Loose", "Loose/track2.wav", "Loose/track10.wav", "Loose/all.m3u",
            "Sigur Rós", "Sigur Rós/Takk", "Sigur Rós/Takk/01 Takk.flac", "Sigur Rós/Takk/02 Glósóli.flac", "Sigur Rós/Takk/10 Mílanó.flac",
        ])
        if case .directory(let first) = entries[0] { #expect(first.modified == 1) } else { Issue.record("not a folder first") }
        #expect(try store.allEntries(under: "Loose").map(\.path) == ["Loose/track2.wav", "Loose/track10.wav", "Loose/all.m3u"])
    }

    /// MPD lists a folder's songs in add order (album, disc, track, name):
    /// the store hands them so, read in that order where it keeps the ranks.
    @Test(arguments: StoreKind.allCases)
    func listingsAndEntriesInAddOrderAreTheFolderOrderOfTheNameOrder(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { store.close(); folder.remove() }
        func song(_ name: String, track: String?, album: String = "B") -> LibrarySong {
            var tags: [LibraryTag: [String]] = [.album: [album]]
            tags[.track] = track.map { [$0] }
            return LibrarySong(path: "Order/" + name, modified: 5, size: 1, tags: tags)
        }
        try store.upsertDirectory(LibraryDirectory(path: "Order", modified: 5))
        try store.add([song("a.flac", track: "3"), song("b.flac", track: "1"), song("c10.flac", track: nil),
                       song("c9.flac", track: nil), song("d.flac", track: "2", album: "A")])
        #expect(try store.listing(of: "Order", songOrder: .add).songs.map(\.path)
                == ["Order/d.flac", "Order/c9.flac", "Order/c10.flac", "Order/b.flac", "Order/a.flac"])
        for directory in ["", "Order", "Loose", "Sigur Rós/Takk", "Compilations/Mix", "Kraftwerk/Autobahn", "Empty"] {
            let byName = try store.listing(of: directory)
            let byAdd = try store.listing(of: directory, songOrder: .add)
            #expect(byAdd.songs == LibraryAggregation.folderOrder(byName.songs, namesInOrder: true), "\(directory)")
            #expect(byAdd.directories == byName.directories && byAdd.playlists == byName.playlists)
        }
        var visited: [LibraryEntry] = []
        try store.visitEntries(under: "", songOrder: .add) { visited.append($0); return true }
        var expected: [LibraryEntry] = [], run: [LibrarySong] = []
        for entry in try store.allEntries(under: "") + [.directory(LibraryDirectory(path: "end", modified: 0))] {
            if case .song(let song) = entry { run.append(song); continue }
            expected += LibraryAggregation.folderOrder(run, namesInOrder: true).map(LibraryEntry.song)
            run = []
            expected.append(entry)
        }
        #expect(visited == Array(expected.dropLast()))
        #expect(visited.filter { if case .song = $0 { true } else { false } }.count == SampleLibrary.songs.count + 5)
    }

    /// The songs and folders (marked "/") under `directory` in walk order, from listings alone.
    private func walkOrder(_ store: any LibraryStorePort, _ directory: String) throws -> [String] {
        let listing = try store.listing(of: directory, songOrder: .add)
        return try listing.songs.map(\.path) + listing.directories.flatMap { ["/" + $0.path] + (try walkOrder(store, $0.path)) }
    }

    /// A walk longer than one read (SQLite reads about 2,000 songs at a
    /// time, several folders with one statement when a scan added them in
    /// walk order) gives every song once, in tree order, also after folders
    /// were added between others and deleted; and it stops when told to.
    @Test(arguments: StoreKind.allCases)
    func aLongWalkOfFoldersAddedInAndOutOfOrderIsInTreeOrder(kind: StoreKind) throws {
        let (store, folder) = try kind.make()
        defer { store.close(); folder.remove() }
        func album(_ path: String, _ count: Int) -> [LibrarySong] {
            (1...count).reversed().map { SampleLibrary.song("\(path)/\($0) x.flac", [.album: path, .track: "\($0)"]) }
        }
        try store.add((1...12).flatMap { artist in (1...3).flatMap { album("Art \(artist)/Alb \($0)", 70) } })
        try store.add(album("Art 5/Alb 2b", 30) + album("Art 0/Alb 1", 5) + album("Art 12/Alb 0", 3))
        try store.deleteDirectory(at: "Art 7/Alb 1")
        try store.deleteDirectory(at: "Art 9")
        // A song deleted, and one moved within its folder by a new track number.
        try store.deleteSong(at: "Art 5/Alb 2/3 x.flac")
        try store.upsertSong(SampleLibrary.song("Art 3/Alb 1/2 x.flac", [.album: "Art 3/Alb 1", .track: "99"]))
        let entries = try walkOrder(store, "")
        let expected = entries.filter { !$0.hasPrefix("/") }
        #expect(expected.count == 12 * 3 * 70 + 38 - 4 * 70 - 1)
        #expect(expected.firstIndex(of: "Art 3/Alb 1/2 x.flac") == expected.firstIndex(of: "Art 3/Alb 1/70 x.flac").map { $0 + 1 })
        #expect(Set(expected).count == expected.count)
        var paths: [String] = [], songs: [String] = [], records: [String] = []
        try store.visitSongPaths(matching: .and([])) { paths.append(String(decoding: $0, as: UTF8.self)); return true }
        try store.visitSongs(matching: .and([])) { songs.append($0.path); return true }
        /// A song's path, or a folder's marked "/".
        func name(_ entry: LibraryRecordEntry) -> [String] {
            switch entry {
            case .song(let record): [record.path]
            case .directory(let directory): ["/" + directory.path]
            case .playlist: []
            }
        }
        try store.visitRecordEntries(under: "", songOrder: .add) { records += name($0); return true }
        // Compared without printing thousands of paths: the first difference.
        func firstDifference(_ got: [String], _ wanted: [String]) -> String? {
            guard got != wanted else { return nil }
            let at = zip(got, wanted).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(got.count, wanted.count)
            return "at \(at) of \(wanted.count): \(got.dropFirst(at).prefix(3)) instead of \(wanted.dropFirst(at).prefix(3))"
        }
        #expect(firstDifference(paths, expected) == nil)
        #expect(firstDifference(songs, expected) == nil)
        #expect(firstDifference(records, entries) == nil)
        var under: [String] = []
        try store.visitSongs(matching: .base("Art 5")) { under.append($0.path); return true }
        #expect(firstDifference(under, expected.filter { $0.hasPrefix("Art 5/") }) == nil)
        // Under a folder: the folder itself first (MPD's listall), then its contents.
        var artist: [String] = []
        try store.visitRecordEntries(under: "Art 5", songOrder: .add) { artist += name($0); return true }
        #expect(firstDifference(artist, ["/Art 5"] + (try walkOrder(store, "Art 5"))) == nil)
        var called = false
        do {
            try store.visitRecordEntries(under: "Art 9", songOrder: .add) { _ in called = true; return true }
            Issue.record("no error")
        } catch {
            #expect(error.category == .notFound && !called)
        }
        var stopped = 0
        try store.visitSongPaths(matching: .and([])) { _ in stopped += 1; return stopped < 2_100 }
        #expect(stopped == 2_100)
    }

    @Test(arguments: StoreKind.allCases)
    func recordListingsAreTheRecordsOfTheListings(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { store.close(); folder.remove() }
        // Values no line can hold, several values, and a tag the records print after Disc.
        try store.add([
            LibrarySong(path: "Odd/1 lyrics.flac", modified: 7, size: 1,
                        tags: [.title: ["line one\nline two"], .artist: ["A", "B"], .comment: ["tab\there"]], duration: 1.5),
            LibrarySong(path: "Odd/2 ids.flac", modified: 8, size: 1,
                        tags: [.musicBrainzTrackID: ["id"], .disc: ["1"], .artist: ["A"]], format: "44100:16:2"),
        ])
        for directory in ["", "Loose", "Sigur Rós/Takk", "Compilations/Mix", "Odd", "Empty"] {
            for order in [LibrarySongOrder.name, .add] {
                let records = try store.recordListing(of: directory, songOrder: order)
                #expect(records == LibraryRecordListing(try store.listing(of: directory, songOrder: order)), "\(directory) \(order)")
            }
        }
        for directory in ["", "Compilations", "Odd"] {
            for order in [LibrarySongOrder.name, .add] {
                var entries: [LibraryRecordEntry] = [], records: [LibraryRecordEntry] = []
                try store.visitEntries(under: directory, songOrder: order) { entries.append(LibraryRecordEntry($0)); return true }
                try store.visitRecordEntries(under: directory, songOrder: order) { records.append($0); return true }
                #expect(records == entries, "\(directory) \(order)")
                #expect(!records.isEmpty)
            }
        }
        var visited = 0
        try store.visitRecordEntries(under: "", songOrder: .add) { _ in visited += 1; return visited < 3 }
        #expect(visited == 3)
        let odd = try store.recordListing(of: "Odd", songOrder: .name).songs
        #expect(odd.map(\.tags) == [.values([.title: ["line one\nline two"], .artist: ["A", "B"], .comment: ["tab\there"]]),
                                    .lines(try #require(LibraryTagLines(text: "Artist: A\nDisc: 1\nMUSICBRAINZ_TRACKID: id\n")))])
        do { _ = try store.recordListing(of: "Nope", songOrder: .add); Issue.record("no error") } catch { #expect(error.category == .notFound) }
    }

    @Test(arguments: StoreKind.allCases)
    func batchIsInvisibleUntilCommittedAndRollbackDropsIt(kind: StoreKind) throws {
        let (store, folder) = try kind.make()
        defer { store.close(); folder.remove() }
        try store.beginUpdate()
        #expect(throws: CoreError.invalidState("a library update batch is already open")) { try store.beginUpdate() }
        try store.upsertDirectory(LibraryDirectory(path: "A", modified: 1))
        try store.upsertSong(SampleLibrary.song("A/x.flac", [.title: "X"]))
        #expect(try store.song(at: "A/x.flac") == nil)
        try store.commitUpdate()
        #expect(try store.song(at: "A/x.flac")?.first(.title) == "X")

        try store.beginUpdate()
        try store.deleteSong(at: "A/x.flac")
        store.rollbackUpdate()
        #expect(try store.song(at: "A/x.flac") != nil)
        #expect(throws: CoreError.self) { try store.commitUpdate() }
    }

    @Test(arguments: StoreKind.allCases)
    func writesNeedTheirFolderAndDeletingAFolderDeletesItsContents(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { store.close(); folder.remove() }
        do { try store.upsertSong(SampleLibrary.song("Nowhere/x.flac", [:])); Issue.record("no error") } catch { #expect(error.category == .notFound) }
        do { try store.upsertDirectory(LibraryDirectory(path: "No/Parent", modified: 1)); Issue.record("no error") } catch { #expect(error.category == .notFound) }
        do { try store.deleteDirectory(at: ""); Issue.record("no error") } catch { #expect(error.category == .invalidArgument) }
        try store.deleteDirectory(at: "Compilations")
        #expect(try store.songs(matching: .base("Compilations")).isEmpty)
        #expect(throws: CoreError.self) { try store.listing(of: "Compilations/Mix") }
        #expect(try store.stats().songs == SampleLibrary.songs.count - 3)
        try store.deletePlaylist(at: "Loose/all.m3u")
        #expect(try store.listing(of: "Loose").playlists.isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func closedStoreThrowsInvalidState(kind: StoreKind) throws {
        let (store, folder) = try sampleStore(kind)
        defer { folder.remove() }
        store.close()
        store.close()
        do { _ = try store.stats(); Issue.record("no error") } catch { #expect(error.category == .invalidState) }
        do { try store.beginUpdate(); Issue.record("no error") } catch { #expect(error.category == .invalidState) }
    }
}
