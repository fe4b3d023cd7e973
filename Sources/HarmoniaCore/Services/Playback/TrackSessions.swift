// TrackSessions — specs/services.md §Threads
// The decode sessions the service holds: opening a track (its I/O with the
// engine released, dropped when the open epoch moved), closing one (later,
// when a read is in flight on it), and the open tracks themselves. Engine
// held on every call, on a caller's thread or the decode thread;
// `prepareTrack` alone touches no engine state.
import Foundation

// MARK: - Tracks and sessions

extension DefaultPlaybackService {
    /// Opens `track`'s file, reads its tags (local files), seeks to its
    /// start. That I/O runs with the engine released, so control calls are
    /// answered through a slow open (specs/services.md §Threads explains).
    /// Returns nil when `openEpoch` moved meanwhile (the handle is closed,
    /// an error dropped).
    /// Engine held on entry and return; the caller must expect any engine
    /// state to have changed.
    func openTrack(_ track: Track) throws(CoreError) -> OpenTrack? {
        let epoch = openEpoch
        let result = engine.withLockReleased { prepareTrack(track) }
        guard openEpoch == epoch else {
            if case .success(let prepared) = result { decoder.close(prepared.handle) }
            return nil
        }
        let prepared = try result.get()
        openEpoch &+= 1
        playbackQueue.update(prepared.track)
        publishQueue()
        return OpenTrack(track: prepared.track, handle: prepared.handle, info: prepared.info, tags: prepared.tags,
                         startFrame: prepared.start, endFrame: prepared.end, gain: replayGain.linearGain(for: prepared.tags))
    }

    private struct PreparedTrack {
        var track: Track
        var handle: DecodeHandle
        var info: StreamInfo
        var tags: TagBundle?
        var start: Int64
        var end: Int64?
    }

    /// The I/O of `openTrack`: touches no engine state (any thread, engine
    /// held or not).
    private func prepareTrack(_ track: Track) -> Result<PreparedTrack, CoreError> {
        let handle: DecodeHandle
        do throws(CoreError) {
            if let format = track.rawPCM {
                handle = try decoder.open(url: track.url, rawPCM: format)
            } else {
                handle = try decoder.open(url: track.url)
            }
        } catch {
            return .failure(error)
        }
        do {
            let info = try decoder.info(handle)
            // The decoder's own tags when it has them (one open per track);
            // otherwise the tag reader, for local files only.
            let tags = (try? decoder.tags(handle)) ?? (Self.isLocal(track.url) ? (try? tagReader?.read(url: track.url)) : nil)
            var filled = tags.map { track.filled(from: $0) } ?? track
            if let start = track.start, !(start.isFinite && start >= 0) {
                throw CoreError.invalidArgument("\(track.url): the track's start \(start) s is not a time; it must be ≥ 0")
            }
            if let end = track.end, !(end.isFinite && end > (track.start ?? 0)) {
                throw CoreError.invalidArgument("\(track.url): the track's end \(end) s must be a time after its start")
            }
            let start = Int64(clampingFrames: (track.start ?? 0) * info.sampleRate)
            // Only a track's own end caps reads: at the file's end the decoder
            // itself says whether the stream ended cleanly or was truncated.
            let end = track.end.map { min(info.totalFrames ?? .max, Int64(clampingFrames: $0 * info.sampleRate)) }
            if let total = info.totalFrames, start > total {
                throw CoreError.invalidArgument("\(track.url): the track starts at \(track.start ?? 0) s, after the end of the file (\(info.duration) s)")
            }
            if filled.duration == nil || tags == nil {
                let fileDuration = info.totalFrames.map { Double($0) / info.sampleRate } ?? info.duration
                filled.duration = max(0, min(track.end ?? fileDuration, fileDuration) - (track.start ?? 0))
            }
            if start > 0 { try decoder.seek(handle, toFrame: start) }
            return .success(PreparedTrack(track: filled, handle: handle, info: info, tags: tags, start: start, end: end))
        } catch let error as CoreError {
            decoder.close(handle)
            return .failure(error)
        } catch {
            decoder.close(handle)
            return .failure(.decodeError("\(track.url): \(error)"))
        }
    }

    static func isLocal(_ url: String) -> Bool {
        url.hasPrefix("file://") || !url.contains("://")
    }

    func allOpenTracks() -> [OpenTrack] {
        var all: [OpenTrack] = timeline.segments.map(\.open)
        for open in [decoding, awaitingFormat, fadeOut?.open] + [preopened.flatMap { try? $0.result.get() }] {
            if let open, !all.contains(where: { $0 === open }) { all.append(open) }
        }
        return all
    }

    func closeTrack(_ open: OpenTrack) {
        guard !open.closed else { return }
        open.closed = true
        if readInFlight === open || fadeReadInFlight === open { open.closeWhenReadReturns = true } else { decoder.close(open.handle) }
    }

    /// Closes every open track. `publish: false` when a stopped or error
    /// state follows, which publishes the empty timeline with it (setState).
    /// `keeping`: one track left open (a manual change's outgoing side).
    func closeAllTracks(publish: Bool = true, keeping kept: OpenTrack? = nil) {
        for open in allOpenTracks() where open !== kept { closeTrack(open) }
        timeline.segments = []
        fadeOut = nil
        refusedFade = nil
        decoding = nil
        awaitingFormat = nil
        preopened = nil
        if publish { publishTimeline() }
    }

    /// Drops everything decoded but not yet heard, and any read in flight.
    func invalidateDecodedAudio() {
        generation &+= 1
        openEpoch &+= 1
        pending = nil
        endFade()
    }
}

/// One open decode session and what the service knows of its track.
/// Owned by the engine (guarded by its lock).
final class OpenTrack {
    var track: Track
    let handle: DecodeHandle
    let info: StreamInfo
    let tags: TagBundle?
    /// The track's first frame in its file, and its end when the track is a
    /// range of the file (nil: the file's end).
    let startFrame: Int64
    let endFrame: Int64?
    var gain: Float
    /// The next frame `read` delivers.
    var nextFrame: Int64
    var exhausted = false
    /// Why decoding stopped early, if it did.
    var failure: CoreError?
    var closed = false
    var closeWhenReadReturns = false

    init(track: Track, handle: DecodeHandle, info: StreamInfo, tags: TagBundle?, startFrame: Int64, endFrame: Int64?, gain: Float) {
        self.track = track
        self.handle = handle
        self.info = info
        self.tags = tags
        self.startFrame = startFrame
        self.endFrame = endFrame
        self.gain = gain
        self.nextFrame = startFrame
    }

    /// The file frame `seconds` into the track (clamped: never traps).
    func frame(atSeconds seconds: Double) -> Int64 {
        startFrame + Int64(clampingFrames: seconds * info.sampleRate)
    }

    func seconds(atFrame frame: Int64) -> Double {
        Double(frame - startFrame) / info.sampleRate
    }
}

/// A stream's sample rate and channel count: the output is reconfigured
/// when it changes.
struct AudioFormat: Equatable {
    let sampleRate: Double
    let channels: Int
    init(_ info: StreamInfo) {
        sampleRate = info.sampleRate
        channels = info.channels
    }
}
