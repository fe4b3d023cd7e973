// ControlTransitions — specs/services.md §PlaybackService
// What a control call does to the engine state once it has checked its
// arguments: start a track on a fresh timeline, seek, stop, fail, and follow
// a queue edit. Every function here runs with `engine` held, on a caller's
// thread or on the decode thread (which seeks back at a range's end, starts
// the output and fails); `switchTo` releases the engine while it opens a
// track, as specs/services.md §Threads says.
import Foundation

// MARK: - Control helpers (engine held)

extension DefaultPlaybackService {
    var currentState: PlaybackState { published.state }

    var heardIndex: Int? { timeline.segments.first.flatMap { playbackQueue.index(of: $0.open.track.id) } }

    func checkIndex(_ index: Int, _ call: String) throws(CoreError) {
        guard playbackQueue.tracks.indices.contains(index) else {
            throw .invalidArgument("\(call): index \(index) is outside the queue (\(playbackQueue.tracks.count) tracks)")
        }
    }

    /// The heard track, after crossing any boundary the listener has passed.
    func heardTrackForControl(_ call: String) throws(CoreError) -> OpenTrack {
        switch currentState {
        case .stopped: throw .invalidState("\(call): nothing is loaded; load a file first")
        case .error(let error): throw .invalidState("\(call): playback failed (\(error)); load a file to recover")
        default: break
        }
        followListener(heard: output.framesPlayed)
        guard let heard = timeline.segments.first?.open else { throw .invalidState("\(call): nothing is loaded") }
        return heard
    }

    /// Makes queue entry `index` current, keeping play or pause (stopped →
    /// paused). An entry that fails to open is reported and skipped, as in
    /// playback; throws the last error when nothing after it opens. Opens
    /// with the engine released: a call made meanwhile (stop, another jump)
    /// supersedes this one, which then returns having changed nothing more;
    /// a pause made meanwhile is kept.
    /// `fadingOut`: the heard track, positioned where it is heard
    /// (`outgoingForManualChange`), to fade out under the new one
    /// (specs/services.md §Crossfade); closed when it cannot.
    func switchTo(_ index: Int, fadingOut outgoing: OpenTrack? = nil) throws(CoreError) {
        invalidateDecodedAudio()
        closeAllTracks(keeping: outgoing)
        range = nil
        defer { if let outgoing, fadeOut?.open !== outgoing { closeTrack(outgoing) } }
        var candidate: Int? = index
        var lastError: CoreError?
        var tried = 0
        while let entry = candidate, tried < playbackQueue.tracks.count {
            tried += 1
            let track = playbackQueue.tracks[entry]
            let open: OpenTrack
            do throws(CoreError) {
                guard let opened = try openTrack(track) else { return }
                open = opened
            } catch {
                hub.emit(.error(error, url: track.url))
                lastError = error
                candidate = playbackQueue.following(entry, automatic: false)
                continue
            }
            if let outgoing { _ = beginManualFade(from: outgoing, into: open) }
            // An output failure is not the track's: no point trying the next.
            do throws(CoreError) {
                try startFresh(with: open, playing: intent == .playing)
            } catch {
                endFade()
                fail(with: error, url: nil)
                throw error
            }
            return
        }
        let error = lastError ?? .invalidState("the queue is empty")
        stopOutputAndTimeline()
        setState(.error(error))
        throw error
    }

    /// Starts `open` from its first frame on a fresh timeline: the output is
    /// flushed when the format is the same, reconfigured otherwise.
    func startFresh(with open: OpenTrack, playing: Bool) throws(CoreError) {
        let format = AudioFormat(open.info)
        if outputFormat == format {
            output.flush()
            if !playing && outputStarted { output.pause() }
            if playing && outputStarted { output.resume() }
        } else {
            outputFormat = nil
            outputStarted = false
            do throws(CoreError) {
                try output.configure(sampleRate: format.sampleRate, channels: format.channels)
            } catch {
                closeTrack(open)
                throw error
            }
            outputFormat = format
        }
        timeline.restart(at: output.framesPlayed, with: open, from: open.nextFrame)
        pending = nil
        decoding = open
        endOfData = false
        rangeEndReached = false
        intent = playing ? .playing : .paused
        becomeCurrent(open)
        publishTimeline()
        prefill()
        if playing && !outputStarted { startOutput() }
        nextPositionTick = clock.now()
        setState(playing ? .playing : .paused)
        wakeDecodeThread()
    }

    /// Moves the heard track to `frame`: the output is flushed and the first
    /// frame written after is the sought frame.
    func seekLocked(_ heard: OpenTrack, toFrame frame: Int64) throws(CoreError) {
        while readInFlight === heard || fadeReadInFlight === heard { engine.wait() }
        try decoder.seek(heard.handle, toFrame: frame)
        invalidateDecodedAudio()
        for open in allOpenTracks() where open !== heard { closeTrack(open) }
        awaitingFormat = nil
        preopened = nil
        heard.nextFrame = frame
        heard.exhausted = false
        decoding = heard
        endOfData = false
        rangeEndReached = false
        let reconfigure = AudioFormat(heard.info) != outputFormat
        if !reconfigure {
            output.flush()
        } else {
            // The output went on into a later track's format
            // (`continueInFormat`): back to the heard track's.
            try reconfigureOutput(for: heard)
        }
        timeline.restart(at: output.framesPlayed, with: heard, from: frame)
        publishTimeline()
        prefill()
        if reconfigure && intent == .playing { startOutput() }
        nextPositionTick = clock.now()
        wakeDecodeThread()
    }

    /// Whether audio past `range`'s end, or of a later track, is already queued.
    func decodedPast(_ range: FrameRange, heard: OpenTrack) -> Bool {
        decoding !== heard || awaitingFormat != nil || timeline.segments.count > 1
            || (range.end.map { heard.nextFrame > $0 } ?? false)
    }

    /// Stops; `endOfQueue` also leaves no entry current, as the queue's
    /// last entry playing out does (a `next` past it).
    func stopLocked(endOfQueue: Bool = false) {
        invalidateDecodedAudio()
        closeAllTracks(publish: false)
        stopOutputAndTimeline()
        range = nil
        intent = .stopped
        if endOfQueue { publishedCurrent(nil) }
        setState(.stopped)
    }

    func stopOutputAndTimeline() {
        openEpoch &+= 1  // an open in flight must not start anything now
        output.stop()
        outputStarted = false
        outputFormat = nil
        pending = nil
        timeline.segments = []
        timeline.queuedTitles.removeAll()  // titles of audio that will never be heard
        endOfData = false
        intent = .stopped
        // The empty timeline is published with the stopped or error state
        // that follows (setState), so no reader sees a playing state with no
        // position or duration.
    }

    func fail(with error: CoreError, url: String?) {
        stopOutputAndTimeline()
        hub.emit(.error(error, url: url))
        setState(.error(error))
    }

    /// Configures the output afresh for `open`'s format; left stopped (the
    /// caller starts it once audio is written, or `resume` does). Engine held.
    private func reconfigureOutput(for open: OpenTrack) throws(CoreError) {
        outputFormat = nil
        outputStarted = false
        try output.configure(sampleRate: open.info.sampleRate, channels: open.info.channels)
        outputFormat = AudioFormat(open.info)
    }

    func startOutput() {
        do {
            try output.start()
            outputStarted = true
        } catch {
            fail(with: error, url: nil)
        }
    }

    /// After a queue edit: audio already decoded for a later track that no
    /// longer follows is dropped (by re-seeking the heard track to where the
    /// listener is); a pre-opened next track that no longer follows is closed.
    func queueEdited() {
        openEpoch &+= 1
        publishQueue()
        hub.emit(.queueChanged)
        guard let heard = timeline.segments.first?.open else { return }
        var previous = heard
        var chainValid = true
        for later in timeline.segments.dropFirst().map(\.open) + [awaitingFormat].compactMap({ $0 }) {
            if !follows(later, after: previous) { chainValid = false; break }
            previous = later
        }
        if !chainValid {
            try? seekLocked(heard, toFrame: heardFrame())
            return
        }
        if let preopened, let decoding, !(expectedNext(after: decoding)?.id == preopened.id) {
            if case .success(let open) = preopened.result { closeTrack(open) }
            self.preopened = nil
        }
        if endOfData, let decoding, expectedNext(after: decoding) != nil { endOfData = false }
        wakeDecodeThread()
    }

    private func follows(_ later: OpenTrack, after earlier: OpenTrack) -> Bool {
        expectedNext(after: earlier)?.id == later.track.id
    }

    func expectedNext(after open: OpenTrack) -> Track? {
        playbackQueue.index(of: open.track.id)
            .flatMap { playbackQueue.following($0, automatic: true) }
            .map { playbackQueue.tracks[$0] }
    }
}
