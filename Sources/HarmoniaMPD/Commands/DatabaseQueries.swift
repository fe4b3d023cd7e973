// find, search, findadd, searchadd, list, count — specs/mpd-protocol.md §Queries
//
// MPD 0.23's src/command/DatabaseCommands.cxx (argument order: `position`,
// then `window`, then `sort` are taken from the end), src/db/DatabasePrint.cxx
// (list's nested groups), src/db/Count.cxx, src/db/VHelper.cxx (sort, window).
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaCore
import HarmoniaLibrary

/// What `find`/`search` select: the filter, an optional sort and a window.
struct MPDDatabaseSelection {
    enum SortKey: Equatable {
        case lastModified
        case tag(MPDTagType)
    }

    var filter: LibraryFilter
    var sort: SortKey?
    var descending = false
    var window = MPDRange.all
}

extension MPDDatabaseCommands {
    // MARK: find, search, findadd, searchadd

    /// `find FILTER [sort TYPE] [window START:END]` (`search`: case folded).
    func find(_ args: [String], foldCase: Bool, into writer: inout MPDResponseWriter) throws(MPDError) {
        let selection = try Self.parseSelection(args, foldCase: foldCase)
        if selection.sort == nil && selection.window == .all {
            // Streamed as read: no whole answer in memory.
            try visitSongs(selection.filter) { song in
                writer.appendSong(song)
                return !writer.isFull
            }
            return
        }
        for var song in try songs(selection) where !writer.isFull {
            // MPD 0.23 sorts copies (DetachedSong) that lose the audio
            // format: a sorted answer has no `Format:` lines.
            if selection.sort != nil { song.format = nil }
            writer.appendSong(song)
        }
    }

    /// `findadd FILTER [sort TYPE] [window START:END] [position POS]`: the
    /// songs `find` would list, queued. The queue is told even when nothing
    /// matched, so that it still judges the position.
    func findAdd(_ args: [String], foldCase: Bool) throws(MPDError) {
        var args = args
        var position: Int?
        if args.count >= 2 && args[args.count - 2] == "position" {
            let text = args[args.count - 1]
            if let first = text.utf8.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
                // Relative to the current song: the queue would have to resolve it.
                throw MPDError(.arg, "Relative positions are not supported: \(text)")
            }
            position = Int(try MPDArgument.unsigned(text))
            args.removeLast(2)
        }
        let selection = try Self.parseSelection(args, foldCase: foldCase)
        try library.enqueue(try songs(selection), position)
    }

    /// MPD's ParseDatabaseSelection: `window START:END` last, then `sort
    /// [-]TYPE`, then the filter (`Incorrect number of filter arguments`,
    /// `Unknown sort tag`, the range's messages).
    static func parseSelection(_ args: [String], foldCase: Bool) throws(MPDError) -> MPDDatabaseSelection {
        var args = args
        var window = MPDRange.all
        if args.count >= 2 && args[args.count - 2] == "window" {
            window = try MPDArgument.range(args[args.count - 1])
            args.removeLast(2)
        }
        var sort: MPDDatabaseSelection.SortKey?
        var descending = false
        if args.count >= 2 && args[args.count - 2] == "sort" {
            var name = Substring(args[args.count - 1])
            if name.first == "-" {
                descending = true
                name = name.dropFirst()
            }
            if asciiCaseEqual(String(name), "Last-Modified") {
                sort = .lastModified
            } else if let tag = MPDTagType(name: String(name)) {
                sort = .tag(tag)
            } else {
                throw MPDError(.arg, "Unknown sort tag")
            }
            args.removeLast(2)
        }
        let filter = try MPDFilterParser.parse(args, foldCase: foldCase)
        return MPDDatabaseSelection(filter: filter, sort: sort, descending: descending, window: window)
    }

    /// The songs `filter` matches in walk order, handed to `body` as they
    /// are read, until it returns false.
    func visitSongs(_ filter: LibraryFilter, _ body: (LibrarySong) -> Bool) throws(MPDError) {
        try checkBase(filter)
        try mapped { () throws(CoreError) in try library.store.visitSongs(matching: filter, body) }
    }

    /// The selected songs in MPD's order: walk order, then the sort (stable),
    /// then the window.
    func songs(_ selection: MPDDatabaseSelection) throws(MPDError) -> [LibrarySong] {
        try checkBase(selection.filter)
        var songs = Self.walkOrder(try mapped { () throws(CoreError) in try library.store.songs(matching: selection.filter) })
        if let sort = selection.sort {
            songs = Self.sorted(songs, by: sort, descending: selection.descending)
        }
        let start = min(Int(selection.window.start), songs.count)
        let end = min(selection.window.end.map { Int($0) } ?? songs.count, songs.count)
        guard start > 0 || end < songs.count else { return songs }
        return start < end ? Array(songs[start..<end]) : []
    }

    /// MPD's DatabaseVisitorHelper sort: Last-Modified by time, Track and
    /// Disc by their leading number (strtol), other tags by bytes (strcmp)
    /// of the sort value (a `…Sort` tag falls back to its plain tag,
    /// AlbumArtist to Artist, a missing tag is ""); stable; `-` reverses.
    static func sorted(_ songs: [LibrarySong], by key: MPDDatabaseSelection.SortKey, descending: Bool) -> [LibrarySong] {
        let indexed = Array(songs.enumerated())
        let less: (LibrarySong, LibrarySong) -> Bool
        switch key {
        case .lastModified:
            less = { descending ? $0.modified > $1.modified : $0.modified < $1.modified }
        case .tag(let tag) where tag == .track || tag == .disc:
            less = { a, b in
                let (x, y) = (leadingNumber(sortValue(a, tag)), leadingNumber(sortValue(b, tag)))
                return descending ? y < x : x < y
            }
        case .tag(let tag):
            less = { a, b in
                let (x, y) = (sortValue(a, tag), sortValue(b, tag))
                return descending ? LibraryText.byteLess(y, x) : LibraryText.byteLess(x, y)
            }
        }
        return indexed.sorted { a, b in
            if less(a.element, b.element) { return true }
            if less(b.element, a.element) { return false }
            return a.offset < b.offset
        }.map(\.element)
    }

    /// MPD's Tag::GetSortValue for the tags the library keeps.
    static func sortValue(_ song: LibrarySong, _ tag: MPDTagType) -> String {
        guard let libraryTag = fallbackTag(tag) else { return "" }
        return song.values(of: libraryTag)[0]  // the first value, as MPD's GetValue
    }

    /// The library tag MPD's fallbacks lead `tag` to: `ArtistSort` → Artist,
    /// `AlbumSort` → Album, `AlbumArtistSort` → AlbumArtist (→ Artist);
    /// nil for a tag the library does not keep (every song lacks it).
    static func fallbackTag(_ tag: MPDTagType) -> LibraryTag? {
        switch tag {
        case .artistSort: .artist
        case .albumSort: .album
        case .albumArtistSort: .albumArtist
        default: tag.libraryTag
        }
    }

    /// strtol's value of `text` (0 when it starts with no number).
    static func leadingNumber(_ text: String) -> Int {
        text.withCString { strtol($0, nil, 10) }
    }

    /// MPD's DatabaseSelection takes the filter's first top-level `base` as
    /// the folder to walk: a base that is neither a folder nor a song of the
    /// library is `No such directory`, whatever else the filter says.
    func checkBase(_ filter: LibraryFilter) throws(MPDError) {
        guard let base = Self.firstBase(filter), !base.isEmpty else { return }
        if MPDFilterParser.isSafeLocalURI(base) {
            if try mapped({ () throws(CoreError) in try library.store.directory(at: base) }) != nil { return }
            if try mapped({ () throws(CoreError) in try library.store.song(at: base) }) != nil { return }
        }
        throw .noSuchDirectory
    }

    /// The first `base` among the filter's top-level AND items, nested ANDs
    /// flattened (MPD's OptimizeSongFilter then SongFilter::GetBase).
    static func firstBase(_ filter: LibraryFilter) -> String? {
        switch filter {
        case .base(let directory): return directory
        case .and(let items):
            for item in items {
                if let base = firstBase(item) { return base }
            }
            return nil
        default: return nil
        }
    }

    // MARK: list

    /// `list TYPE [FILTER] [group GROUPTYPE…]`, and the old forms `list Album
    /// ARTIST` and `list file [FILTER]`. The groups nest with the last
    /// `group` outermost; each value is printed once under its group, in
    /// byte order, "" for songs that lack the tag (as MPD 0.23).
    func list(_ args: [String], into writer: inout MPDResponseWriter) throws(MPDError) {
        let typeName = args[0]
        var args = Array(args.dropFirst())
        if asciiCaseEqual(typeName, "file") || asciiCaseEqual(typeName, "filename") {
            let filter = args.isEmpty ? LibraryFilter.and([]) : try MPDFilterParser.parse(args, foldCase: false)
            try checkBase(filter)
            try mapped { () throws(CoreError) in
                try library.store.visitSongPaths(matching: filter) { path in
                    writer.append("file", utf8: path)
                    return !writer.isFull
                }
            }
            return
        }
        guard let type = MPDTagType(name: typeName) else { throw MPDError(.arg, "Unknown tag type: \(typeName)") }
        var filter = LibraryFilter.and([])
        if args.count == 1 && args[0].utf8.first != UInt8(ascii: "(") {
            // MPD < 0.12: `list Album ARTIST`.
            guard type == .album else { throw MPDError(.arg, "should be \"Album\" for 3 arguments") }
            filter = .tag(.artist, TagMatch(.equals, args[0]))
            args.removeAll()
        }
        var types: [MPDTagType] = []  // outermost first: the last `group` given
        while args.count >= 2 && args[args.count - 2] == "group" {
            let groupName = args[args.count - 1]
            guard let group = MPDTagType(name: groupName) else { throw MPDError(.arg, "Unknown tag type: \(groupName)") }
            guard group != type, !types.contains(group) else { throw MPDError(.arg, "Conflicting group") }
            types.append(group)
            args.removeLast(2)
        }
        types.append(type)
        if !args.isEmpty { filter = try MPDFilterParser.parse(args, foldCase: false) }
        try checkBase(filter)

        var previous: [String]?
        for row in try uniqueRows(types, matching: filter) {
            guard !writer.isFull else { return }
            // A level's header is printed when it or a level above it changed.
            let changed = previous.map { old in row.indices.first { !old[$0].utf8.elementsEqual(row[$0].utf8) } ?? row.count } ?? 0
            for level in changed..<row.count { writer.append(types[level].name, row[level]) }
            previous = row
        }
    }

    /// The distinct value tuples of `types` (outermost first) among the
    /// matching songs, sorted by bytes. A tag the library does not keep is
    /// "" for every song: its column is constant, so the store is asked for
    /// the others and "" put in its place.
    func uniqueRows(_ types: [MPDTagType], matching filter: LibraryFilter) throws(MPDError) -> [[String]] {
        let kept = types.indices.compactMap { i in Self.fallbackTag(types[i]).map { (i, $0) } }
        guard let last = kept.last else {
            let count = try mapped { () throws(CoreError) in try library.store.count(matching: filter) }
            return count.songs > 0 ? [Array(repeating: "", count: types.count)] : []
        }
        let groups = kept.dropLast()
        let rows = try mapped { () throws(CoreError) in
            try library.store.tagValues(last.1, groupedBy: groups.map(\.1), matching: filter)
        }
        return rows.map { row in
            var values = Array(repeating: "", count: types.count)
            for (k, group) in groups.enumerated() { values[group.0] = row.groups[k] }
            values[last.0] = row.value
            return values
        }
    }

    // MARK: count

    /// `count [FILTER] [group TYPE]`: `songs:` and `playtime:` (whole
    /// seconds, truncated), per value of TYPE when grouped.
    func count(_ args: [String], into writer: inout MPDResponseWriter) throws(MPDError) {
        var args = args
        var group: MPDTagType?
        if args.count >= 2 && args[args.count - 2] == "group" {
            let name = args[args.count - 1]
            guard let type = MPDTagType(name: name) else { throw MPDError(.arg, "Unknown tag type: \(name)") }
            group = type
            args.removeLast(2)
        }
        let filter = args.isEmpty ? LibraryFilter.and([]) : try MPDFilterParser.parse(args, foldCase: false)
        try checkBase(filter)
        guard let group else {
            let total = try mapped { () throws(CoreError) in try library.store.count(matching: filter) }
            appendCount(total, into: &writer)
            return
        }
        guard let tag = Self.fallbackTag(group) else {
            let total = try mapped { () throws(CoreError) in try library.store.count(matching: filter) }
            if total.songs > 0 {
                writer.append(group.name, "")
                appendCount(total, into: &writer)
            }
            return
        }
        let groups = try mapped { () throws(CoreError) in try library.store.count(matching: filter, groupedBy: tag) }
        for entry in groups where !writer.isFull {
            writer.append(group.name, entry.value)
            appendCount(entry.count, into: &writer)
        }
    }

    /// MPD sums milliseconds and prints whole seconds, truncated.
    private func appendCount(_ count: LibraryCount, into writer: inout MPDResponseWriter) {
        let milliseconds = count.playtime.isFinite && count.playtime > 0 ? Int64((min(count.playtime, 1e15) * 1000).rounded()) : 0
        writer.append("songs", count.songs)
        writer.append("playtime", milliseconds / 1000)
    }
}
