// TagBundle — specs/models.md §TagBundle
import Foundation

/// Metadata read from a file: user-facing tags plus technical facts about the
/// stream and file. A tag the file does not carry is `nil`, never `""`
/// (an empty string is a tag that is present and empty).
public struct TagBundle: Sendable, Equatable, Hashable, Codable {
    /// Bumped whenever a field is added, so stored bundles can be re-read.
    /// 3 added the ReplayGain peaks (the reference stands at 2).
    public static let currentSchemaVersion = 3

    // MARK: Tag fields
    public var title: String?
    public var artist: String?
    public var album: String?
    public var albumArtist: String?
    public var composer: String?
    public var genre: String?
    public var year: Int?
    public var trackNumber: Int?
    public var trackTotal: Int?
    public var discNumber: Int?
    public var discTotal: Int?
    public var bpm: Int?
    /// ReplayGain track gain in dB, at the ReplayGain reference level (89 dB SPL, about -18 LUFS).
    public var replayGainTrack: Double?
    /// ReplayGain album gain in dB, same reference level.
    public var replayGainAlbum: Double?
    /// Track peak as a linear amplitude (1.0 = full scale).
    public var replayGainTrackPeak: Double?
    /// Album peak as a linear amplitude (1.0 = full scale).
    public var replayGainAlbumPeak: Double?
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
    public var sampleRate: Double?
    public var channels: Int?
    /// Bytes, for local files.
    public var fileSize: Int?
    /// Codec name (`"flac"`, `"mp3"`, `"aac"`, `"opus"`, …).
    public var codec: String?
    /// `"lossless"` or `"lossy"`, derived from the codec; `nil` when unknown.
    public var encoding: String?

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
        self.title = title; self.artist = artist; self.album = album; self.albumArtist = albumArtist
        self.composer = composer; self.genre = genre; self.year = year
        self.trackNumber = trackNumber; self.trackTotal = trackTotal
        self.discNumber = discNumber; self.discTotal = discTotal; self.bpm = bpm
        self.replayGainTrack = replayGainTrack; self.replayGainAlbum = replayGainAlbum
        self.replayGainTrackPeak = replayGainTrackPeak; self.replayGainAlbumPeak = replayGainAlbumPeak
        self.comment = comment; self.artworkData = artworkData; self.lyrics = lyrics
        self.duration = duration; self.bitrate = bitrate; self.sampleRate = sampleRate
        self.channels = channels; self.fileSize = fileSize; self.codec = codec; self.encoding = encoding
    }

    /// True when no tag field is set; technical fields do not count.
    public var isEmpty: Bool {
        title == nil && artist == nil && album == nil && albumArtist == nil && composer == nil
            && genre == nil && year == nil && trackNumber == nil && trackTotal == nil
            && discNumber == nil && discTotal == nil && bpm == nil
            && replayGainTrack == nil && replayGainAlbum == nil
            && replayGainTrackPeak == nil && replayGainAlbumPeak == nil
            && comment == nil && artworkData == nil && lyrics == nil
    }
}

/// One embedded lyrics text and its ISO 639-2 language (nil when the source
/// declares none or says `und`). The text is as stored: LRC timestamps stay.
public struct LyricsLanguageVariant: Sendable, Equatable, Hashable, Codable {
    public var languageCode: String?
    public var text: String

    public init(languageCode: String?, text: String) {
        self.languageCode = languageCode
        self.text = text
    }
}
