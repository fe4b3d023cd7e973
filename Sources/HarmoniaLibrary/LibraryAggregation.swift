// Query answers computed from songs — specs/library.md §Queries
//
// Pure functions over songs a store has selected, so that every store
// answers `list`, `count`, `stats` and the add order the same way.

/// Pure functions; any thread.
public enum LibraryAggregation {
    /// The distinct (groups…, value) rows of `songs`, sorted by bytes, groups
    /// first: `LibraryStorePort.tagValues`. A song with several values of a
    /// tag gives a row for each (every combination, with groups), as MPD.
    public static func tagValues(_ tag: LibraryTag, groupedBy groups: [LibraryTag],
                                 in songs: [LibrarySong]) -> [LibraryTagRow] {
        var rows = Set<LibraryTagRow>()
        for song in songs { insertRows(of: song, tag, groupedBy: groups, into: &rows) }
        return sortedRows(rows)
    }

    /// Adds the rows of one song (`tagValues`) to `rows`.
    public static func insertRows(of song: LibrarySong, _ tag: LibraryTag, groupedBy groups: [LibraryTag],
                                  into rows: inout Set<LibraryTagRow>) {
        insertRows((groups + [tag]).map { song.values(of: $0) }, into: &rows)
    }

    /// Adds the rows of one song given its values (never empty: [""] for
    /// a tag it lacks) of each group, outermost first, then of the tag:
    /// every combination.
    public static func insertRows(_ lists: [[String]], into rows: inout Set<LibraryTagRow>) {
        guard let values = lists.last else { return }
        var combinations: [[String]] = [[]]
        for group in lists.dropLast() {
            combinations = combinations.flatMap { prefix in group.map { prefix + [$0] } }
        }
        for groupValues in combinations {
            for value in values { rows.insert(LibraryTagRow(groups: groupValues, value: value)) }
        }
    }

    /// `rows` sorted by bytes, groups first.
    public static func sortedRows(_ rows: Set<LibraryTagRow>) -> [LibraryTagRow] {
        rows.sorted(by: byteLess)
    }

    /// True when row `a` sorts before row `b`: by bytes, groups first, then the value.
    public static func byteLess(_ a: LibraryTagRow, _ b: LibraryTagRow) -> Bool {
        for (x, y) in zip(a.groups, b.groups) where !x.utf8.elementsEqual(y.utf8) {
            return LibraryText.byteLess(x, y)
        }
        if a.groups.count != b.groups.count { return a.groups.count < b.groups.count }
        return LibraryText.byteLess(a.value, b.value)
    }

    /// The number of `songs` and the sum of their known durations.
    public static func count(_ songs: [LibrarySong]) -> LibraryCount {
        LibraryCount(songs: songs.count, playtime: songs.reduce(0) { $0 + playtime($1) })
    }

    /// `count` per value of `tag` ("" for songs lacking it), sorted by bytes;
    /// a song counts once under each of its values.
    public static func count(_ songs: [LibrarySong], groupedBy tag: LibraryTag) -> [LibraryGroupCount] {
        var groups: [String: LibraryCount] = [:]
        for song in songs {
            for value in song.values(of: tag) {
                groups[value, default: LibraryCount()].songs += 1
                groups[value, default: LibraryCount()].playtime += playtime(song)
            }
        }
        return groups.map { LibraryGroupCount(value: $0.key, count: $0.value) }
            .sorted { LibraryText.byteLess($0.value, $1.value) }
    }

    /// Distinct non-empty Artist and Album values (every value, no
    /// fallback), songs, playtime.
    public static func stats(_ songs: [LibrarySong], lastUpdate: Int64?) -> LibraryStats {
        let artists = Set(songs.flatMap { $0.tags[.artist] ?? [] }.filter { !$0.isEmpty }.map { Array($0.utf8) })
        let albums = Set(songs.flatMap { $0.tags[.album] ?? [] }.filter { !$0.isEmpty }.map { Array($0.utf8) })
        return LibraryStats(artists: artists.count, albums: albums.count, songs: songs.count,
                            playtime: count(songs).playtime, lastUpdate: lastUpdate)
    }

    /// `songs` in the order of `NaturalOrder.pathLess`.
    public static func pathOrder(_ songs: [LibrarySong]) -> [LibrarySong] {
        NaturalOrder.sorted(songs, byPath: \.path)
    }

    /// `songs` in MPD's `add DIR` order: folders in tree order (a folder's own
    /// songs before its subfolders'), and within a folder by Album (songs
    /// without one first), Disc, Track (absent or not a positive number
    /// first), then file name, text compared in natural order.
    public static func addOrder(_ songs: [LibrarySong]) -> [LibrarySong] {
        // Songs of one folder share its key: made once per folder.
        var folders: [String: NaturalPathKey] = [:]
        let keyed = songs.map { song in
            let directory = song.directory
            let key = folders[directory] ?? NaturalPathKey(directory)
            folders[directory] = key
            return (AddKey(song, directory: key), song)
        }
        return keyed.sorted { $0.0 < $1.0 }.map { $0.1 }
    }

    /// `addOrder` of songs whose place in their folder's `folderOrder` is
    /// known (a store's), so that only their folders are compared.
    public static func addOrder(_ songs: [(song: LibrarySong, place: Int64)]) -> [LibrarySong] {
        var folders: [String: NaturalPathKey] = [:]
        let keyed = songs.map { entry in
            let directory = entry.song.directory
            let key = folders[directory] ?? NaturalPathKey(directory)
            folders[directory] = key
            return (key, entry.place, entry.song)
        }
        return keyed.sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }.map { $0.2 }
    }

    /// `songs`, all of one folder, in `addOrder` (no folder key to compare).
    /// `namesInOrder`: `songs` are already in natural order of file name (a
    /// listing's), so a song's place stands for its name's key.
    public static func folderOrder(_ songs: [LibrarySong], namesInOrder: Bool = false) -> [LibrarySong] {
        folderOrder(songs, song: { $0 }, namesInOrder: namesInOrder)
    }

    /// `items` in the `addOrder` of their songs (`song(item)`), all of one
    /// folder: `folderOrder(_:namesInOrder:)` for what is not a song itself
    /// (a row's place, say).
    public static func folderOrder<Item>(_ items: [Item], song: (Item) -> LibrarySong, namesInOrder: Bool = false) -> [Item] {
        guard items.count > 1 else { return items }
        var albums: [String: NaturalKey] = [:]  // a folder's songs mostly share one album
        return items.enumerated().map { offset, item in
            let song = song(item)
            let album = song.first(.album).map { text in
                if let key = albums[text] { return key }
                let key = NaturalKey(text)
                albums[text] = key
                return key
            }
            return (AddKey(song, directory: nil, album: album, rank: namesInOrder ? offset : nil), item)
        }.sorted { $0.0 < $1.0 }.map { $0.1 }
    }

    /// MPD's `listall` order of everything inside `top` (given: every folder,
    /// song and playlist inside it): for each folder its songs and playlists
    /// in natural order of name, then each subfolder and its contents.
    public static func allEntries(under top: String, directories: [LibraryDirectory],
                                  songs: [LibrarySong], playlists: [LibraryPlaylist]) -> [LibraryEntry] {
        let subfolders = Dictionary(grouping: directories.filter { $0.path != top }) { $0.parent ?? "" }
        let songsByFolder = Dictionary(grouping: songs, by: \.directory)
        let playlistsByFolder = Dictionary(grouping: playlists, by: \.directory)
        var entries: [LibraryEntry] = []
        func visit(_ folder: String) {
            entries += NaturalOrder.sorted(songsByFolder[folder] ?? [], byName: { LibraryPath.name($0.path) }).map(LibraryEntry.song)
            entries += NaturalOrder.sorted(playlistsByFolder[folder] ?? [], byName: { LibraryPath.name($0.path) }).map(LibraryEntry.playlist)
            for child in NaturalOrder.sorted(subfolders[folder] ?? [], byName: { LibraryPath.name($0.path) }) {
                entries.append(.directory(child))
                visit(child.path)
            }
        }
        visit(top)
        return entries
    }

    /// A song's duration when it is a finite, non-negative number, else 0.
    static func playtime(_ song: LibrarySong) -> Double {
        guard let duration = song.duration, duration.isFinite, duration >= 0 else { return 0 }
        return duration
    }

    private struct AddKey: Comparable {
        /// nil: songs of one folder (`folderOrder`).
        let directory: NaturalPathKey?
        let album: NaturalKey?
        let disc: Int
        let track: Int
        /// The file name's key, or (songs given in natural order of name) its place.
        let name: NaturalKey?
        let rank: Int

        init(_ song: LibrarySong, directory: NaturalPathKey?) {
            self.init(song, directory: directory, album: song.first(.album).map(NaturalKey.init), rank: nil)
        }

        init(_ song: LibrarySong, directory: NaturalPathKey?, album: NaturalKey?, rank: Int?) {
            self.directory = directory
            self.album = album
            disc = Self.number(song.first(.disc))
            track = Self.number(song.first(.track))
            name = rank == nil ? NaturalKey(LibraryPath.name(song.path)) : nil
            self.rank = rank ?? 0
        }

        /// MPD's `strtol`: the leading digits, 0 when none or not positive.
        private static func number(_ text: String?) -> Int {
            guard let text else { return 0 }
            let digits = text.drop { $0 == " " }.prefix { $0.isASCII && $0.isNumber }.prefix(9)
            return Int(digits) ?? 0
        }

        static func < (x: Self, y: Self) -> Bool {
            if let a = x.directory, let b = y.directory, a != b { return a < b }
            switch (x.album, y.album) {
            case (nil, .some): return true
            case (.some, nil): return false
            case (.some(let a), .some(let b)) where a != b: return a < b
            default: break
            }
            if x.disc != y.disc { return x.disc < y.disc }
            if x.track != y.track { return x.track < y.track }
            if let a = x.name, let b = y.name { return a < b }
            return x.rank < y.rank
        }

        static func == (x: Self, y: Self) -> Bool {
            x.directory == y.directory && x.album == y.album && x.disc == y.disc && x.track == y.track && x.name == y.name
                && x.rank == y.rank
        }
    }
}
