// DecodeLoop — specs/services.md §Threads
// The decode thread (`harmonia.decode`): it decodes ahead of the listener,
// writes into the output, refills when a quarter of what is queued has been
// heard, opens the next track early and hands over to it (gapless when the
// format is unchanged), and sleeps until the next thing due. `init` starts
// the thread; each pass runs with `engine` held, on the decode thread, and
// releases it only for a `read` or an open. Exceptions: `prefill` and the
// steps it takes run on a control call's thread, and `wakeDecodeThread` on
// any engine holder's. Rebuffering after an underrun: specs/services.md §Buffering.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

// MARK: - Decode thread

extension DefaultPlaybackService {
    func startDecodeThread() {
        let control = self.control
        let clock = self.clock
        let thread = Thread { [weak self] in
            nameCurrentThread("harmonia.decode")
            while true {
                // The service is held only for one pass, never across a wait:
                // releasing it ends the thread (deinit shuts down).
                guard let wait = self?.decodePass() else { return }
                if case .working = wait {
                    sched_yield()
                    continue
                }
                let stop = control.lock.withLock { () -> Bool in
                    switch wait {
                    case .working:
                        break
                    case .condition:
                        while !control.wakeRequested && !control.shuttingDown { control.lock.wait() }
                    case .sleep(let deadline):
                        // Until the next thing due, unless a control call comes first.
                        while !control.wakeRequested && !control.shuttingDown && clock.now() < deadline {
                            clock.wait(on: control.lock, until: deadline)
                        }
                    }
                    return control.shuttingDown
                }
                if stop { return }
            }
        }
        thread.name = "harmonia.decode"
        thread.start()
    }

    /// One pass of the decode thread: up to 32 steps under `engine`; returns
    /// how the thread waits next (for a control call when there is nothing
    /// to do, or until `wakeDeadline()` while playing).
    private func decodePass() -> DecodeThreadControl.Wait {
        engine.withLock {
            // Shut down (set under this lock): no more steps. A step after
            // `shutdown` closed the tracks read a closed handle and sent an
            // error after `stopped` (a flaky test caught it).
            if control.shuttingDown { return .condition }
            control.wakeRequested = false
            control.wait = .working
            var next = Step.again
            for _ in 0..<32 {
                next = step(unlockForRead: true)
                if next != .again { break }
            }
            let wait: DecodeThreadControl.Wait = switch next {
            case .again: .working
            case .idle: .condition
            case .sleep: .sleep(wakeDeadline())
            }
            control.wait = wait
            engine.broadcast()
            return wait
        }
    }

    /// When the decode thread next has work while playing, unless a control
    /// call comes first: a quarter of what is queued has been heard (time to
    /// refill), the listener reaches a track boundary or the end of what was
    /// written, a stream title's frame, or a position event is due. No
    /// sooner than `pollInterval`, no later than `longestWait` (the output's
    /// clock and ours may drift). Engine held.
    private func wakeDeadline() -> UInt64 {
        let now = clock.now()
        var seconds = Self.longestWait
        if let rate = outputFormat?.sampleRate, rate > 0 {
            let heard = output.framesPlayed
            func until(_ frame: Int64) -> Double { Double(max(0, frame &- heard)) / rate }
            // Decoding is over until the listener reaches the end: wake there.
            let draining = endOfData || rangeEndReached || awaitingFormat != nil
            seconds = min(seconds, draining ? until(timeline.written) : until(timeline.written) / 4)
            if timeline.segments.count > 1 { seconds = min(seconds, until(timeline.segments[1].writeStart)) }
            if let title = timeline.queuedTitles.first { seconds = min(seconds, until(title.frame)) }
        }
        if configuration.positionInterval > 0, currentState == .playing {
            seconds = min(seconds, Double(nextPositionTick > now ? nextPositionTick - now : 0) / 1e9)
        }
        seconds = max(seconds, configuration.pollInterval)
        return now &+ UInt64(seconds * 1e9)
    }

    /// The longest the decode thread sleeps while playing.
    private static let longestWait = 0.5

    func wakeDecodeThread() {
        control.wakeRequested = true
        engine.broadcast()
    }

    private enum Step { case again, sleep, idle }

    /// One step: follow the listener, then write pending frames or decode a chunk.
    private func step(unlockForRead: Bool) -> Step {
        let heard = output.framesPlayed
        followListener(heard: heard)
        while let first = timeline.queuedTitles.first, first.frame <= heard {
            timeline.queuedTitles.removeFirst()
            hub.emit(.network(.streamTitle(first.title, byte: first.byte), url: first.url))
        }
        if corkedForBuffering { resumeWhenRefilled() }
        let wait: Step = intent == .playing ? .sleep : .idle
        guard intent != .stopped, let current = decoding, readInFlight !== current else { return wait }
        if pending != nil {
            writePending()
            if pending != nil { return wait }
        }
        if awaitingFormat != nil || endOfData || rangeEndReached {
            // Nothing more to write in this format: an output converting
            // after a rate-changing fade writes its look-ahead out.
            output.releaseHeldFrames()
            return wait
        }
        if current.exhausted {
            // The next open may be slow (a network source): only the decode
            // thread opens, with the engine released; a prefill stops here.
            guard unlockForRead else { return wait }
            advance(after: current)
            return .again
        }
        // A crossfade (specs/services.md §Crossfade): the decoder stops at
        // the fade's first frame, and the next track takes over from there
        // with the rest of this one mixed in.
        let plan = fadePlan(for: current)
        switch plan {
        case .fade(let start) where current.nextFrame >= start:
            guard unlockForRead else { return wait }
            advance(after: current, fading: true)
            return .again
        case .hold(let frame) where current.nextFrame >= frame && !unlockForRead:
            return wait
        default:
            break
        }
        let aheadLimit = Int64(clampingFrames: configuration.decodeAhead * current.info.sampleRate)
        let queued = timeline.written - output.framesPlayed
        if queued >= aheadLimit { return wait }
        // An open releases the engine: the next step looks at the state afresh.
        if unlockForRead && openNextEarly(after: current, aheadLimit: aheadLimit) { return .again }
        var stopAt: Int64?
        switch plan {
        case .fade(let frame), .hold(let frame): stopAt = frame
        case .none: stopAt = nil
        }
        decodeChunk(current, into: unlockForRead ? threadBuffer : controlBuffer, queued: queued,
                    stopAt: stopAt, unlockForRead: unlockForRead)
        return .again
    }

    /// Decodes the first frames right away (in a control call), so sound can
    /// start before the decode thread's next pass. Not for network sources:
    /// their reads may stall, and a control call must not hold the engine
    /// lock through a stall (the decode thread reads with it released). An
    /// http URL read from an offline copy on disk is no network source.
    func prefill() {
        guard let decoding, Self.isLocal(decoding.track.url) || !decoder.readsMayStall(decoding.handle) else { return }
        let target = timeline.written + Int64(configuration.prefillFrames)
        while timeline.written < target, pending == nil, step(unlockForRead: false) == .again {}
    }

    /// The smallest read: what the decoder reads while little is queued.
    private static let smallestReadFrames: Int64 = 4096

    /// Decodes one chunk of `open` (no further than file frame `stopAt`,
    /// where a fade begins), with a fade's outgoing side mixed in, and writes it.
    private func decodeChunk(_ open: OpenTrack, into buffer: SampleBuffer, queued: Int64, stopAt: Int64?, unlockForRead: Bool) {
        // A read is as long as what is already queued, from 4096 frames up
        // to `chunkFrames`: sound starts (a prefill, the first read of a
        // stream) and comes back (after an underrun) as soon as one small
        // read is decoded, and a read that waits on a slow network has
        // that much audio before it; the steady refill reads large batches.
        var want = min(Int64(configuration.chunkFrames), max(Self.smallestReadFrames, queued))
        if let end = open.endFrame { want = min(want, end - open.nextFrame) }
        if let end = range?.end, open === timeline.segments.first?.open {
            if open.nextFrame >= end { rangeEndReached = true; return }
            want = min(want, end - open.nextFrame)
        }
        if let stopAt, stopAt > open.nextFrame { want = min(want, stopAt - open.nextFrame) }
        let fade = open === decoding ? fadeOut : nil
        if let fade { want = min(want, fade.length - fade.done) }
        guard want > 0 else { open.exhausted = true; return }
        let channels = open.info.channels
        buffer.reserve(frames: configuration.chunkFrames, channels: channels)
        let fadeBuffer = unlockForRead ? threadFadeBuffer : controlFadeBuffer
        if let fade { fadeBuffer.reserve(frames: configuration.chunkFrames, channels: fade.open.info.channels) }
        let generationBefore = generation
        let wanted = Int(want)
        // The incoming side, then as many frames of the outgoing side. A local
        // function capturing only constants, not a closure value: either of
        // those would allocate on every read (DecodeThreadAllocationTests).
        func read() -> (Result<Int, CoreError>, outgoing: Int) {
            let result: Result<Int, CoreError>
            do throws(CoreError) {
                result = .success(try self.decoder.read(open.handle, into: buffer.pointer, maxFrames: wanted))
            } catch {
                result = .failure(error)
            }
            guard let fade, case .success(let frames) = result, frames > 0 else { return (result, 0) }
            return (result, self.readOutgoing(fade, into: fadeBuffer, frames: frames))
        }
        let result: Result<Int, CoreError>
        let outgoingFrames: Int
        if unlockForRead {
            readInFlight = open
            fadeReadInFlight = fade?.open
            (result, outgoingFrames) = engine.withLockReleased(read)
            readInFlight = nil
            fadeReadInFlight = nil
            engine.broadcast()
            if let outgoing = fade?.open, outgoing.closeWhenReadReturns { decoder.close(outgoing.handle) }
            if open.closeWhenReadReturns { decoder.close(open.handle); return }
            guard generation == generationBefore, decoding === open, fade === fadeOut else { return }
        } else {
            (result, outgoingFrames) = read()
        }
        // Titles the read passed apply from this chunk's first frame.
        for (url, title, byte) in arrivedTitles.take() { timeline.queuedTitles.append((timeline.written, url, title, byte)) }
        switch result {
        case .failure(let error):
            logger.warn("decode failed: \(open.track.url): \(error)")
            hub.emit(.error(error, url: open.track.url))
            open.failure = error
            open.exhausted = true
            endFade()
        case .success(0):
            open.exhausted = true
            endFade()
        case .success(let frames):
            if let fade {
                mixFade(fade, incoming: buffer, gain: open.gain, frames: frames, channels: channels,
                        outgoing: fadeBuffer, outgoingFrames: outgoingFrames)
            } else if open.gain != 1 {
                let samples = buffer.pointer
                for i in 0..<(frames * channels) { samples[i] *= open.gain }
            }
            open.nextFrame += Int64(frames)
            pending = (buffer, 0, frames, channels)
            writePending()
            if currentState == .buffering && !corkedForBuffering && !outputLost { setState(.playing) }
        }
    }

    /// While buffering with the output corked: resumes once `rebuffer`
    /// seconds are queued again, the output is full, or no more is coming
    /// (the track's end, a range end, a format change) — specs/services.md §Buffering.
    private func resumeWhenRefilled() {
        guard currentState == .buffering, intent == .playing else {
            corkedForBuffering = false
            return
        }
        let rate = decoding?.info.sampleRate ?? 0
        let seconds = max(0, min(configuration.rebuffer, configuration.decodeAhead * 0.75))
        let target = Int64(clampingFrames: seconds * rate)
        let noMoreComing = decoding.map { $0.exhausted } ?? true
        guard timeline.written - output.framesPlayed >= target || pending != nil || noMoreComing
                || endOfData || rangeEndReached || awaitingFormat != nil else { return }
        corkedForBuffering = false
        output.resume()
        setState(.playing)
    }

    private func writePending() {
        guard let (buffer, start, count, channels) = pending else { return }
        let frames = buffer.pointer + start * channels
        var accepted = output.write(frames, frameCount: count)
        if intent == .playing && !outputStarted {
            // Devices want frames before start; file and null outputs take
            // frames only once started.
            startOutput()
            if accepted == 0 && outputStarted { accepted = output.write(frames, frameCount: count) }
        }
        timeline.written += Int64(accepted)
        pending = accepted == count ? nil : (buffer, start + accepted, count - accepted, channels)
    }

    /// Opens the track after `current` once its end is within the decode-ahead
    /// distance, so opening never delays the join. Decode thread only: the
    /// open releases the engine. Returns whether it tried to open.
    private func openNextEarly(after current: OpenTrack, aheadLimit: Int64) -> Bool {
        guard preopened == nil, let end = current.endFrame ?? current.info.totalFrames,
              end - current.nextFrame <= aheadLimit + fadeReach(of: current),
              let next = expectedNext(after: current) else { return false }
        do {
            if let opened = try openTrack(next) { preopened = (next.id, .success(opened)) }
        } catch {
            preopened = (next.id, .failure(error))
        }
        return true
    }

    /// The decoder finished `current`: go on with the queue. A next track of
    /// the same format continues the same output stream (gapless); another
    /// format waits for the listener to reach the boundary. Decode thread
    /// only: an open releases the engine, and a superseded one ends this
    /// call (the next step looks again). `fading`: `current` stopped where
    /// its fade begins (`fadePlan`), and the next track fades in over its rest.
    private func advance(after current: OpenTrack, fading: Bool = false) {
        guard var candidate = playbackQueue.index(of: current.track.id)
                .flatMap({ playbackQueue.following($0, automatic: true) }) else {
            endOfData = true
            return
        }
        var tried = 0
        while tried < max(playbackQueue.tracks.count, 1) {
            tried += 1
            let track = playbackQueue.tracks[candidate]
            let result: Result<OpenTrack, CoreError>
            if let preopened, preopened.id == track.id {
                result = preopened.result
                self.preopened = nil
            } else {
                do {
                    guard let opened = try openTrack(track) else { return }
                    result = .success(opened)
                } catch {
                    result = .failure(error)
                }
            }
            switch result {
            case .success(let next):
                let format = AudioFormat(next.info)
                if fading {
                    // Across a rate change only when the output continues in the new one.
                    if format == outputFormat || continuesOutput(in: format, for: next, fading: true) {
                        decoding = next
                        beginFade(from: current, into: next)
                    } else {
                        // No fade: `current` plays to its end, then the join is as without one.
                        refusedFade = (current, next)
                        self.preopened = (track.id, .success(next))
                    }
                    return
                }
                decoding = next
                if format == outputFormat || continuesOutput(in: format, for: next) {
                    timeline.segments.append(Segment(open: next, writeStart: timeline.written, sourceStart: next.nextFrame))
                    publishTimeline()
                } else {
                    awaitingFormat = next
                }
                return
            case .failure(let error):
                hub.emit(.error(error, url: track.url))
                guard let after = playbackQueue.following(candidate, automatic: false) else {
                    endOfData = true
                    return
                }
                candidate = after
            }
        }
        endOfData = true
    }
}

extension DefaultPlaybackService {
    /// Whether the output takes `format` after what it holds, with no break
    /// (`AudioOutputPort.continueInFormat`, or `continueInFormatForFade`
    /// for a fade: only a fade may make an output convert, so a join
    /// without one stays bit-exact); then it is the output's format for
    /// what is written next. A refusal by error is reported against the
    /// track, which then waits for the drain like any format change. Engine held.
    func continuesOutput(in format: AudioFormat, for next: OpenTrack, fading: Bool = false) -> Bool {
        do throws(CoreError) {
            let continues = fading
                ? try output.continueInFormatForFade(sampleRate: format.sampleRate, channels: format.channels)
                : try output.continueInFormat(sampleRate: format.sampleRate, channels: format.channels)
            guard continues else { return false }
        } catch {
            hub.emit(.error(error, url: next.track.url))
            return false
        }
        outputFormat = format
        return true
    }
}

/// A reusable interleaved Float buffer; grows, never shrinks. Used with the
/// engine held: the decode thread's, or a prefill's (see `threadBuffer`).
final class SampleBuffer {
    private(set) var pointer = UnsafeMutablePointer<Float>.allocate(capacity: 1)
    private var capacity = 1

    func reserve(frames: Int, channels: Int) {
        let needed = frames * channels
        guard needed > capacity else { return }
        pointer.deallocate()
        pointer = .allocate(capacity: needed)
        capacity = needed
    }

    deinit { pointer.deallocate() }
}

/// The engine lock and the decode thread's waiting state, shared with the
/// thread without keeping the service alive.
final class DecodeThreadControl: @unchecked Sendable {
    enum Wait { case working, condition, sleep(UInt64) }
    let lock = ConditionLock()
    // Guarded by `lock`.
    var wait = Wait.working
    var wakeRequested = false
    var shuttingDown = false
}

/// Titles reported on the decode thread while the engine lock is released;
/// guarded by its own lock (`add` on the decoder's thread, `take` engine held).
final class ArrivedTitles: @unchecked Sendable {
    private let lock = ConditionLock()
    private var titles: [(url: String, title: String, byte: Int64)] = []

    func add(_ title: (url: String, title: String, byte: Int64)) { lock.withLock { titles.append(title) } }

    func take() -> [(url: String, title: String, byte: Int64)] {
        lock.withLock {
            defer { titles.removeAll() }
            return titles
        }
    }
}
