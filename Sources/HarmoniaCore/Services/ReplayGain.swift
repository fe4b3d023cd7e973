// ReplayGain — specs/services.md §ReplayGain
import Foundation

extension ReplayGainSettings {
    /// The linear factor for a track with `tags`: 10^((gain + preamp)/20),
    /// lowered to 1/peak when clipping prevention is on. `album` falls back to
    /// the track tags and `track` to the album tags; a file with neither gets
    /// the preamp alone. `off` is always 1.
    public func linearGain(for tags: TagBundle?) -> Float {
        guard mode != .off else { return 1 }
        let (gain, peak): (Double?, Double?) = switch mode {
        case .album: (tags?.replayGainAlbum ?? tags?.replayGainTrack,
                      tags?.replayGainAlbum != nil ? tags?.replayGainAlbumPeak : tags?.replayGainTrackPeak)
        default: (tags?.replayGainTrack ?? tags?.replayGainAlbum,
                  tags?.replayGainTrack != nil ? tags?.replayGainTrackPeak : tags?.replayGainAlbumPeak)
        }
        var factor = pow(10, ((gain ?? 0) + preampDB) / 20)
        if preventClipping, let peak, peak > 0, factor * peak > 1 {
            factor = 1 / peak
        }
        return Float(factor)
    }
}
