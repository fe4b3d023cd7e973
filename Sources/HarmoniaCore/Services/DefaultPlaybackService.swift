// DefaultPlaybackService — specs/services.md §DefaultPlaybackService
// The public facade and the engine's state table. The code that works on
// that state lives by owner in Services/Playback/: ControlTransitions.swift
// (what a control call does), DecodeLoop.swift (the decode thread),
// HeardTimeline.swift (what the listener has reached), TrackSessions.swift
// (decode sessions), PublishedPlayback.swift (what readers see) and
// OutputEvents.swift (the output's events thread).
import Foundation
import Synchronization

/// The playback service: a queue decoded by one decode thread into an
/// `AudioOutputPort`, whose heard-frames clock is the position.
///
/// Threads, as specs/services.md §Threads says:
/// - the decode thread (a real `Thread`: it blocks on I/O) decodes ahead,
///   opens the next track early, and follows what the listener hears to
///   send track, position and range events at the right moment;
/// - the output's real-time thread, which this class never waits for;
/// - callers on any thread. Control calls are serialised by `engine`, which
///   the decode thread releases while it waits for a `read`, and every
///   caller while it opens a track (a slow network open blocks no one). Reads of state,
///   position, duration and queue take only `published`, never held across I/O.
///
/// Lock order: `engine` before `published`; `volumeSetter` (setVolume only) before
/// `published`; the output's own locks last.
///
/// The engine state below is internal (not private) only so the extensions
/// in Services/Playback/ can reach it; nothing outside the service touches it.
public final class DefaultPlaybackService: PlaybackService, @unchecked Sendable {
    /// The tuning given to `init`; fixed for the service's lifetime
    /// (`setReplayGain(_:)` changes the gain in use, not this value).
    public let configuration: PlaybackConfiguration
    // Immutable after init.
    let decoder: any DecoderPort
    let output: any AudioOutputPort
    let clock: any ClockPort
    let logger: any LoggerPort
    let tagReader: (any TagReaderPort)?
    /// Events out, to `events()` streams and observers; any thread emits.
    let hub = EventHub<PlaybackEvent>()
    /// The engine lock and the decode thread's waiting state (DecodeLoop.swift).
    let control = DecodeThreadControl()
    var engine: ConditionLock { control.lock }

    // MARK: Engine state, guarded by `engine`
    var playbackQueue = PlaybackQueue()
    /// What the user asked for; `state` adds buffering and error.
    var intent = Intent.stopped
    /// The track being decoded (the heard one, or the next after a boundary).
    var decoding: OpenTrack?
    /// The output's timeline since its last configure or flush: segments,
    /// the write index and stream titles waiting to be heard (HeardTimeline.swift).
    var timeline: OutputTimeline
    var outputFormat: AudioFormat? {
        didSet { outputFill.rate.store(Int64(outputFormat?.sampleRate ?? 0), ordering: .relaxed) }
    }
    /// The timeline's write index and the output's rate, for `outputBuffer()` (atomics).
    let outputFill: OutputFill
    var outputStarted = false
    /// The output reported an error and is reconnecting (PulseAudio,
    /// Snapcast): `buffering` until its `reconnected`, since nothing is heard.
    var outputLost = false
    /// The next track, opened, when its format differs: it starts once the
    /// listener has heard every written frame and the output is reconfigured.
    var awaitingFormat: OpenTrack?
    /// The next track opened early, or the error opening it gave.
    var preopened: (id: UUID, result: Result<OpenTrack, CoreError>)?
    /// The queue has nothing after the last decoded track.
    var endOfData = false
    /// The reference's playback range on the current track, in file frames.
    var range: FrameRange?
    /// Decoding stopped at the range's end.
    var rangeEndReached = false
    /// Bumped by every call that invalidates decoded audio (seek, load, skip,
    /// stop): a read that returns into another generation is dropped.
    var generation: UInt64 = 0
    /// The track a `read` is in flight on (engine released), if any.
    var readInFlight: OpenTrack?
    /// The outgoing track a fade's `read` is in flight on with it, if any.
    var fadeReadInFlight: OpenTrack?
    /// The crossfade in use (`setCrossfade`); `fadeOut` is a fade in
    /// progress (Playback/CrossfadeMix.swift).
    var crossfade: CrossfadeSettings
    var fadeOut: FadeOut?
    /// A join whose fade the output refused (another rate it cannot continue
    /// in): the outgoing track plays to its end instead.
    var refusedFade: (outgoing: OpenTrack, incoming: OpenTrack)?
    /// Moved by every change that makes an open in flight (engine released)
    /// stale: decoded audio invalidated, a queue edit, a stop or failure,
    /// another open that succeeded. An open that finds it moved is dropped.
    var openEpoch: UInt64 = 0
    var replayGain: ReplayGainSettings
    var nextPositionTick: UInt64 = 0
    /// Set once in init (OutputEvents.swift); closed by `shutdown()`.
    var outputEvents: OutputEventInbox?
    /// The decode thread's read buffer; `controlBuffer` is a prefill's (a
    /// control call decoding with the engine held).
    let threadBuffer = SampleBuffer()
    let controlBuffer = SampleBuffer()
    /// The outgoing side of a fade, read beside `threadBuffer` or `controlBuffer`.
    let threadFadeBuffer = SampleBuffer()
    let controlFadeBuffer = SampleBuffer()
    /// Decoded frames the output has not accepted yet: `count` frames at
    /// `start` of `buffer`, with `channels` channels.
    var pending: (buffer: SampleBuffer, start: Int, count: Int, channels: Int)?
    /// The output is paused by the service itself while buffering, until
    /// `rebuffer` seconds are queued again (not by the user: `intent` stays playing).
    var corkedForBuffering = false
    /// ICY titles the decoder reported while it read (decode thread, engine
    /// released), waiting to be placed on the output timeline; own lock.
    let arrivedTitles = ArrivedTitles()

    /// Serialises `setVolume` (not `engine`: setting the volume never waits
    /// for a control call or the decode thread). Before the output's locks.
    let volumeSetter = ConditionLock()

    // MARK: Published state, guarded by its own lock
    /// What callers read without waiting (PublishedPlayback.swift).
    let published = PublishedPlayback()

    /// Creates a stopped service with an empty queue and starts its two
    /// threads: the decode thread (`harmonia.decode`) and the one that
    /// handles the output's events (`harmonia.events`). `shutdown()`, or
    /// releasing the service, ends them.
    /// - Parameters:
    ///   - decoder: opens and decodes every track; its network events are
    ///     sent on as `PlaybackEvent.network`.
    ///   - output: where decoded audio goes; the service configures, starts
    ///     and stops it, and its `framesPlayed` is the heard position.
    ///   - clock: times the decode thread's waits and the position events
    ///     (a `ManualClock` makes a test deterministic).
    ///   - logger: receives the service's messages; by default they are dropped.
    ///   - tagReader: reads tags of local files as they are opened (track
    ///     metadata and ReplayGain) when the decoder does not give them
    ///     itself (`DecoderPort.tags`); with neither, tracks have no tags.
    ///   - configuration: the service's tuning (`PlaybackConfiguration`).
    public init(decoder: any DecoderPort, output: any AudioOutputPort, clock: any ClockPort,
                logger: any LoggerPort = NoopLoggerAdapter(), tagReader: (any TagReaderPort)? = nil,
                configuration: PlaybackConfiguration = PlaybackConfiguration()) {
        self.decoder = decoder
        self.output = output
        self.clock = clock
        let fill = OutputFill()
        self.outputFill = fill
        self.timeline = OutputTimeline(fill: fill)
        self.logger = logger
        self.tagReader = tagReader
        self.configuration = configuration
        self.replayGain = configuration.replayGain
        self.crossfade = configuration.crossfade
        published.setCrossfade(configuration.crossfade)
        startDecodeThread()
        startOutputEventForwarder()
        // Reconnects and station metadata go out as they happen: they say
        // why the sound stopped or who is playing (specs/network.md §Events lists them).
        // A stream title waits until the listener hears its first frame.
        decoder.observeNetwork { [hub, arrivedTitles] url, event in
            if case .streamTitle(let title, let byte) = event {
                arrivedTitles.add((url, title, byte))
            } else {
                hub.emit(.network(event, url: url))
            }
        }
    }

    deinit { shutdown() }

    /// Guarded by `engine`.
    private func checkNotShutDown(_ call: String) throws(CoreError) {
        if control.shuttingDown { throw .invalidState("\(call): the service was shut down; make a new one") }
    }

    /// Stops playback for good: the output stops, every open track closes,
    /// the decode thread ends and every `events()` stream finishes (so a
    /// `for await` over it ends). Idempotent; deinit calls it. Afterwards
    /// `load`, `jump` and `play` throw `invalidState`; reads still answer.
    public func shutdown() {
        let first = engine.withLock { () -> Bool in
            guard !control.shuttingDown else { return false }
            control.shuttingDown = true
            engine.broadcast()
            return true
        }
        guard first else { return }
        outputEvents?.close()
        output.stop()
        engine.withLock {
            for open in allOpenTracks() where !open.closed { closeTrack(open) }
            if currentState != .stopped { setState(.stopped) }
        }
        hub.finish()
    }

    // MARK: - Reading (never waits on I/O)

    public var state: PlaybackState { published.state }

    public func currentTime() -> Double { published.currentTime(playedBy: output) }

    public func duration() -> Double { published.duration }
    /// Setting it is `setVolume(_:)`.
    public var volume: Float {
        get { published.volume }
        set { setVolume(newValue) }
    }
    public var queue: [Track] { published.tracks }
    /// Setting it is `setRepeatMode(_:)`.
    public var repeatMode: RepeatMode {
        get { published.repeatMode }
        set { setRepeatMode(newValue) }
    }
    /// Setting it is `setShuffle(_:)`.
    public var shuffle: Bool {
        get { published.shuffled }
        set { setShuffle(newValue) }
    }

    public var currentIndex: Int? { published.currentIndex }

    public var currentTrack: Track? { published.currentTrack }

    public func events() -> AsyncStream<PlaybackEvent> { hub.stream() }

    /// Calls `observer` synchronously for every event, on the thread that
    /// caused it (the decode thread or a caller). It must return quickly and
    /// must not call the service.
    public func observe(_ observer: @escaping @Sendable (PlaybackEvent) -> Void) {
        hub.observe(observer)
    }

    /// Moves what the listener hears by `seconds` without a flush or a
    /// seek — positive skips ahead, negative holds on silence — at the
    /// output's current rate, to the frame
    /// (specs/services.md §Sync corrections). The heard position follows exactly. Returns false when
    /// nothing plays or the output cannot (`AudioOutputPort.shiftPlayback`).
    /// Any thread.
    public func shiftPlayback(bySeconds seconds: Double) -> Bool {
        engine.withLock {
            guard let rate = outputFormat?.sampleRate, rate > 0, seconds.isFinite, abs(seconds) <= 3600 else { return false }
            let frames = Int64((seconds * rate).rounded())
            return frames == 0 || output.shiftPlayback(byFrames: frames)
        }
    }

    /// Audio written to the output and not heard yet (what its ring and its
    /// device hold), and the most the service keeps queued ahead of the
    /// listener (`decodeAhead`), in frames at the output's rate; zeros while
    /// stopped or before the output is configured. A player protocol's
    /// buffer report (slimproto's STAT). Any thread; never takes the engine.
    public func outputBuffer() -> (queuedFrames: Int64, capacityFrames: Int64) {
        let rate = outputFill.rate.load(ordering: .relaxed)
        switch state {
        case .stopped, .error: return (0, 0)
        default: guard rate > 0 else { return (0, 0) }
        }
        let queued = outputFill.written.load(ordering: .relaxed) &- output.framesPlayed
        return (max(queued, 0), Int64(clampingFrames: configuration.decodeAhead * Double(rate)))
    }

    /// Blocks until the decode thread has done all it can at the clock's
    /// current time (it waits for a control call, or for a later time).
    /// For deterministic tests and the vector runner with a manual clock.
    public func waitUntilSettled() {
        engine.withLock {
            while true {
                switch control.wait {
                case .condition where !control.wakeRequested: return
                case .sleep(let deadline) where !control.wakeRequested && deadline > clock.now(): return
                default: engine.wait()
                }
            }
        }
    }

    // MARK: - The reference surface

    public func load(url: String) throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            try checkNotShutDown("load")
            guard !url.isEmpty else { throw .invalidArgument("load: the url is empty") }
            endHeardTrack(reason: .skipped)
            invalidateDecodedAudio()
            closeAllTracks()
            range = nil
            playbackQueue.removeAll()
            let track = Track(url: url)
            playbackQueue.append([track], current: nil)
            publishQueue()
            hub.emit(.queueChanged)
            let open: OpenTrack
            do throws(CoreError) {
                // nil: a call made while it opened superseded this load.
                guard let opened = try openTrack(track) else { return }
                open = opened
            } catch {
                fail(with: error, url: url)
                throw error
            }
            do throws(CoreError) {
                try startFresh(with: open, playing: false)
            } catch {
                fail(with: error, url: nil)
                throw error
            }
        }
    }

    public func play() throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            switch currentState {
            case .stopped:
                try checkNotShutDown("play")
                throw .invalidState("play: nothing is loaded; load a file first")
            case .error(let error): throw .invalidState("play: playback failed (\(error)); load a file to recover")
            case .playing, .buffering: return
            case .paused: break
            }
            intent = .playing
            if outputStarted { output.resume() } else { startOutput() }
            nextPositionTick = clock.now()
            setState(.playing)
            wakeDecodeThread()
        }
    }

    /// As `play` from paused before the output has started (a track opened
    /// paused), with its first frame heard when the monotonic clock reaches
    /// `deadline` (ns; `AudioOutputPort.start(atMonotonicNanoseconds:)`):
    /// the heard position holds at the track's start until then. Returns
    /// false and changes nothing when it cannot — not paused, the output
    /// already started (a resume), or an output that cannot start at a
    /// time — and the caller then plays at the deadline itself
    /// (specs/slimproto.md §Sync). Any thread.
    /// - Throws: as `play`, when the output fails to start.
    public func play(atMonotonicNanoseconds deadline: UInt64) throws(CoreError) -> Bool {
        try engine.withLock { () throws(CoreError) -> Bool in
            guard case .paused = currentState, !outputStarted, outputFormat != nil else { return false }
            do throws(CoreError) {
                guard try output.start(atMonotonicNanoseconds: deadline) else { return false }
            } catch {
                fail(with: error, url: nil)
                throw error
            }
            outputStarted = true
            intent = .playing
            nextPositionTick = clock.now()
            setState(.playing)
            wakeDecodeThread()
            return true
        }
    }

    public func pause() throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            switch currentState {
            case .error(let error): throw .invalidState("pause: playback failed (\(error)); load a file to recover")
            case .stopped, .paused: return
            case .playing, .buffering: break
            }
            output.pause()
            followListener(heard: output.framesPlayed)
            emitHeardPosition()
            intent = .paused
            setState(.paused)
        }
    }

    public func stop() {
        engine.withLock {
            guard currentState != .stopped else {
                openEpoch &+= 1  // a jump or load opening from stopped is dropped
                return
            }
            endHeardTrack(reason: .stopped)
            stopLocked()
        }
    }

    public func seek(to seconds: Double) throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            let heard = try heardTrackForControl("seek")
            let duration = published.duration
            guard seconds.isFinite, seconds >= 0, seconds <= duration else {
                throw .invalidArgument("seek: \(seconds) s is outside the track (0…\(duration) s)")
            }
            let frame = heard.frame(atSeconds: seconds)
            if let range, frame < range.start || frame > (range.end ?? .max) {
                throw .invalidArgument("seek: \(seconds) s is outside the playback range \(range.description(for: heard))")
            }
            emitHeardPosition()
            try seekLocked(heard, toFrame: frame)
            hub.emit(.seekCompleted(seconds: heard.seconds(atFrame: frame)))
        }
    }

    public func setVolume(_ volume: Float) {
        let clamped = volume.isNaN ? 0 : min(max(volume, 0), 1)
        // One setter at a time, so the output and the published volume end
        // on the same value; the event goes out after, so an observer may
        // set the volume again.
        let changed = volumeSetter.withLock { () -> Bool in
            output.setVolume(clamped)
            return published.setVolume(clamped)
        }
        if changed { hub.emit(.volumeChanged(clamped)) }
    }

    public func setPlaybackRange(start: Double, end: Double?) throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            let heard = try heardTrackForControl("setPlaybackRange")
            let duration = published.duration
            guard start.isFinite, start >= 0, start < duration else {
                throw .invalidArgument("setPlaybackRange: start \(start) s must be ≥ 0 and before the end (\(duration) s)")
            }
            if let end {
                guard end.isFinite, end > start, end <= duration else {
                    throw .invalidArgument("setPlaybackRange: end \(end) s must be after start \(start) s and ≤ \(duration) s")
                }
            }
            let newRange = FrameRange(start: heard.frame(atSeconds: start), end: end.map(heard.frame(atSeconds:)))
            range = newRange
            rangeEndReached = false
            let position = heardFrame()
            if position < newRange.start || position > (newRange.end ?? .max) {
                try seekLocked(heard, toFrame: newRange.start)
            } else if decodedPast(newRange, heard: heard) {
                try seekLocked(heard, toFrame: position)
            }
            wakeDecodeThread()
        }
    }

    public func clearPlaybackRange() {
        engine.withLock {
            range = nil
            rangeEndReached = false
            wakeDecodeThread()
        }
    }

    // MARK: - Queue

    public func enqueue(_ tracks: [Track]) {
        engine.withLock {
            playbackQueue.append(tracks, current: heardIndex)
            queueEdited()
        }
    }

    public func insert(_ track: Track, at index: Int) throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            guard (0...playbackQueue.tracks.count).contains(index) else {
                throw .invalidArgument("insert: index \(index) is outside 0…\(playbackQueue.tracks.count)")
            }
            playbackQueue.insert(track, at: index, current: heardIndex)
            queueEdited()
        }
    }

    public func remove(at index: Int) throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            try checkIndex(index, "remove")
            guard playbackQueue.tracks[index].id == timeline.segments.first?.open.track.id else {
                playbackQueue.remove(at: index)
                queueEdited()
                return
            }
            // Removing what plays: go on with what follows it.
            let following = playbackQueue.following(index, automatic: false).map { playbackQueue.tracks[$0].id }
            endHeardTrack(reason: .skipped)
            playbackQueue.remove(at: index)
            publishQueue()
            hub.emit(.queueChanged)
            if let following, let next = playbackQueue.index(of: following) {
                try switchTo(next)
            } else {
                stopLocked()
            }
        }
    }

    public func move(from: Int, to: Int) throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            try checkIndex(from, "move")
            try checkIndex(to, "move")
            playbackQueue.move(from: from, to: to)
            queueEdited()
        }
    }

    public func clearQueue() {
        engine.withLock {
            if currentState != .stopped {
                endHeardTrack(reason: .stopped)
                stopLocked()
            }
            playbackQueue.removeAll()
            publishQueue()
            hub.emit(.queueChanged)
        }
    }

    public func next() throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            let heard = try heardTrackForControl("next")
            guard let index = playbackQueue.index(of: heard.track.id),
                  let next = playbackQueue.following(index, automatic: false) else {
                endHeardTrack(reason: .skipped)
                stopLocked(endOfQueue: true)
                return
            }
            endHeardTrack(reason: .skipped)
            try switchTo(next, fadingOut: outgoingForManualChange())
        }
    }

    public func previous() throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            let heard = try heardTrackForControl("previous")
            guard let index = playbackQueue.index(of: heard.track.id) else { return }
            endHeardTrack(reason: .skipped)
            try switchTo(playbackQueue.preceding(index) ?? index, fadingOut: outgoingForManualChange())
        }
    }

    public func jump(to index: Int) throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            try checkNotShutDown("jump")
            try checkIndex(index, "jump")
            endHeardTrack(reason: .skipped)
            try switchTo(index, fadingOut: outgoingForManualChange())
        }
    }

    public func setRepeatMode(_ mode: RepeatMode) {
        engine.withLock {
            playbackQueue.repeatMode = mode
            queueEdited()
        }
    }

    public func setShuffle(_ enabled: Bool) {
        engine.withLock {
            playbackQueue.setShuffle(enabled, current: heardIndex)
            queueEdited()
        }
    }

    /// Applies to audio decoded from now on (up to `decodeAhead` later than
    /// what is heard) and to every track opened later.
    public func setReplayGain(_ settings: ReplayGainSettings) {
        engine.withLock {
            replayGain = settings
            for open in allOpenTracks() { open.gain = settings.linearGain(for: open.tags) }
        }
    }

    /// The crossfade in use (`setCrossfade`); read without waiting.
    public var crossfadeSettings: CrossfadeSettings { published.crossfade }

    /// Sets the crossfade for the track changes still to come: a fade in
    /// progress finishes as it began; a fade not yet begun uses the new
    /// length (specs/services.md §Crossfade).
    public func setCrossfade(_ settings: CrossfadeSettings) {
        engine.withLock {
            crossfade = settings
            published.setCrossfade(settings)
            wakeDecodeThread()
        }
    }
}

// MARK: - Supporting types

/// What the user asked for (`DefaultPlaybackService.intent`); engine state.
enum Intent { case stopped, paused, playing }
