// The answers of the library's queries — specs/library.md §Queries

/// One row of `LibraryStorePort.tagValues`: the values of the group tags
/// (outermost first; empty without grouping) and the listed tag's value.
/// A song lacking a tag contributes "" for it, as MPD 0.23 lists it.
public struct LibraryTagRow: Sendable, Equatable, Hashable {
    public var groups: [String]
    public var value: String

    public init(groups: [String] = [], value: String) {
        self.groups = groups
        self.value = value
    }
}

/// Songs and their total length (MPD's `count`).
public struct LibraryCount: Sendable, Equatable {
    public var songs: Int
    /// Sum of the known durations, seconds (MPD prints it truncated to whole seconds).
    public var playtime: Double

    public init(songs: Int = 0, playtime: Double = 0) {
        self.songs = songs
        self.playtime = playtime
    }
}

/// One group of `count ... group TAG`: the tag's value ("" for songs without it) and its count.
public struct LibraryGroupCount: Sendable, Equatable {
    public var value: String
    public var count: LibraryCount

    public init(value: String, count: LibraryCount) {
        self.value = value
        self.count = count
    }
}

/// The library's totals (MPD's `stats`).
public struct LibraryStats: Sendable, Equatable {
    /// Distinct non-empty Artist values (no AlbumArtist fallback, as MPD).
    public var artists: Int
    /// Distinct non-empty Album values.
    public var albums: Int
    public var songs: Int
    /// Sum of the known durations, seconds.
    public var playtime: Double
    /// When the last scan completed (seconds since 1970); nil before the first.
    public var lastUpdate: Int64?

    public init(artists: Int = 0, albums: Int = 0, songs: Int = 0, playtime: Double = 0, lastUpdate: Int64? = nil) {
        self.artists = artists
        self.albums = albums
        self.songs = songs
        self.playtime = playtime
        self.lastUpdate = lastUpdate
    }
}

/// One entry of a recursive listing (MPD's `listall`, `listallinfo`).
public enum LibraryEntry: Sendable, Equatable {
    case directory(LibraryDirectory)
    case song(LibrarySong)
    case playlist(LibraryPlaylist)

    /// The entry's path, relative to the music directory.
    public var path: String {
        switch self {
        case .directory(let d): d.path
        case .song(let s): s.path
        case .playlist(let p): p.path
        }
    }
}
