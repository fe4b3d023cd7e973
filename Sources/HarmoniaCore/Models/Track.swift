// Track — specs/models.md §Track
import Foundation

/// One entry of a play queue as an application shows it: where the audio is,
/// what it is called and how long it lasts.
///
/// `start`/`end` make a track a part of its file (a CUE sheet's track, or a
/// range given on the command line): it plays frames `[start, end)` and its
/// times (`duration`, positions, seeks) are measured from `start`.
/// Each value has its own `id`, so the same file queued twice is two tracks.
/// Its tag text is cleaned by `TagText` when `init` or `filled(from:)` sets
/// it, so a track shows the same values whatever filled it.
public struct Track: Sendable, Equatable, Hashable, Codable, Identifiable {
    /// This queue entry's identity (the same file queued twice has two).
    public let id: UUID
    /// Local path, `file://` URL or network URL, as given to the decoder.
    public var url: String
    /// A title given with the entry (a playlist's or CUE sheet's, the
    /// library's), else the file's tag once read.
    public var title: String?
    /// Every artist, in the file's order (several for a duet), as `title`;
    /// empty when none is known.
    public var artists: [String]
    /// The artists joined with "; " (a convenience for one line; nil when
    /// none). Setting it sets one artist.
    public var artist: String? {
        get { TagBundle.joined(artists) }
        set { artists = TagBundle.list(newValue) }
    }
    /// The album, as `title`.
    public var album: String?
    /// Every album artist, in the file's order, as `artists` (no stand-in
    /// from `artists` when the file names none).
    public var albumArtists: [String] = []
    /// The album artists joined with "; " (nil when none), as `artist`.
    public var albumArtist: String? { TagBundle.joined(albumArtists) }
    /// Every genre, in the file's order, as `artists`.
    public var genres: [String] = []
    /// Seconds this track plays (the range's length for a ranged track);
    /// `nil` until the file has been read.
    public var duration: Double?
    /// Embedded cover art (JPEG or PNG bytes), when the file carries one.
    public var artwork: Data?
    /// Cover art at an http(s) URL, given with the entry (a UPnP control
    /// point's `albumArtURI`); frontends show it where the file has no
    /// embedded cover. Whoever sets it checks the scheme.
    public var artworkURL: String?
    /// Seconds into the file where the track begins; `nil` is the start.
    public var start: Double?
    /// Seconds into the file where the track ends; `nil` is the end of the file.
    public var end: Double?
    /// The format of a source that is raw PCM without a header (nil: the
    /// decoder finds the format itself). A source that starts with a WAV or
    /// AIFF header is read by that header instead.
    public var rawPCM: RawPCMFormat?

    /// Builds a queue entry for `url`, with a fresh `id` unless one is given;
    /// every other field defaults to nil (the lists to empty). Tag text is
    /// cleaned (`TagText`). `artists` wins over `artist` when both are given.
    public init(url: String, id: UUID = UUID(), title: String? = nil, artist: String? = nil,
                album: String? = nil, duration: Double? = nil, artwork: Data? = nil,
                start: Double? = nil, end: Double? = nil, artists: [String]? = nil,
                albumArtists: [String] = [], genres: [String] = [], artworkURL: String? = nil) {
        self.id = id
        self.url = url
        self.title = TagText.cleaned(title)
        self.artists = TagText.cleaned(artists ?? TagBundle.list(artist))
        self.album = TagText.cleaned(album)
        self.albumArtists = TagText.cleaned(albumArtists)
        self.genres = TagText.cleaned(genres)
        self.duration = duration
        self.artwork = artwork
        self.start = start
        self.end = end
        self.artworkURL = artworkURL
    }

    /// Fills the fields the tags carry, keeping any already set (a playlist's
    /// `#EXTINF` title or a CUE sheet's, or the library's, wins over the
    /// file's own tag; a list counts as set when it is not empty). The tag
    /// text is cleaned as `init` cleans it. `duration` becomes the file's
    /// length, or the range's when ranged.
    public func filled(from tags: TagBundle) -> Track {
        var track = self
        track.title = title ?? TagText.cleaned(tags.title)
        if track.artists.isEmpty { track.artists = TagText.cleaned(tags.artists) }
        track.album = album ?? TagText.cleaned(tags.album)
        if track.albumArtists.isEmpty { track.albumArtists = TagText.cleaned(tags.albumArtists) }
        if track.genres.isEmpty { track.genres = TagText.cleaned(tags.genres) }
        track.artwork = artwork ?? tags.artworkData
        if let fileDuration = tags.duration {
            let from = start ?? 0
            let to = min(end ?? fileDuration, fileDuration)
            track.duration = max(0, to - from)
        }
        return track
    }
}
