// Tag types and idle subsystems — specs/mpd-protocol.md §Tags, §Idle
//
// MPD's 31 tag names in its order (src/tag/Names.c) and its 14 idle
// subsystems (src/IdleFlags.cxx); the bit sets the connection keeps.
import HarmoniaLibrary

/// A tag type MPD knows, in MPD's order (the order of `tagtypes` and of a
/// song's tags in our output). Only some are indexed by the library (`libraryTag`).
public enum MPDTagType: Int, Sendable, CaseIterable, Hashable {
    case artist, artistSort, album, albumSort, albumArtist, albumArtistSort, title, track, name, genre,
         date, originalDate, composer, composerSort, performer, conductor, work, movement, movementNumber,
         ensemble, location, grouping, comment, disc, label, musicBrainzArtistID, musicBrainzAlbumID,
         musicBrainzAlbumArtistID, musicBrainzTrackID, musicBrainzReleaseTrackID, musicBrainzWorkID

    private static let names = [
        "Artist", "ArtistSort", "Album", "AlbumSort", "AlbumArtist", "AlbumArtistSort", "Title", "Track", "Name",
        "Genre", "Date", "OriginalDate", "Composer", "ComposerSort", "Performer", "Conductor", "Work", "Movement",
        "MovementNumber", "Ensemble", "Location", "Grouping", "Comment", "Disc", "Label", "MUSICBRAINZ_ARTISTID",
        "MUSICBRAINZ_ALBUMID", "MUSICBRAINZ_ALBUMARTISTID", "MUSICBRAINZ_TRACKID", "MUSICBRAINZ_RELEASETRACKID",
        "MUSICBRAINZ_WORKID",
    ]

    /// MPD's spelling ("AlbumArtist", "MUSICBRAINZ_TRACKID").
    public var name: String { Self.names[rawValue] }

    /// The tag called `name`, without regard to ASCII case (MPD's tag_name_parse_i).
    public init?(name: String) {
        guard let index = Self.names.firstIndex(where: { asciiCaseEqual($0, name) }) else { return nil }
        self.init(rawValue: index)
    }

    /// The library's tag, when the library indexes this one.
    public var libraryTag: LibraryTag? {
        switch self {
        case .artist: .artist
        case .albumArtist: .albumArtist
        case .album: .album
        case .title: .title
        case .track: .track
        case .genre: .genre
        case .date: .date
        case .composer: .composer
        case .disc: .disc
        case .comment: .comment
        case .performer: .performer
        case .musicBrainzArtistID: .musicBrainzArtistID
        case .musicBrainzAlbumID: .musicBrainzAlbumID
        case .musicBrainzAlbumArtistID: .musicBrainzAlbumArtistID
        case .musicBrainzTrackID: .musicBrainzTrackID
        case .musicBrainzReleaseTrackID: .musicBrainzReleaseTrackID
        case .musicBrainzWorkID: .musicBrainzWorkID
        default: nil
        }
    }

    /// The tag type of a library tag (the inverse of `libraryTag`).
    public init(_ tag: LibraryTag) { self = Self.byLibraryTag[tag.index] }

    /// `init(_:)`'s answers, by `LibraryTag.index`.
    private static let byLibraryTag: [MPDTagType] = LibraryTag.allCases.map { tag in allCases.first { $0.libraryTag == tag }! }
}

/// A set of tag types (a client's `tagtypes` mask, the server's enabled tags).
public struct MPDTagMask: Sendable, Hashable {
    public var bits: UInt64
    public init(bits: UInt64) { self.bits = bits }
    public init(_ tags: some Sequence<MPDTagType>) {
        bits = tags.reduce(0) { $0 | (1 << UInt64($1.rawValue)) }
    }

    public static let all = MPDTagMask(MPDTagType.allCases)
    public static let none = MPDTagMask(bits: 0)
    /// The tags the library indexes (LibraryTag).
    public static let library = MPDTagMask(LibraryTag.allCases.map(MPDTagType.init))
    /// MPD 0.23's default `metadata_to_use`: every tag but Comment.
    public static let mpdDefault = MPDTagMask(MPDTagType.allCases.filter { $0 != .comment })

    public func contains(_ tag: MPDTagType) -> Bool { bits & (1 << UInt64(tag.rawValue)) != 0 }
    /// True when every library tag in `tags` (bits by `LibraryTag.index`) is a member.
    public func containsAll(libraryTags tags: UInt32) -> Bool {
        var rest = tags
        while rest != 0 {
            let index = rest.trailingZeroBitCount
            guard contains(Self.typeOfLibraryTag[index]) else { return false }
            rest &= rest - 1
        }
        return true
    }
    private static let typeOfLibraryTag = LibraryTag.allCases.map(MPDTagType.init)
    public mutating func insert(_ tag: MPDTagType) { bits |= 1 << UInt64(tag.rawValue) }
    public mutating func remove(_ tag: MPDTagType) { bits &= ~(1 << UInt64(tag.rawValue)) }
    public func intersection(_ other: MPDTagMask) -> MPDTagMask { MPDTagMask(bits: bits & other.bits) }
    /// The members, in MPD's order.
    public var tags: [MPDTagType] { MPDTagType.allCases.filter(contains) }
}

/// MPD's idle subsystems, in MPD's order (the order of `changed:` lines).
public struct MPDSubsystems: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let database = MPDSubsystems(rawValue: 1 << 0)
    public static let storedPlaylist = MPDSubsystems(rawValue: 1 << 1)
    public static let playlist = MPDSubsystems(rawValue: 1 << 2)
    public static let player = MPDSubsystems(rawValue: 1 << 3)
    public static let mixer = MPDSubsystems(rawValue: 1 << 4)
    public static let output = MPDSubsystems(rawValue: 1 << 5)
    public static let options = MPDSubsystems(rawValue: 1 << 6)
    public static let sticker = MPDSubsystems(rawValue: 1 << 7)
    public static let update = MPDSubsystems(rawValue: 1 << 8)
    public static let subscription = MPDSubsystems(rawValue: 1 << 9)
    public static let message = MPDSubsystems(rawValue: 1 << 10)
    public static let neighbor = MPDSubsystems(rawValue: 1 << 11)
    public static let mount = MPDSubsystems(rawValue: 1 << 12)
    public static let partition = MPDSubsystems(rawValue: 1 << 13)
    public static let all = MPDSubsystems(rawValue: (1 << 14) - 1)

    /// MPD's names, by bit.
    public static let names = [
        "database", "stored_playlist", "playlist", "player", "mixer", "output", "options", "sticker",
        "update", "subscription", "message", "neighbor", "mount", "partition",
    ]

    /// The subsystem called `name`, without regard to ASCII case (as MPD).
    public init?(name: String) {
        guard let bit = Self.names.firstIndex(where: { asciiCaseEqual($0, name) }) else { return nil }
        self.init(rawValue: 1 << UInt32(bit))
    }

    /// The members' names, in MPD's order.
    public var memberNames: [String] {
        Self.names.indices.filter { rawValue & (1 << UInt32($0)) != 0 }.map { Self.names[$0] }
    }
}

/// ASCII-only case-insensitive equality (MPD's StringEqualsCaseASCII).
func asciiCaseEqual(_ a: String, _ b: String) -> Bool {
    let x = a.utf8, y = b.utf8
    guard x.count == y.count else { return false }
    return zip(x, y).allSatisfy { asciiLower($0) == asciiLower($1) }
}

@inline(__always) func asciiLower(_ c: UInt8) -> UInt8 {
    c >= 0x41 && c <= 0x5A ? c | 0x20 : c
}
