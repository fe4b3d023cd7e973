// Crossfade — specs/services.md §Crossfade
import Foundation

/// How track changes overlap: `seconds` of the outgoing track's end mixed
/// with as much of the next one's start (0: gapless, no fade). Two tracks
/// of one album in order (`CrossfadeSettings.continuesAlbum`) stay
/// gapless unless `fadeAlbums` is set.
public struct CrossfadeSettings: Sendable, Equatable {
    /// The overlap in seconds, 0 (off) ... `maximumSeconds`.
    public private(set) var seconds: Double
    /// Fade between consecutive tracks of one album too.
    public var fadeAlbums: Bool

    /// The longest overlap accepted.
    public static let maximumSeconds = 30.0

    /// Off: every join gapless.
    public init() {
        seconds = 0
        fadeAlbums = false
    }

    /// Checks `seconds` (a number from outside): finite, 0 ... `maximumSeconds`.
    /// - Throws: `CoreError.invalidArgument` with a one-line reason.
    public init(seconds: Double, fadeAlbums: Bool = false) throws(CoreError) {
        guard seconds.isFinite, seconds >= 0, seconds <= Self.maximumSeconds else {
            let shown = seconds.isFinite && seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int64(seconds)) : "\(seconds)"
            throw .invalidArgument("crossfade: \(shown) is not a number of seconds from 0 to \(Int(Self.maximumSeconds))")
        }
        self.seconds = seconds
        self.fadeAlbums = fadeAlbums
    }

    /// Whether `next` follows `previous` on the same album: the same album
    /// (non-empty) and album artist, the same disc (none counts as 1), and
    /// the next track number; or the next range of the same file (a CUE
    /// sheet's next track, whose tags are the file's). Such a join is
    /// gapless unless `fadeAlbums`.
    public static func continuesAlbum(previous: (track: Track, tags: TagBundle?), next: (track: Track, tags: TagBundle?)) -> Bool {
        if previous.track.url == next.track.url, let end = previous.track.end, next.track.start == end { return true }
        guard let album = previous.track.album, !album.isEmpty, album == next.track.album,
              previous.track.albumArtist == next.track.albumArtist,
              (previous.tags?.discNumber ?? 1) == (next.tags?.discNumber ?? 1),
              let number = previous.tags?.trackNumber, let following = next.tags?.trackNumber else { return false }
        return following == number &+ 1
    }

    /// The outgoing side's gain `t` of the way through a fade (0 ... 1): cos(π/2·t).
    @inline(__always) static func outgoingGain(_ t: Double) -> Float { Float(cos(Double.pi / 2 * t)) }
    /// The incoming side's gain: sin(π/2·t). The two are equal-power
    /// (their squares add to 1) at every t.
    @inline(__always) static func incomingGain(_ t: Double) -> Float { Float(sin(Double.pi / 2 * t)) }
}
