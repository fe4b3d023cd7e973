// CrossfadeMix — specs/services.md §Crossfade
// The decode side of a crossfade: where the outgoing track's fade begins,
// the hand-over to the incoming track with its segment placed at the
// fade's middle, the mix of both sides' reads, and dropping a fade that a
// seek, jump or stop makes stale. Engine held on every call (the decode
// thread, or a control call's prefill); nothing here runs on the output's
// real-time thread.
import Foundation

/// A fade in progress: the outgoing track's last `length` frames are mixed
/// into the first `length` frames of the track being decoded. Engine state.
final class FadeOut {
    let open: OpenTrack
    /// The fade's frames, at the incoming track's rate.
    let length: Int64
    /// Frames of the fade written so far.
    var done: Int64 = 0
    /// Converts the outgoing side to the incoming rate, when they differ.
    let resampler: FadeResampler?

    init(open: OpenTrack, length: Int64, resampler: FadeResampler? = nil) {
        self.open = open
        self.length = length
        self.resampler = resampler
    }
}

/// What happens at a decoded track's end.
enum FadePlan: Equatable {
    /// A gapless join (crossfade off, an album's next track, another format,
    /// an unknown length, a playback range).
    case none
    /// The next track is not open yet: decode no further than this file
    /// frame until it is (the earliest a fade could begin).
    case hold(atFrame: Int64)
    /// The fade begins at this file frame of the outgoing track.
    case fade(atFrame: Int64)
}

extension DefaultPlaybackService {
    /// The longest fade `current` could end with, in its frames (0: none).
    func fadeReach(of current: OpenTrack) -> Int64 {
        guard crossfade.seconds > 0, let end = current.endFrame ?? current.info.totalFrames else { return 0 }
        let length = end - current.startFrame
        guard length > 1 else { return 0 }
        return min(Int64(clampingFrames: crossfade.seconds * current.info.sampleRate), length / 2)
    }

    /// Where `current`'s fade into the next track begins: the overlap is
    /// the crossfade's seconds, shortened to half of either track when one
    /// is shorter than twice that (never three tracks at once).
    func fadePlan(for current: OpenTrack) -> FadePlan {
        let reach = fadeReach(of: current)
        guard reach > 0, let end = current.endFrame ?? current.info.totalFrames,
              range == nil || current !== timeline.segments.first?.open,
              let nextTrack = expectedNext(after: current) else { return .none }
        guard let preopened else { return .hold(atFrame: end - reach) }
        guard preopened.id == nextTrack.id, case .success(let next) = preopened.result,
              next.info.channels == current.info.channels, refusedFade?.incoming !== next,
              let nextEnd = next.endFrame ?? next.info.totalFrames else { return .none }
        if !crossfade.fadeAlbums,
           CrossfadeSettings.continuesAlbum(previous: (current.track, current.tags), next: (next.track, next.tags)) {
            return .none
        }
        // Half the next track, in this track's frames (the rates may differ).
        let nextHalf = Int64(clampingFrames: Double((nextEnd - next.startFrame) / 2) * current.info.sampleRate / next.info.sampleRate)
        let length = min(reach, nextHalf)
        return length > 0 ? .fade(atFrame: end - length) : .none
    }

    /// Starts the fade from `outgoing` into `incoming` (now `decoding`):
    /// the rest of `outgoing` is mixed into `incoming`'s first frames, and
    /// the listener meets `incoming` in the fade's middle.
    /// Across a change of rate (the output continues in the incoming
    /// format), the rest of `outgoing` is converted to the incoming rate, and
    /// a segment of it at that rate is placed before the incoming one.
    func beginFade(from outgoing: OpenTrack, into incoming: OpenTrack) {
        let end = outgoing.endFrame ?? outgoing.info.totalFrames ?? outgoing.nextFrame
        let fromRate = outgoing.info.sampleRate, toRate = incoming.info.sampleRate
        let length = fromRate == toRate ? max(0, end - outgoing.nextFrame)
            : Int64(clampingFrames: Double(max(0, end - outgoing.nextFrame)) * toRate / fromRate)
        let half = length / 2
        var resampler: FadeResampler?
        if fromRate != toRate {
            // The kernel's left half reads the frames just before the fade.
            var history = min(Int64(FadeResampler.halfTaps), outgoing.nextFrame - outgoing.startFrame)
            do throws(CoreError) {
                try decoder.seek(outgoing.handle, toFrame: outgoing.nextFrame - history)
            } catch {
                history = 0
            }
            resampler = FadeResampler(from: fromRate, to: toRate, channels: outgoing.info.channels, history: Int(history))
            timeline.segments.append(Segment(open: outgoing, writeStart: timeline.written, sourceStart: outgoing.nextFrame,
                                             step: fromRate / toRate))
        }
        // The outgoing track stays open: its segment is on the timeline
        // (followListener closes it once the listener has passed it).
        if length > 0 { fadeOut = FadeOut(open: outgoing, length: length, resampler: resampler) }
        timeline.segments.append(Segment(open: incoming, writeStart: timeline.written + half,
                                         sourceStart: incoming.nextFrame + half))
        publishTimeline()
    }

    /// Mixes `frames` frames just read of the incoming track (in `incoming`,
    /// its gain not yet applied) with `outgoingFrames` of the outgoing one
    /// (in `outgoing`; silence after them): each side with its own
    /// ReplayGain, then the equal-power curves. Ends the fade at its length.
    func mixFade(_ fade: FadeOut, incoming: SampleBuffer, gain: Float, frames: Int, channels: Int,
                 outgoing: SampleBuffer, outgoingFrames: Int) {
        let into = incoming.pointer, from = outgoing.pointer
        let length = Double(fade.length)
        for frame in 0..<frames {
            let t = Double(fade.done + Int64(frame)) / length
            let inGain = CrossfadeSettings.incomingGain(t) * gain
            let outGain = frame < outgoingFrames ? CrossfadeSettings.outgoingGain(t) * fade.open.gain : 0
            let base = frame * channels
            for channel in 0..<channels {
                into[base + channel] = into[base + channel] * inGain + from[base + channel] * outGain
            }
        }
        fade.done += Int64(frames)
        if fade.done >= fade.length { endFade() }
    }

    /// Reads `frames` frames of a fade's outgoing side into `buffer`, at the
    /// incoming rate (converted when the rates differ); returns how many it
    /// wrote (several reads when the decoder returns fewer; fewer at the
    /// track's end or an error: the rest is silence). Touches no engine
    /// state: it runs with the engine released.
    func readOutgoing(_ fade: FadeOut, into buffer: SampleBuffer, frames: Int) -> Int {
        guard let resampler = fade.resampler else { return readFully(fade.open, into: buffer.pointer, frames: frames) }
        resampler.produce(frames, into: buffer.pointer) { readFully(fade.open, into: $0, frames: $1) }
        return frames
    }

    private func readFully(_ open: OpenTrack, into pointer: UnsafeMutablePointer<Float>, frames: Int) -> Int {
        var got = 0
        while got < frames {
            let read: Int
            do throws(CoreError) {
                read = try decoder.read(open.handle, into: pointer + got * open.info.channels, maxFrames: frames - got)
            } catch {
                break
            }
            if read <= 0 { break }
            got += read
        }
        return got
    }

    /// For a manual change (next, previous, jump) while playing with a
    /// crossfade: the heard track, its decoder moved to the heard frame, to
    /// fade out from there under the new track; nil when nothing fades (off,
    /// paused, nothing heard, a playback range). Waits for a read in flight
    /// on it. Call before `switchTo`, after `endHeardTrack`.
    func outgoingForManualChange() -> OpenTrack? {
        guard crossfade.seconds > 0, intent == .playing, currentState == .playing, range == nil,
              let heard = timeline.segments.first?.open, !heard.closed else { return nil }
        let frame = heardFrame()
        while readInFlight === heard || fadeReadInFlight === heard { engine.wait() }
        guard !heard.closed else { return nil }
        do throws(CoreError) {
            try decoder.seek(heard.handle, toFrame: frame)
        } catch {
            return nil
        }
        heard.nextFrame = frame
        heard.exhausted = false
        return heard
    }

    /// Starts a manual change's fade: `outgoing` (from `outgoingForManualChange`)
    /// fades out over `incoming`'s first frames — the crossfade's seconds, at
    /// most what is left of `outgoing` and half of `incoming`. Returns false
    /// (and closes `outgoing`) when they cannot mix: another format, nothing left.
    func beginManualFade(from outgoing: OpenTrack, into incoming: OpenTrack) -> Bool {
        var length = Int64(clampingFrames: crossfade.seconds * outgoing.info.sampleRate)
        if let end = outgoing.endFrame ?? outgoing.info.totalFrames { length = min(length, end - outgoing.nextFrame) }
        if let end = incoming.endFrame ?? incoming.info.totalFrames { length = min(length, (end - incoming.startFrame) / 2) }
        guard length > 0, AudioFormat(outgoing.info) == AudioFormat(incoming.info) else {
            closeTrack(outgoing)
            return false
        }
        fadeOut = FadeOut(open: outgoing, length: length)
        return true
    }

    /// The fade is over (or its incoming side ended), or a seek, jump,
    /// stop or queue edit drops it with the audio decoded for it: the
    /// outgoing track's decode session closes unless it is still on the
    /// timeline (the listener has not passed the fade's middle: a seek may
    /// go back into it) or being decoded again (a seek into it).
    func endFade() {
        guard let fade = fadeOut else { return }
        fadeOut = nil
        if fade.open !== decoding, !timeline.segments.contains(where: { $0.open === fade.open }) {
            closeTrack(fade.open)
        }
    }
}
