// What the scanner keeps, and how a file's tags become a song — specs/library.md §Scanner
import HarmoniaCore

/// The kinds of file the scanner keeps, recognised by extension (without case).
public enum LibraryFileKind: Sendable, Equatable {
    case audio, playlist

    /// Audio extensions: what FFmpeg 5.1 decodes and music libraries hold.
    public static let audioExtensions: Set<String> = [
        "flac", "mp3", "mp2", "ogg", "oga", "opus", "spx", "m4a", "m4b", "mp4", "aac", "alac",
        "wav", "aiff", "aif", "aifc", "wv", "ape", "mpc", "dsf", "dff", "wma", "mka", "tta", "caf", "ac3", "au",
    ]
    /// Playlist extensions (listed as playlists, not read).
    public static let playlistExtensions: Set<String> = ["m3u", "m3u8", "pls", "cue"]

    /// The kind of the file called `name`; nil for a file the library ignores.
    public init?(fileName name: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex else { return nil }
        let ext = name[name.index(after: dot)...].lowercased()
        if Self.audioExtensions.contains(ext) { self = .audio }
        else if Self.playlistExtensions.contains(ext) { self = .playlist }
        else { return nil }
    }
}

extension LibrarySong {
    /// The song at `path` from what the tag reader gave: tags as MPD writes
    /// them (Track and Disc bare, Date the year), the exact duration, and the
    /// `Format` "RATE:BITS:CHANNELS".
    public init(path: String, modified: Int64, size: Int64, tags: TagBundle, stream: StreamInfo) {
        var values: [LibraryTag: [String]] = [:]
        func put(_ tag: LibraryTag, _ list: [String]) {
            let cleaned = TagText.cleaned(list)
            if !cleaned.isEmpty { values[tag] = cleaned }
        }
        func put(_ tag: LibraryTag, _ value: String?) { put(tag, value.map { [$0] } ?? []) }
        put(.artist, tags.artists)
        put(.albumArtist, tags.albumArtists)
        put(.album, tags.album)
        put(.title, tags.title)
        put(.genre, tags.genres)
        put(.composer, tags.composers)
        put(.performer, tags.performers)
        put(.comment, tags.comment)
        put(.musicBrainzArtistID, tags.musicBrainz.artistIDs)
        put(.musicBrainzAlbumID, tags.musicBrainz.albumIDs)
        put(.musicBrainzAlbumArtistID, tags.musicBrainz.albumArtistIDs)
        put(.musicBrainzTrackID, tags.musicBrainz.trackIDs)
        put(.musicBrainzReleaseTrackID, tags.musicBrainz.releaseTrackIDs)
        put(.musicBrainzWorkID, tags.musicBrainz.workIDs)
        put(.track, tags.trackNumber.map(String.init))
        put(.disc, tags.discNumber.map(String.init))
        put(.date, tags.year.map(String.init))
        let duration = stream.duration.isFinite && stream.duration >= 0 ? stream.duration : tags.duration?.finiteOrNil
        self.init(path: path, modified: modified, size: max(0, size), tags: values,
                  duration: duration, format: Self.format(stream: stream, encoding: tags.encoding))
    }

    /// MPD's `Format`: "44100:16:2"; bits "f" for float samples (float PCM,
    /// and lossy codecs, which FFmpeg decodes to float, as MPD's FFmpeg
    /// plugin reports them); "*" for a part that is unknown or absurd.
    static func format(stream: StreamInfo, encoding: String?) -> String {
        let rate = stream.sampleRate.isFinite && stream.sampleRate >= 1 && stream.sampleRate <= 10_000_000
            ? String(Int(stream.sampleRate.rounded())) : "*"
        let float = (stream.codec ?? "").hasPrefix("pcm_f") || encoding == "lossy"
        let bits = float ? "f" : (1...64).contains(stream.bitDepth) ? String(stream.bitDepth) : "*"
        let channels = (1...255).contains(stream.channels) ? String(stream.channels) : "*"
        return "\(rate):\(bits):\(channels)"
    }
}
