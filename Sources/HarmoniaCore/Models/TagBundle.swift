// TagBundle — specs/models.md §TagBundle
import Foundation

/// Metadata read from a file: user-facing tags plus technical facts about the
/// stream and file. A tag the file does not carry is `nil`, never `""`
/// (an empty string is a tag that is present and empty).
public struct TagBundle: Sendable, Equatable, Hashable, Codable {
    /// Bumped whenever a field is added, so stored bundles can be re-read.
    /// 3 added the ReplayGain peaks (the reference stands at 2); 4 the
    /// value lists (every artist, genre, … of a file) and the MusicBrainz IDs.
    public static let currentSchemaVersion = 4

    // MARK: Tag fields
    /// The track's title.
    public var title: String?
    /// Every performing artist, in file order, each value as the file holds
    /// it (never split on `;` or `/`); empty when the file names none.
    public var artists: [String] = []
    /// The album's title.
    public var album: String?
    /// Every album artist (for compilations, often "Various Artists"), in file order.
    public var albumArtists: [String] = []
    /// Every composer, in file order.
    public var composers: [String] = []
    /// Every genre, as written in the file, in file order.
    public var genres: [String] = []
    /// Every performer (Vorbis `PERFORMER`, APE `Performer`), in file order.
    public var performers: [String] = []
    /// MusicBrainz identifiers, each list in file order (`MUSICBRAINZ_*`
    /// comments, ID3 `TXXX`/`UFID`, MP4 freeform atoms).
    public var musicBrainz = MusicBrainzIDs()
    /// The release year (from a date tag's year).
    public var year: Int?
    /// The track's number on its disc (from "3" or "3/12").
    public var trackNumber: Int?
    /// The number of tracks on the disc.
    public var trackTotal: Int?
    /// The disc's number in the set.
    public var discNumber: Int?
    /// The number of discs in the set.
    public var discTotal: Int?
    /// Beats per minute, rounded (nil for a value that is not a finite number in range).
    public var bpm: Int?
    /// ReplayGain track gain in dB, at the ReplayGain reference level (89 dB SPL, about -18 LUFS).
    public var replayGainTrack: Double?
    /// ReplayGain album gain in dB, same reference level.
    public var replayGainAlbum: Double?
    /// Track peak as a linear amplitude (1.0 = full scale).
    public var replayGainTrackPeak: Double?
    /// Album peak as a linear amplitude (1.0 = full scale).
    public var replayGainAlbumPeak: Double?
    /// A free-text comment.
    public var comment: String?
    /// The attached picture's bytes (JPEG or PNG as stored).
    public var artworkData: Data?
    /// Embedded lyrics, one entry per language variant, in file order.
    public var lyrics: [LyricsLanguageVariant]?

    // MARK: Technical fields (not counted by `isEmpty`)
    /// Seconds, exact when the decoder knows the frame count.
    public var duration: Double?
    /// Average bitrate in kbit/s.
    public var bitrate: Int?
    /// Frames per second of the audio stream.
    public var sampleRate: Double?
    /// The audio stream's channel count.
    public var channels: Int?
    /// Bytes, for local files.
    public var fileSize: Int?
    /// Codec name (`"flac"`, `"mp3"`, `"aac"`, `"opus"`, …).
    public var codec: String?
    /// `"lossless"` or `"lossy"`, derived from the codec; `nil` when unknown.
    public var encoding: String?

    /// Builds a bundle; every field defaults to nil (absent).
    public init(
        title: String? = nil, artist: String? = nil, album: String? = nil, albumArtist: String? = nil,
        composer: String? = nil, genre: String? = nil, year: Int? = nil,
        trackNumber: Int? = nil, trackTotal: Int? = nil, discNumber: Int? = nil, discTotal: Int? = nil,
        bpm: Int? = nil, replayGainTrack: Double? = nil, replayGainAlbum: Double? = nil,
        replayGainTrackPeak: Double? = nil, replayGainAlbumPeak: Double? = nil,
        comment: String? = nil, artworkData: Data? = nil, lyrics: [LyricsLanguageVariant]? = nil,
        duration: Double? = nil, bitrate: Int? = nil, sampleRate: Double? = nil, channels: Int? = nil,
        fileSize: Int? = nil, codec: String? = nil, encoding: String? = nil
    ) {
        self.title = title; self.album = album; self.year = year
        self.artists = Self.list(artist); self.albumArtists = Self.list(albumArtist)
        self.composers = Self.list(composer); self.genres = Self.list(genre)
        self.trackNumber = trackNumber; self.trackTotal = trackTotal
        self.discNumber = discNumber; self.discTotal = discTotal; self.bpm = bpm
        self.replayGainTrack = replayGainTrack; self.replayGainAlbum = replayGainAlbum
        self.replayGainTrackPeak = replayGainTrackPeak; self.replayGainAlbumPeak = replayGainAlbumPeak
        self.comment = comment; self.artworkData = artworkData; self.lyrics = lyrics
        self.duration = duration; self.bitrate = bitrate; self.sampleRate = sampleRate
        self.channels = channels; self.fileSize = fileSize; self.codec = codec; self.encoding = encoding
    }

    // MARK: Joined values (a convenience for one-line display)

    /// The artists joined with "; " (nil when there is none). Setting it
    /// sets one artist (or none); the list is the truth.
    public var artist: String? {
        get { Self.joined(artists) }
        set { artists = Self.list(newValue) }
    }
    /// The album artists joined with "; "; setting it sets one value.
    public var albumArtist: String? {
        get { Self.joined(albumArtists) }
        set { albumArtists = Self.list(newValue) }
    }
    /// The composers joined with "; "; setting it sets one value.
    public var composer: String? {
        get { Self.joined(composers) }
        set { composers = Self.list(newValue) }
    }
    /// The genres joined with "; "; setting it sets one value.
    public var genre: String? {
        get { Self.joined(genres) }
        set { genres = Self.list(newValue) }
    }

    /// What joins a list's values in the convenience strings.
    public static let valueSeparator = "; "

    static func joined(_ values: [String]) -> String? {
        values.isEmpty ? nil : values.joined(separator: valueSeparator)
    }

    static func list(_ value: String?) -> [String] {
        value.map { [$0] } ?? []
    }

    /// True when no tag field is set; technical fields do not count.
    public var isEmpty: Bool {
        title == nil && artists.isEmpty && album == nil && albumArtists.isEmpty && composers.isEmpty
            && genres.isEmpty && performers.isEmpty && musicBrainz.isEmpty && year == nil && trackNumber == nil && trackTotal == nil
            && discNumber == nil && discTotal == nil && bpm == nil
            && replayGainTrack == nil && replayGainAlbum == nil
            && replayGainTrackPeak == nil && replayGainAlbumPeak == nil
            && comment == nil && artworkData == nil && lyrics == nil
    }
}

/// The MusicBrainz identifiers a file's tags carry, each list in file order
/// (Picard writes one per credited artist). Values are as stored (normally
/// lowercase UUIDs); they are not checked.
public struct MusicBrainzIDs: Sendable, Equatable, Hashable, Codable {
    /// `MUSICBRAINZ_ARTISTID`: the track's artists.
    public var artistIDs: [String] = []
    /// `MUSICBRAINZ_ALBUMARTISTID`: the release's artists.
    public var albumArtistIDs: [String] = []
    /// `MUSICBRAINZ_ALBUMID`: the release.
    public var albumIDs: [String] = []
    /// `MUSICBRAINZ_TRACKID`: the recording (ID3 `UFID` http://musicbrainz.org).
    public var trackIDs: [String] = []
    /// `MUSICBRAINZ_RELEASETRACKID`: the track on the release.
    public var releaseTrackIDs: [String] = []
    /// `MUSICBRAINZ_WORKID`: the work.
    public var workIDs: [String] = []

    public init() {}

    /// True when no identifier is set.
    public var isEmpty: Bool {
        artistIDs.isEmpty && albumArtistIDs.isEmpty && albumIDs.isEmpty && trackIDs.isEmpty
            && releaseTrackIDs.isEmpty && workIDs.isEmpty
    }
}

/// One embedded lyrics text and its ISO 639-2 language (nil when the source
/// declares none or says `und`). The text is as stored: LRC timestamps stay.
public struct LyricsLanguageVariant: Sendable, Equatable, Hashable, Codable {
    /// The ISO 639-2 language code (`"eng"`); nil when the source declares
    /// none or says `und`.
    public var languageCode: String?
    /// The lyrics as stored, LRC timestamps included.
    public var text: String

    /// Builds a variant from its fields, stored as given.
    public init(languageCode: String?, text: String) {
        self.languageCode = languageCode
        self.text = text
    }
}
