// ReplayGain — specs/services.md §ReplayGain
import Foundation

extension ReplayGainSettings {
    /// The linear factor for a track with `tags`: 10^((gain + preamp)/20),
    /// lowered to 1/peak when clipping prevention is on. `album` falls back to
    /// the track tags and `track` to the album tags; a file with neither gets
    /// the preamp alone. `off` is always 1. A gain, peak or preamp that is
    /// not a finite number is ignored, and the result is always finite and ≥ 0.
    public func linearGain(for tags: TagBundle?) -> Float {
        guard mode != .off else { return 1 }
        let (gain, peak): (Double?, Double?) = switch mode {
        case .album: (tags?.replayGainAlbum ?? tags?.replayGainTrack,
                      tags?.replayGainAlbum != nil ? tags?.replayGainAlbumPeak : tags?.replayGainTrackPeak)
        default: (tags?.replayGainTrack ?? tags?.replayGainAlbum,
                  tags?.replayGainTrack != nil ? tags?.replayGainTrackPeak : tags?.replayGainAlbumPeak)
        }
        // Tags come from files: a value that is not a finite number is no
        // value (the tag reader drops them; a custom reader may not).
        let usableGain = gain.flatMap { $0.isFinite ? $0 : nil } ?? 0
        var factor = pow(10, (usableGain + (preampDB.isFinite ? preampDB : 0)) / 20)
        if preventClipping, let peak, peak.isFinite, peak > 0, factor * peak > 1 {
            factor = 1 / peak
        }
        // Never NaN, infinite or negative samples: an unusable factor is unity.
        guard factor.isFinite, factor >= 0, Float(factor).isFinite else { return 1 }
        return Float(factor)
    }
}
