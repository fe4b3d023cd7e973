// CueSheet, CueTrack — specs/models.md §CueSheet (CueTrack)
import Foundation

/// One `TRACK` of a CUE sheet: where it starts in the sheet's audio file and
/// what it is called. Times are seconds from the file's first frame, computed
/// from the sheet's `MM:SS:FF` (75 CUE frames per second) as
/// `MM × 60 + SS + FF / 75` without rounding.
public struct CueTrack: Sendable, Equatable, Hashable, Codable {
    /// The `TRACK nn` number (≥ 1). Not necessarily contiguous.
    public let index: Int
    /// The track's `TITLE`, or the sheet's when the track has none.
    public let title: String?
    /// The track's `PERFORMER`, or the sheet's when the track has none.
    public let performer: String?
    /// Seconds: the track's `INDEX 01`.
    public let startTime: Double
    /// Seconds: the next track's `INDEX 01` minus one CUE frame (1/75 s);
    /// `nil` for the last track (to the end of the file).
    public let endTime: Double?

    /// Builds a track from its fields, stored as given (not validated).
    public init(index: Int, title: String?, performer: String?, startTime: Double, endTime: Double?) {
        self.index = index
        self.title = title
        self.performer = performer
        self.startTime = startTime
        self.endTime = endTime
    }
}

/// A parsed CUE sheet: one audio file and its tracks in playing order.
public struct CueSheet: Sendable, Equatable, Hashable, Codable {
    /// The `FILE` the tracks are in: an absolute path when the sheet's own
    /// path is absolute (a relative `FILE` is resolved against the sheet's folder).
    public let fileURL: String
    /// The sheet-level `TITLE` (the album).
    public let title: String?
    /// The sheet-level `PERFORMER`.
    public let performer: String?
    /// At least one track, ascending by `startTime`.
    public let tracks: [CueTrack]

    /// Builds a sheet from its fields, stored as given: nothing checks that
    /// `tracks` is non-empty or ordered (`CueSheetFileAdapter` does).
    public init(fileURL: String, title: String?, performer: String?, tracks: [CueTrack]) {
        self.fileURL = fileURL
        self.title = title
        self.performer = performer
        self.tracks = tracks
    }

    /// CUE frames per second: times are `MM:SS:FF` with FF in 75ths of a second.
    public static let framesPerSecond = 75.0

    /// Queue entries that play the file's audio from the first track's start
    /// to the end of the file, every frame exactly once: track *i* is the range
    /// `[startTime(i), startTime(i+1))` of `fileURL` (not `endTime`, which
    /// stops one CUE frame short), the last one is open-ended. Titles and
    /// performers come from the sheet (they win over the file's tags), the
    /// album is the sheet's title.
    public func queueTracks() -> [Track] {
        tracks.enumerated().map { i, cue in
            Track(url: fileURL, title: cue.title, artist: cue.performer, album: title,
                  start: cue.startTime,
                  end: i + 1 < tracks.count ? tracks[i + 1].startTime : nil)
        }
    }
}
