// A song's tags as the lines of its record — specs/library.md §Song records

/// A song's tags as a song record prints them (MPD's SongPrint): a line
/// `Name: value` per value, the tags in `LibraryTag.recordOrder`, each tag's
/// values in file order, every line ended by a newline. A store may keep
/// this text beside its tag columns, so that a listing is read from one
/// column and written out as it is, with no tag dictionary built per song.
///
/// Well-formed by construction, whoever made the text (a database file may
/// be hostile): every line names a tag, the tags in record order, and no
/// value holds a byte below U+0020 or a line separator (U+0085, U+2028,
/// U+2029). Tags holding such a value have no lines (`init?(_:)` is nil):
/// their record is written value by value, with its own newline rule.
public struct LibraryTagLines: Sendable, Equatable, Hashable {
    /// The lines, each ending in "\n" ("" for a song without tags).
    public let text: String
    /// The tags with lines, as bits by `LibraryTag.index`.
    public let presentTags: UInt32

    /// The lines of `tags`; nil when a value cannot be a line.
    public init?(_ tags: [LibraryTag: [String]]) {
        var text = ""
        var present: UInt32 = 0
        for tag in LibraryTag.recordOrder {
            guard let values = tags[tag] else { continue }
            for value in values {
                guard Self.isLineValue(value.utf8) else { return nil }
                text += tag.name
                text += ": "
                text += value
                text += "\n"
            }
            if !values.isEmpty { present |= 1 << UInt32(tag.index) }
        }
        self.text = text
        presentTags = present
    }

    /// `text` when it is well-formed lines (as `init?(_:)` makes them); nil otherwise.
    public init?(text: String) {
        var present: UInt32 = 0
        guard Self.parse(text, { tag, _ in present |= 1 << UInt32(tag.index) }) else { return nil }
        self.text = text
        presentTags = present
    }

    /// The tags, each value as written.
    public var tags: [LibraryTag: [String]] {
        var tags = [LibraryTag: [String]](minimumCapacity: 8)
        _ = Self.parse(text) { tag, value in
            tags[tag, default: []].append(String(decoding: value, as: UTF8.self))
        }
        return tags
    }

    /// Calls `body` with each line's tag and value bytes, in order (valid only during the call).
    public func forEachLine(_ body: (LibraryTag, UnsafeBufferPointer<UInt8>) -> Void) {
        _ = Self.parse(text, body)
    }

    /// Reads `text` line by line, calling `body` per line; false (after
    /// calling it for the lines before) at the first line that is not a
    /// tag's in record order, a value that cannot be a line, or text after
    /// the last newline.
    private static func parse(_ text: String, _ body: (LibraryTag, UnsafeBufferPointer<UInt8>) -> Void) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var start = 0
            var order = 0  // the place in recordOrder the next line may not precede
            while start < bytes.count {
                var matched: LibraryTag?
                while order < recordNames.count {
                    let name = recordNames[order]
                    let keyEnd = start + name.count
                    if keyEnd + 2 <= bytes.count, bytes[keyEnd] == UInt8(ascii: ":"), bytes[keyEnd + 1] == UInt8(ascii: " "),
                       name.elementsEqual(bytes[start..<keyEnd]) {
                        matched = LibraryTag.recordOrder[order]
                        start = keyEnd + 2
                        break
                    }
                    order += 1
                }
                guard let tag = matched else { return false }
                // The value, to the newline, in one pass over its bytes; a lead
                // byte of a line separator (0xC2, 0xE2) asks for a closer look.
                var end = start
                var closerLook = false
                while end < bytes.count {
                    let byte = bytes[end]
                    if byte == 0x0A { break }
                    if byte < 0x20 { return false }
                    if byte == 0xC2 || byte == 0xE2 { closerLook = true }
                    end += 1
                }
                guard end < bytes.count else { return false }
                let value = UnsafeBufferPointer(rebasing: bytes[start..<end])
                guard !closerLook || isLineValue(value) else { return false }
                body(tag, value)
                start = end + 1
            }
            return true
        }
    }

    /// True when no byte is below 0x20 and no line separator (U+0085 C2 85,
    /// U+2028 E2 80 A8, U+2029 E2 80 A9) is present.
    private static func isLineValue(_ bytes: some Sequence<UInt8>) -> Bool {
        var previous: (UInt8, UInt8) = (0, 0)
        for byte in bytes {
            if byte < 0x20 { return false }
            if byte == 0x85 && previous.1 == 0xC2 { return false }
            if (byte == 0xA8 || byte == 0xA9) && previous == (0xE2, 0x80) { return false }
            previous = (previous.1, byte)
        }
        return true
    }

    private static let recordNames: [[UInt8]] = LibraryTag.recordOrder.map { Array($0.name.utf8) }
}

extension LibraryTag {
    /// The order a song record prints tags in: MPD's tag-type order
    /// (src/tag/Names.c), which is not the declaration order.
    public static let recordOrder: [LibraryTag] = [
        .artist, .album, .albumArtist, .title, .track, .genre, .date, .composer, .performer, .comment, .disc,
        .musicBrainzArtistID, .musicBrainzAlbumID, .musicBrainzAlbumArtistID, .musicBrainzTrackID,
        .musicBrainzReleaseTrackID, .musicBrainzWorkID,
    ]
}

/// A song as a listing prints it: path, time, format, duration and tags,
/// the tags as lines when they can be (`LibraryTagLines`), so a store can
/// hand a folder's songs to a writer without building a `LibrarySong` each.
public struct LibrarySongRecord: Sendable, Equatable {
    /// A record's tags: lines to copy, or values to print one by one.
    public enum Tags: Sendable, Equatable {
        case lines(LibraryTagLines)
        case values([LibraryTag: [String]])
    }

    public var path: String
    public var modified: Int64
    public var duration: Double?
    public var format: String?
    public var tags: Tags

    public init(path: String, modified: Int64, duration: Double?, format: String?, tags: Tags) {
        self.path = path
        self.modified = modified
        self.duration = duration
        self.format = format
        self.tags = tags
    }

    /// The record of `song`.
    public init(_ song: LibrarySong) {
        self.init(path: song.path, modified: song.modified, duration: song.duration, format: song.format,
                  tags: LibraryTagLines(song.tags).map(Tags.lines) ?? .values(song.tags))
    }
}

/// What one folder holds, its songs as records (`LibraryStorePort.recordListing(of:songOrder:)`).
public struct LibraryRecordListing: Sendable, Equatable {
    public var directories: [LibraryDirectory]
    public var songs: [LibrarySongRecord]
    public var playlists: [LibraryPlaylist]

    public init(directories: [LibraryDirectory] = [], songs: [LibrarySongRecord] = [], playlists: [LibraryPlaylist] = []) {
        self.directories = directories
        self.songs = songs
        self.playlists = playlists
    }

    /// `listing` with each song as its record.
    public init(_ listing: LibraryListing) {
        self.init(directories: listing.directories, songs: listing.songs.map(LibrarySongRecord.init), playlists: listing.playlists)
    }
}

/// One entry of a recursive listing with songs as records
/// (`LibraryStorePort.visitRecordEntries(under:songOrder:_:)`).
public enum LibraryRecordEntry: Sendable, Equatable {
    case directory(LibraryDirectory)
    case song(LibrarySongRecord)
    case playlist(LibraryPlaylist)

    /// `entry`, its song as a record.
    public init(_ entry: LibraryEntry) {
        switch entry {
        case .directory(let d): self = .directory(d)
        case .song(let s): self = .song(LibrarySongRecord(s))
        case .playlist(let p): self = .playlist(p)
        }
    }
}
