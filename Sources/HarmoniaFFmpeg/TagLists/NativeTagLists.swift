// Value lists from a file's own tag blocks — specs/ports.md §TagReaderPort (Value lists)
//
// FFmpeg's metadata dictionary cannot carry a list: repeated Vorbis comments
// come back joined with ";" (where one value ends is lost) and of an ID3v2.4
// list only the first value comes back. These parsers read the tag blocks
// themselves — Vorbis comments (FLAC, Ogg Vorbis, Opus), ID3v2.2–2.4, MP4
// `ilst`, APEv2 — for the fields that hold lists; everything else still
// comes from FFmpeg. Values are never split on ";" or "/".
import HarmoniaCore

/// The list-valued tags of one file, under canonical (Vorbis comment) keys,
/// in file order. Pure values; any thread.
struct NativeTagLists: Equatable {
    /// The tag format the values came from.
    enum Format: String { case vorbisComment, id3v2, mp4, ape }

    let format: Format
    /// (canonical key, value) in file order; keys are uppercase Vorbis names
    /// ("ARTIST", "MUSICBRAINZ_ARTISTID").
    private(set) var entries: [(key: String, value: String)]

    /// The largest tag block read (a comment packet, an ID3v2 tag, an `ilst`,
    /// an APE tag): 32 MiB. A larger one is not read; FFmpeg's values stand.
    static let maxBlockBytes = 32 << 20
    /// The most values kept per file (a hostile file may hold millions of comments).
    static let maxEntries = 4096

    init(format: Format, entries: [(key: String, value: String)] = []) {
        self.format = format
        self.entries = entries
    }

    static func == (a: Self, b: Self) -> Bool {
        a.format == b.format && a.entries.count == b.entries.count
            && zip(a.entries, b.entries).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    /// Adds a value under `key` (a native name: mapped to canonical, or
    /// ignored when it names no list field). False once the bound is reached.
    @discardableResult
    mutating func add(canonical key: String, _ value: String) -> Bool {
        guard entries.count < Self.maxEntries else { return false }
        entries.append((key, value))
        return true
    }

    /// Every value under `key`, in file order.
    func values(_ key: String) -> [String] {
        entries.filter { $0.key == key }.map(\.value)
    }

    var isEmpty: Bool { entries.isEmpty }

    // MARK: - Reading

    /// The lists of the file behind `source`, identified by content; nil for
    /// a format without list-valued tags here, or a block that is absent,
    /// too large or malformed (the caller keeps FFmpeg's single values).
    static func read(from source: any TagByteSource) -> NativeTagLists? {
        guard let head = source.bytes(at: 0, count: Int(min(source.size, 12))), head.count >= 4 else { return nil }
        var audioStart: Int64 = 0
        var id3: NativeTagLists? = nil
        if head.starts(with: Array("ID3".utf8)) {
            guard let (lists, end) = ID3v2ListParser.read(from: source) else { return nil }
            id3 = lists
            audioStart = end
        }
        if let magic = source.bytes(at: audioStart, count: 4) {
            if magic == Array("fLaC".utf8) { return VorbisCommentParser.readFLAC(from: source, at: audioStart) }
            if magic == Array("OggS".utf8) { return VorbisCommentParser.readOgg(from: source, at: audioStart) }
        }
        if let id3 { return id3 }
        if head.count >= 8, head[4..<8].elementsEqual("ftyp".utf8) { return MP4ListParser.read(from: source) }
        return APEListParser.read(from: source)
    }

    /// The lists of the local file `path`; nil as `read(from:)`, and for a
    /// file that cannot be opened.
    static func read(path: String) -> NativeTagLists? {
        guard let file = TagFileSource(path: path) else { return nil }
        return read(from: file)
    }

    // MARK: - Into a TagBundle

    /// `tags` with each list field this file holds values for replaced by
    /// those values; fields it lacks keep what FFmpeg read.
    func apply(to tags: inout TagBundle) {
        func set(_ key: String, _ field: inout [String]) {
            let found = values(key)
            if !found.isEmpty { field = found }
        }
        set("ARTIST", &tags.artists)
        set("ALBUMARTIST", &tags.albumArtists)
        set("COMPOSER", &tags.composers)
        set("PERFORMER", &tags.performers)
        let genres = values("GENRE")
        // A numeric ID3 genre ("17", "(17)Rock") is FFmpeg's to resolve.
        if !genres.isEmpty, !(format == .id3v2 && genres.contains(where: Self.isID3GenreReference)) {
            tags.genres = genres
        }
        set("MUSICBRAINZ_ARTISTID", &tags.musicBrainz.artistIDs)
        set("MUSICBRAINZ_ALBUMARTISTID", &tags.musicBrainz.albumArtistIDs)
        set("MUSICBRAINZ_ALBUMID", &tags.musicBrainz.albumIDs)
        set("MUSICBRAINZ_TRACKID", &tags.musicBrainz.trackIDs)
        set("MUSICBRAINZ_RELEASETRACKID", &tags.musicBrainz.releaseTrackIDs)
        set("MUSICBRAINZ_WORKID", &tags.musicBrainz.workIDs)
    }

    /// "17", "(17)", "(17)Rock", "RX", "CR": ID3v1 genre references.
    static func isID3GenreReference(_ value: String) -> Bool {
        if value == "RX" || value == "CR" { return true }
        let body = value.hasPrefix("(") ? value.dropFirst() : Substring(value)
        return !body.isEmpty && body.first!.isASCII && body.first!.isNumber
            && (value.hasPrefix("(") || body.allSatisfy { $0.isASCII && $0.isNumber })
    }

    // MARK: - Canonical keys

    /// The canonical key of a Vorbis comment or APE item name (compared
    /// without ASCII case); nil for a name that holds no list field here.
    static func canonicalKey(vorbisOrAPE name: String) -> String? {
        let upper = name.uppercased()
        switch upper {
        case "ARTIST", "COMPOSER", "GENRE", "PERFORMER", "ALBUMARTIST",
             "MUSICBRAINZ_ARTISTID", "MUSICBRAINZ_ALBUMARTISTID", "MUSICBRAINZ_ALBUMID",
             "MUSICBRAINZ_TRACKID", "MUSICBRAINZ_RELEASETRACKID", "MUSICBRAINZ_WORKID":
            return upper
        case "ALBUM ARTIST", "ALBUM_ARTIST":
            return "ALBUMARTIST"
        default:
            return nil
        }
    }

    /// The canonical key of an ID3 `TXXX` description or an MP4 freeform
    /// (`----`) name, as MusicBrainz Picard writes them.
    static func canonicalKey(musicBrainzDescription name: String) -> String? {
        switch name.lowercased() {
        case "musicbrainz artist id": "MUSICBRAINZ_ARTISTID"
        case "musicbrainz album artist id": "MUSICBRAINZ_ALBUMARTISTID"
        case "musicbrainz album id": "MUSICBRAINZ_ALBUMID"
        case "musicbrainz release track id": "MUSICBRAINZ_RELEASETRACKID"
        case "musicbrainz work id": "MUSICBRAINZ_WORKID"
        case "musicbrainz track id": "MUSICBRAINZ_TRACKID"
        default: nil
        }
    }
}
