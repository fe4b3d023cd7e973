// The music library's records and queries — specs/library.md
import Foundation

/// A tag the library indexes, with MPD's name for it (`name`), which is also
/// how the MPD protocol and the filter expressions spell it. A song may hold
/// several values of any of them (`LibrarySong.tags`).
public enum LibraryTag: String, CaseIterable, Sendable, Codable, Hashable {
    case artist, albumArtist, album, title, track, genre, date, composer, disc, comment
    case performer
    case musicBrainzArtistID, musicBrainzAlbumID, musicBrainzAlbumArtistID, musicBrainzTrackID
    case musicBrainzReleaseTrackID, musicBrainzWorkID

    /// MPD's spelling: "Artist", "AlbumArtist", "Album", "Title", "Track",
    /// "Genre", "Date", "Composer", "Disc", "Comment", "Performer",
    /// "MUSICBRAINZ_ARTISTID", …
    public var name: String {
        switch self {
        case .artist: "Artist"
        case .albumArtist: "AlbumArtist"
        case .album: "Album"
        case .title: "Title"
        case .track: "Track"
        case .genre: "Genre"
        case .date: "Date"
        case .composer: "Composer"
        case .disc: "Disc"
        case .comment: "Comment"
        case .performer: "Performer"
        case .musicBrainzArtistID: "MUSICBRAINZ_ARTISTID"
        case .musicBrainzAlbumID: "MUSICBRAINZ_ALBUMID"
        case .musicBrainzAlbumArtistID: "MUSICBRAINZ_ALBUMARTISTID"
        case .musicBrainzTrackID: "MUSICBRAINZ_TRACKID"
        case .musicBrainzReleaseTrackID: "MUSICBRAINZ_RELEASETRACKID"
        case .musicBrainzWorkID: "MUSICBRAINZ_WORKID"
        }
    }

    /// The tag called `name`, compared without case as MPD does ("albumartist" too).
    public init?(name: String) {
        guard let tag = Self.allCases.first(where: { $0.name.caseInsensitiveCompare(name) == .orderedSame }) else { return nil }
        self = tag
    }

    // Hashed and compared by case, not by raw value: the standard library's
    // RawRepresentable defaults would hash and compare the raw value's
    // string, and a song's tags are a dictionary looked up some thirty times
    // per song printed (specs/library.md §Figures).
    public func hash(into hasher: inout Hasher) { hasher.combine(index) }

    public static func == (a: Self, b: Self) -> Bool { a.index == b.index }

    /// The case's place in `allCases` (its declaration), for tables indexed by tag.
    public var index: Int {
        switch self {
        case .artist: 0
        case .albumArtist: 1
        case .album: 2
        case .title: 3
        case .track: 4
        case .genre: 5
        case .date: 6
        case .composer: 7
        case .disc: 8
        case .comment: 9
        case .performer: 10
        case .musicBrainzArtistID: 11
        case .musicBrainzAlbumID: 12
        case .musicBrainzAlbumArtistID: 13
        case .musicBrainzTrackID: 14
        case .musicBrainzReleaseTrackID: 15
        case .musicBrainzWorkID: 16
        }
    }
}

/// One song file in the library. `path` is relative to the music directory,
/// with `/` separators and no leading `/` ("Artist/Album/01 Song.flac").
public struct LibrarySong: Sendable, Equatable, Hashable, Codable {
    public var path: String
    /// The file's modification time, whole seconds since 1970 (UTC).
    public var modified: Int64
    /// The file's size in bytes (a change of size or mtime means a rescan).
    public var size: Int64
    /// Tag values, by tag, each list in file order (a song by two artists
    /// has two Artist values); a tag the file lacks is absent, never an
    /// empty list. Track and Disc are bare numbers as MPD writes them ("3", not "3/12").
    public var tags: [LibraryTag: [String]]
    /// Exact length in seconds, when known.
    public var duration: Double?
    /// MPD's `Format`: "SAMPLERATE:BITS:CHANNELS" ("44100:16:2"; bits "f" for
    /// float, "*" when unknown), when known.
    public var format: String?

    public init(path: String, modified: Int64, size: Int64, tags: [LibraryTag: [String]] = [:],
                duration: Double? = nil, format: String? = nil) {
        self.path = path
        self.modified = modified
        self.size = size
        self.tags = tags
        self.duration = duration
        self.format = format
    }

    /// The first value of `tag`; nil when the song lacks it.
    public func first(_ tag: LibraryTag) -> String? {
        tags[tag]?.first
    }

    /// The folder holding the song, relative ("" for the top).
    public var directory: String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }
}

/// A playlist file in the library (`.m3u`, `.m3u8`, `.pls`, `.cue`), listed as
/// MPD lists it: `playlist: PATH` with its modification time.
public struct LibraryPlaylist: Sendable, Equatable, Hashable, Codable {
    public var path: String
    public var modified: Int64

    public init(path: String, modified: Int64) {
        self.path = path
        self.modified = modified
    }
}

/// A folder in the library, relative to the music directory.
public struct LibraryDirectory: Sendable, Equatable, Hashable, Codable {
    public var path: String
    public var modified: Int64

    public init(path: String, modified: Int64) {
        self.path = path
        self.modified = modified
    }
}

/// One folder's entries as the library holds them, for the scanner to
/// compare with the disk: paths and modification times (a song's size too),
/// keyed by path, without tags or order (`LibraryStorePort.stamps(of:)`).
public struct LibraryFolderStamps: Sendable, Equatable {
    /// A song's modification time and size, as last read.
    public struct SongStamp: Sendable, Equatable {
        public var modified: Int64
        public var size: Int64

        public init(modified: Int64, size: Int64) {
            self.modified = modified
            self.size = size
        }
    }

    /// Subfolder path → modification time.
    public var directories: [String: Int64]
    /// Song path → modification time and size.
    public var songs: [String: SongStamp]
    /// Playlist path → modification time.
    public var playlists: [String: Int64]

    public init(directories: [String: Int64] = [:], songs: [String: SongStamp] = [:], playlists: [String: Int64] = [:]) {
        self.directories = directories
        self.songs = songs
        self.playlists = playlists
    }

    /// The stamps of a listing's entries (a path listed twice: its first entry).
    public init(_ listing: LibraryListing) {
        self.init(
            directories: Dictionary(listing.directories.map { ($0.path, $0.modified) }, uniquingKeysWith: { first, _ in first }),
            songs: Dictionary(listing.songs.map { ($0.path, SongStamp(modified: $0.modified, size: $0.size)) },
                              uniquingKeysWith: { first, _ in first }),
            playlists: Dictionary(listing.playlists.map { ($0.path, $0.modified) }, uniquingKeysWith: { first, _ in first }))
    }
}

/// What one folder holds, each kind in MPD's order (natural order by name).
public struct LibraryListing: Sendable, Equatable {
    public var directories: [LibraryDirectory]
    public var songs: [LibrarySong]
    public var playlists: [LibraryPlaylist]

    public init(directories: [LibraryDirectory] = [], songs: [LibrarySong] = [], playlists: [LibraryPlaylist] = []) {
        self.directories = directories
        self.songs = songs
        self.playlists = playlists
    }
}

/// How a tag value is compared with a filter's value.
public struct TagMatch: Sendable, Equatable, Hashable {
    public enum Operation: Sendable, Equatable, Hashable {
        /// The whole value equals.
        case equals
        /// The value contains the filter's value.
        case contains
        /// The value starts with the filter's value.
        case startsWith
        /// The value matches the filter's value as a regular expression (PCRE-like, as MPD).
        case regex
    }

    public var operation: Operation
    public var value: String
    /// `!=`, `!~`: true when the comparison fails.
    public var negated: Bool
    /// Compare after folding case across Unicode (MPD's `search`; not accents).
    public var foldCase: Bool

    public init(_ operation: Operation, _ value: String, negated: Bool = false, foldCase: Bool = false) {
        self.operation = operation
        self.value = value
        self.negated = negated
        self.foldCase = foldCase
    }
}

/// A query over songs: MPD's filter expressions and its older `TAG VALUE`
/// pairs both become one of these.
public indirect enum LibraryFilter: Sendable, Equatable, Hashable {
    /// A tag's value; a song without the tag has the empty value (so
    /// `(Artist == '')` finds songs without an artist, as in MPD).
    case tag(LibraryTag, TagMatch)
    /// Any tag's value (MPD's `any`).
    case anyTag(TagMatch)
    /// The song's path (MPD's `file`).
    case file(TagMatch)
    /// Songs inside this folder, recursively (MPD's `base`; "" is everything).
    case base(String)
    /// Songs modified at or after this time (seconds since 1970, MPD's `modified-since`).
    case modifiedSince(Int64)
    /// The song's `Format` (MPD's `AudioFormat`).
    case audioFormat(TagMatch)
    case not(LibraryFilter)
    /// All of them; `.and([])` matches every song.
    case and([LibraryFilter])
}
