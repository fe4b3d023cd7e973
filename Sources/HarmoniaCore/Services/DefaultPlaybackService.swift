// DefaultPlaybackService — specs/services.md §DefaultPlaybackService
import Foundation
#if canImport(Glibc)
import Glibc
#endif

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
/// Lock order: `engine` before `published`; the output's own locks last.
public final class DefaultPlaybackService: PlaybackService, @unchecked Sendable {
    /// The tuning given to `init`; fixed for the service's lifetime
    /// (`setReplayGain(_:)` changes the gain in use, not this value).
    public let configuration: PlaybackConfiguration
    private let decoder: any DecoderPort
    private let output: any AudioOutputPort
    private let clock: any ClockPort
    private let logger: any LoggerPort
    private let tagReader: (any TagReaderPort)?
    private let hub = EventHub<PlaybackEvent>()
    private let control = DecodeThreadControl()
    private var engine: ConditionLock { control.lock }

    // MARK: Engine state, guarded by `engine`
    private var playbackQueue = PlaybackQueue()
    /// What the user asked for; `state` adds buffering and error.
    private var intent = Intent.stopped
    /// The track being decoded (the heard one, or the next after a boundary).
    private var decoding: OpenTrack?
    /// The output's timeline since its last configure or flush, oldest first:
    /// `segments[0]` is the track the listener hears.
    private var segments: [Segment] = []
    /// Output frame index just after the last frame written.
    private var written: Int64 = 0
    private var outputFormat: AudioFormat?
    private var outputStarted = false
    /// The next track, opened, when its format differs: it starts once the
    /// listener has heard every written frame and the output is reconfigured.
    private var awaitingFormat: OpenTrack?
    /// The next track opened early, or the error opening it gave.
    private var preopened: (id: UUID, result: Result<OpenTrack, CoreError>)?
    /// The queue has nothing after the last decoded track.
    private var endOfData = false
    /// The reference's playback range on the current track, in file frames.
    private var range: FrameRange?
    /// Decoding stopped at the range's end.
    private var rangeEndReached = false
    /// Bumped by every call that invalidates decoded audio (seek, load, skip,
    /// stop): a read that returns into another generation is dropped.
    private var generation: UInt64 = 0
    /// The track a `read` is in flight on (engine released), if any.
    private var readInFlight: OpenTrack?
    /// Moved by every change that makes an open in flight (engine released)
    /// stale: decoded audio invalidated, a queue edit, a stop or failure,
    /// another open that succeeded. An open that finds it moved is dropped.
    private var openEpoch: UInt64 = 0
    private var replayGain: ReplayGainSettings
    private var nextPositionTick: UInt64 = 0
    private var outputEvents: OutputEventInbox?
    private let threadBuffer = SampleBuffer()
    private let controlBuffer = SampleBuffer()
    /// Decoded frames the output has not accepted yet: `count` frames at
    /// `start` of `buffer`, with `channels` channels.
    private var pending: (buffer: SampleBuffer, start: Int, count: Int, channels: Int)?
    /// The output is paused by the service itself while buffering, until
    /// `rebuffer` seconds are queued again (not by the user: `intent` stays playing).
    private var corkedForBuffering = false
    /// ICY titles the decoder reported while it read (decode thread, engine
    /// released), waiting to be placed on the output timeline; own lock.
    private let arrivedTitles = ArrivedTitles()
    /// Titles placed on the output timeline: each is published when the
    /// listener reaches `frame`; specs/network.md §Events has the timing.
    private var queuedTitles: [(frame: Int64, url: String, title: String, byte: Int64)] = []

    // MARK: Published state, guarded by `published`
    private let published = ConditionLock()
    private var publishedState = PlaybackState.stopped
    private var publishedTimeline: [TimelinePoint] = []
    private var publishedDuration: Double = 0
    private var publishedVolume: Float = 1
    private var publishedQueue = PlaybackQueue()
    private var publishedCurrentID: UUID?

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
        self.logger = logger
        self.tagReader = tagReader
        self.configuration = configuration
        self.replayGain = configuration.replayGain
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

    public var state: PlaybackState { published.withLock { publishedState } }

    public func currentTime() -> Double {
        published.withLock {
            switch publishedState {
            case .stopped, .error: return 0
            default: break
            }
            guard !publishedTimeline.isEmpty else { return 0 }
            let seconds = Self.position(in: publishedTimeline, heard: output.framesPlayed)
            return min(max(seconds, 0), publishedDuration)
        }
    }

    public func duration() -> Double { published.withLock { publishedDuration } }
    /// Setting it is `setVolume(_:)`.
    public var volume: Float {
        get { published.withLock { publishedVolume } }
        set { setVolume(newValue) }
    }
    public var queue: [Track] { published.withLock { publishedQueue.tracks } }
    /// Setting it is `setRepeatMode(_:)`.
    public var repeatMode: RepeatMode {
        get { published.withLock { publishedQueue.repeatMode } }
        set { setRepeatMode(newValue) }
    }
    /// Setting it is `setShuffle(_:)`.
    public var shuffle: Bool {
        get { published.withLock { publishedQueue.shuffled } }
        set { setShuffle(newValue) }
    }

    public var currentIndex: Int? {
        published.withLock { publishedCurrentID.flatMap { publishedQueue.index(of: $0) } }
    }

    public var currentTrack: Track? {
        published.withLock {
            publishedCurrentID.flatMap { publishedQueue.index(of: $0) }.map { publishedQueue.tracks[$0] }
        }
    }

    public func events() -> AsyncStream<PlaybackEvent> { hub.stream() }

    /// Calls `observer` synchronously for every event, on the thread that
    /// caused it (the decode thread or a caller). It must return quickly and
    /// must not call the service.
    public func observe(_ observer: @escaping @Sendable (PlaybackEvent) -> Void) {
        hub.observe(observer)
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

    public func pause() throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            switch currentState {
            case .error(let error): throw .invalidState("pause: playback failed (\(error)); load a file to recover")
            case .stopped, .paused: return
            case .playing, .buffering: break
            }
            output.pause()
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
            let duration = published.withLock { publishedDuration }
            guard seconds.isFinite, seconds >= 0, seconds <= duration else {
                throw .invalidArgument("seek: \(seconds) s is outside the track (0…\(duration) s)")
            }
            let frame = heard.frame(atSeconds: seconds)
            if let range, frame < range.start || frame > (range.end ?? .max) {
                throw .invalidArgument("seek: \(seconds) s is outside the playback range \(range.description(for: heard))")
            }
            try seekLocked(heard, toFrame: frame)
            hub.emit(.seekCompleted(seconds: heard.seconds(atFrame: frame)))
        }
    }

    public func setVolume(_ volume: Float) {
        let clamped = volume.isNaN ? 0 : min(max(volume, 0), 1)
        output.setVolume(clamped)
        let changed = published.withLock { () -> Bool in
            defer { publishedVolume = clamped }
            return publishedVolume != clamped
        }
        if changed { hub.emit(.volumeChanged(clamped)) }
    }

    public func setPlaybackRange(start: Double, end: Double?) throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            let heard = try heardTrackForControl("setPlaybackRange")
            let duration = published.withLock { publishedDuration }
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
            guard playbackQueue.tracks[index].id == segments.first?.open.track.id else {
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
                stopLocked()
                return
            }
            endHeardTrack(reason: .skipped)
            try switchTo(next)
        }
    }

    public func previous() throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            let heard = try heardTrackForControl("previous")
            guard let index = playbackQueue.index(of: heard.track.id) else { return }
            endHeardTrack(reason: .skipped)
            try switchTo(playbackQueue.preceding(index) ?? index)
        }
    }

    public func jump(to index: Int) throws(CoreError) {
        try engine.withLock { () throws(CoreError) in
            try checkNotShutDown("jump")
            try checkIndex(index, "jump")
            endHeardTrack(reason: .skipped)
            try switchTo(index)
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

    // MARK: - Control helpers (engine held)

    private var currentState: PlaybackState { published.withLock { publishedState } }

    private var heardIndex: Int? { segments.first.flatMap { playbackQueue.index(of: $0.open.track.id) } }

    private func checkIndex(_ index: Int, _ call: String) throws(CoreError) {
        guard playbackQueue.tracks.indices.contains(index) else {
            throw .invalidArgument("\(call): index \(index) is outside the queue (\(playbackQueue.tracks.count) tracks)")
        }
    }

    /// The heard track, after crossing any boundary the listener has passed.
    private func heardTrackForControl(_ call: String) throws(CoreError) -> OpenTrack {
        switch currentState {
        case .stopped: throw .invalidState("\(call): nothing is loaded; load a file first")
        case .error(let error): throw .invalidState("\(call): playback failed (\(error)); load a file to recover")
        default: break
        }
        followListener(heard: output.framesPlayed)
        guard let heard = segments.first?.open else { throw .invalidState("\(call): nothing is loaded") }
        return heard
    }

    /// Makes queue entry `index` current, keeping play or pause (stopped →
    /// paused). An entry that fails to open is reported and skipped, as in
    /// playback; throws the last error when nothing after it opens. Opens
    /// with the engine released: a call made meanwhile (stop, another jump)
    /// supersedes this one, which then returns having changed nothing more;
    /// a pause made meanwhile is kept.
    private func switchTo(_ index: Int) throws(CoreError) {
        invalidateDecodedAudio()
        closeAllTracks()
        range = nil
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
            // An output failure is not the track's: no point trying the next.
            do throws(CoreError) {
                try startFresh(with: open, playing: intent == .playing)
            } catch {
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
    private func startFresh(with open: OpenTrack, playing: Bool) throws(CoreError) {
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
        written = output.framesPlayed
        queuedTitles.removeAll()  // a new timeline: titles of audio never heard go
        pending = nil
        decoding = open
        endOfData = false
        rangeEndReached = false
        segments = [Segment(open: open, writeStart: written, sourceStart: open.nextFrame)]
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
    private func seekLocked(_ heard: OpenTrack, toFrame frame: Int64) throws(CoreError) {
        while readInFlight === heard { engine.wait() }
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
        output.flush()
        written = output.framesPlayed
        queuedTitles.removeAll()  // a new timeline: titles of audio never heard go
        segments = [Segment(open: heard, writeStart: written, sourceStart: frame)]
        publishTimeline()
        prefill()
        nextPositionTick = clock.now()
        wakeDecodeThread()
    }

    /// Whether audio past `range`'s end, or of a later track, is already queued.
    private func decodedPast(_ range: FrameRange, heard: OpenTrack) -> Bool {
        decoding !== heard || awaitingFormat != nil || segments.count > 1
            || (range.end.map { heard.nextFrame > $0 } ?? false)
    }

    private func stopLocked() {
        invalidateDecodedAudio()
        closeAllTracks(publish: false)
        stopOutputAndTimeline()
        range = nil
        intent = .stopped
        setState(.stopped)
    }

    private func stopOutputAndTimeline() {
        openEpoch &+= 1  // an open in flight must not start anything now
        output.stop()
        outputStarted = false
        outputFormat = nil
        pending = nil
        segments = []
        endOfData = false
        intent = .stopped
        // The empty timeline is published with the stopped or error state
        // that follows (setState), so no reader sees a playing state with no
        // position or duration.
    }

    private func fail(with error: CoreError, url: String?) {
        stopOutputAndTimeline()
        hub.emit(.error(error, url: url))
        setState(.error(error))
    }

    private func startOutput() {
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
    private func queueEdited() {
        openEpoch &+= 1
        publishQueue()
        hub.emit(.queueChanged)
        guard let heard = segments.first?.open else { return }
        var previous = heard
        var chainValid = true
        for later in segments.dropFirst().map(\.open) + [awaitingFormat].compactMap({ $0 }) {
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

    private func expectedNext(after open: OpenTrack) -> Track? {
        playbackQueue.index(of: open.track.id)
            .flatMap { playbackQueue.following($0, automatic: true) }
            .map { playbackQueue.tracks[$0] }
    }

    // MARK: - Decode thread

    private func startDecodeThread() {
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
            seconds = min(seconds, draining ? until(written) : until(written) / 4)
            if segments.count > 1 { seconds = min(seconds, until(segments[1].writeStart)) }
            if let title = queuedTitles.first { seconds = min(seconds, until(title.frame)) }
        }
        if configuration.positionInterval > 0, currentState == .playing {
            seconds = min(seconds, Double(nextPositionTick > now ? nextPositionTick - now : 0) / 1e9)
        }
        seconds = max(seconds, configuration.pollInterval)
        return now &+ UInt64(seconds * 1e9)
    }

    /// The longest the decode thread sleeps while playing.
    private static let longestWait = 0.5

    private func wakeDecodeThread() {
        control.wakeRequested = true
        engine.broadcast()
    }

    private enum Step { case again, sleep, idle }

    /// One step: follow the listener, then write pending frames or decode a chunk.
    private func step(unlockForRead: Bool) -> Step {
        let heard = output.framesPlayed
        followListener(heard: heard)
        while let first = queuedTitles.first, first.frame <= heard {
            queuedTitles.removeFirst()
            hub.emit(.network(.streamTitle(first.title, byte: first.byte), url: first.url))
        }
        if corkedForBuffering { resumeWhenRefilled() }
        let wait: Step = intent == .playing ? .sleep : .idle
        guard intent != .stopped, let current = decoding, readInFlight !== current else { return wait }
        if pending != nil {
            writePending()
            if pending != nil { return wait }
        }
        if awaitingFormat != nil || endOfData || rangeEndReached { return wait }
        if current.exhausted {
            // The next open may be slow (a network source): only the decode
            // thread opens, with the engine released; a prefill stops here.
            guard unlockForRead else { return wait }
            advance(after: current)
            return .again
        }
        let aheadLimit = Int64(clampingFrames: configuration.decodeAhead * current.info.sampleRate)
        if written - output.framesPlayed >= aheadLimit { return wait }
        // An open releases the engine: the next step looks at the state afresh.
        if unlockForRead && openNextEarly(after: current, aheadLimit: aheadLimit) { return .again }
        decodeChunk(current, into: unlockForRead ? threadBuffer : controlBuffer, unlockForRead: unlockForRead)
        return .again
    }

    /// Decodes the first frames right away (in a control call), so sound can
    /// start before the decode thread's next pass. Not for network sources:
    /// their reads may stall, and a control call must not hold the engine
    /// lock through a stall (the decode thread reads with it released).
    private func prefill() {
        guard let decoding, Self.isLocal(decoding.track.url) else { return }
        let target = written + Int64(configuration.prefillFrames)
        while written < target, pending == nil, step(unlockForRead: false) == .again {}
    }

    private func decodeChunk(_ open: OpenTrack, into buffer: SampleBuffer, unlockForRead: Bool) {
        var want = Int64(configuration.chunkFrames)
        if let end = open.endFrame { want = min(want, end - open.nextFrame) }
        if let end = range?.end, open === segments.first?.open {
            if open.nextFrame >= end { rangeEndReached = true; return }
            want = min(want, end - open.nextFrame)
        }
        guard want > 0 else { open.exhausted = true; return }
        let channels = open.info.channels
        buffer.reserve(frames: configuration.chunkFrames, channels: channels)
        let generationBefore = generation
        let result: Result<Int, CoreError>
        if unlockForRead {
            readInFlight = open
            result = engine.withLockReleased { () -> Result<Int, CoreError> in
                do throws(CoreError) {
                    return .success(try decoder.read(open.handle, into: buffer.pointer, maxFrames: Int(want)))
                } catch {
                    return .failure(error)
                }
            }
            readInFlight = nil
            engine.broadcast()
            if open.closeWhenReadReturns { decoder.close(open.handle); return }
            guard generation == generationBefore, decoding === open else { return }
        } else {
            do throws(CoreError) {
                result = .success(try decoder.read(open.handle, into: buffer.pointer, maxFrames: Int(want)))
            } catch {
                result = .failure(error)
            }
        }
        // Titles the read passed apply from this chunk's first frame.
        for (url, title, byte) in arrivedTitles.take() { queuedTitles.append((written, url, title, byte)) }
        switch result {
        case .failure(let error):
            logger.warn("decode failed: \(open.track.url): \(error)")
            hub.emit(.error(error, url: open.track.url))
            open.failure = error
            open.exhausted = true
        case .success(0):
            open.exhausted = true
        case .success(let frames):
            if open.gain != 1 {
                let samples = buffer.pointer
                for i in 0..<(frames * channels) { samples[i] *= open.gain }
            }
            open.nextFrame += Int64(frames)
            pending = (buffer, 0, frames, channels)
            writePending()
            if currentState == .buffering && !corkedForBuffering { setState(.playing) }
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
        guard written - output.framesPlayed >= target || pending != nil || noMoreComing
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
        written += Int64(accepted)
        pending = accepted == count ? nil : (buffer, start + accepted, count - accepted, channels)
    }

    /// Opens the track after `current` once its end is within the decode-ahead
    /// distance, so opening never delays the join. Decode thread only: the
    /// open releases the engine. Returns whether it tried to open.
    private func openNextEarly(after current: OpenTrack, aheadLimit: Int64) -> Bool {
        guard preopened == nil, let end = current.endFrame ?? current.info.totalFrames,
              end - current.nextFrame <= aheadLimit,
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
    /// call (the next step looks again).
    private func advance(after current: OpenTrack) {
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
                decoding = next
                if AudioFormat(next.info) == outputFormat {
                    segments.append(Segment(open: next, writeStart: written, sourceStart: next.nextFrame))
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

    /// Sends the events for what the listener has reached since the last
    /// call: track boundaries, the end of a format, the range or the queue,
    /// and position ticks.
    private func followListener(heard: Int64) {
        // Paused exactly on a boundary (a seek to a track's end), the
        // listener is still at the end of the earlier track.
        while segments.count > 1,
              heard > segments[1].writeStart || (heard == segments[1].writeStart && intent == .playing) {
            let ended = segments.removeFirst()
            emitEnded(ended.open, reason: ended.open.failure != nil ? .failed : .finished)
            if ended.open !== decoding { closeTrack(ended.open) }
            range = nil
            rangeEndReached = false
            becomeCurrent(segments[0].open)
            publishTimeline()
        }
        // Indexing, not `segments.last`: unspecialised (a debug build), that
        // generic getter allocates, and this runs on every pass of the decode loop.
        if !segments.isEmpty, heard >= written, pending == nil, readInFlight == nil {
            let last = segments[segments.count - 1]
            if let next = awaitingFormat {
                emitEnded(last.open, reason: last.open.failure != nil ? .failed : .finished)
                closeTrack(last.open)
                awaitingFormat = nil
                let playing = intent == .playing
                do {
                    outputFormat = nil
                    outputStarted = false
                    try output.configure(sampleRate: next.info.sampleRate, channels: next.info.channels)
                    outputFormat = AudioFormat(next.info)
                    written = output.framesPlayed
                    queuedTitles.removeAll()  // a new timeline: titles of audio never heard go
                    segments = [Segment(open: next, writeStart: written, sourceStart: next.nextFrame)]
                    range = nil
                    becomeCurrent(next)
                    publishTimeline()
                    intent = playing ? .playing : .paused
                    wakeDecodeThread()
                } catch {
                    closeAllTracks(publish: false)
                    fail(with: error, url: nil)
                }
            } else if rangeEndReached, let range, intent == .playing {
                output.pause()
                intent = .paused
                try? seekLocked(last.open, toFrame: range.start)
                setState(.paused)
            } else if endOfData, intent == .playing, decoding?.exhausted ?? true {
                // The end of the queue: stopped, or error when the last
                // track died (the reference's "any → error").
                emitEnded(last.open, reason: last.open.failure != nil ? .failed : .finished)
                let failure = last.open.failure
                invalidateDecodedAudio()
                closeAllTracks(publish: false)
                stopOutputAndTimeline()
                hub.emit(.queueEnded)
                if let failure {
                    setState(.error(failure))
                } else {
                    publishedCurrent(nil)
                    setState(.stopped)
                }
            }
        }
        if intent == .playing, configuration.positionInterval > 0, currentState == .playing,
           clock.now() >= nextPositionTick, !publishedTimeline.isEmpty {
            nextPositionTick = clock.now() &+ UInt64(configuration.positionInterval * 1e9)
            let (seconds, duration) = published.withLock {
                (Self.position(in: publishedTimeline, heard: heard), publishedDuration)
            }
            hub.emit(.position(seconds: min(max(seconds, 0), duration), duration: duration))
        }
    }

    /// The heard position as a frame of the heard track's file.
    private func heardFrame() -> Int64 {
        guard let first = segments.first else { return 0 }
        let heard = output.framesPlayed
        let limit = segments.count > 1 ? segments[1].writeStart : Int64.max
        return first.sourceStart + max(0, min(heard, limit) - first.writeStart)
    }

    // MARK: - Tracks and sessions

    /// Opens `track`'s file, reads its tags (local files), seeks to its
    /// start. That I/O runs with the engine released, so control calls are
    /// answered through a slow open (specs/services.md §Threads explains).
    /// Returns nil when `openEpoch` moved meanwhile (the handle is closed,
    /// an error dropped).
    /// Engine held on entry and return; the caller must expect any engine
    /// state to have changed.
    private func openTrack(_ track: Track) throws(CoreError) -> OpenTrack? {
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
            handle = try decoder.open(url: track.url)
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

    private static func isLocal(_ url: String) -> Bool {
        url.hasPrefix("file://") || !url.contains("://")
    }

    private func allOpenTracks() -> [OpenTrack] {
        var all: [OpenTrack] = segments.map(\.open)
        for open in [decoding, awaitingFormat] + [preopened.flatMap { try? $0.result.get() }] {
            if let open, !all.contains(where: { $0 === open }) { all.append(open) }
        }
        return all
    }

    private func closeTrack(_ open: OpenTrack) {
        guard !open.closed else { return }
        open.closed = true
        if readInFlight === open { open.closeWhenReadReturns = true } else { decoder.close(open.handle) }
    }

    /// Closes every open track. `publish: false` when a stopped or error
    /// state follows, which publishes the empty timeline with it (setState).
    private func closeAllTracks(publish: Bool = true) {
        for open in allOpenTracks() { closeTrack(open) }
        segments = []
        decoding = nil
        awaitingFormat = nil
        preopened = nil
        if publish { publishTimeline() }
    }

    /// Drops everything decoded but not yet heard, and any read in flight.
    private func invalidateDecodedAudio() {
        generation &+= 1
        openEpoch &+= 1
        pending = nil
    }

    private func emitEnded(_ open: OpenTrack, reason: TrackEndReason) {
        hub.emit(.trackEnded(index: playbackQueue.index(of: open.track.id), track: open.track, reason: reason))
    }

    /// Sends `trackEnded` for the track the listener hears, if any.
    private func endHeardTrack(reason: TrackEndReason) {
        followListener(heard: output.framesPlayed)
        if let heard = segments.first?.open { emitEnded(heard, reason: reason) }
    }

    private func becomeCurrent(_ open: OpenTrack) {
        let track = playbackQueue.index(of: open.track.id).map { playbackQueue.tracks[$0] } ?? open.track
        publishedCurrent(open.track.id)
        published.withLock { publishedDuration = track.duration ?? open.info.duration }
        hub.emit(.trackStarted(index: playbackQueue.index(of: open.track.id) ?? -1, track: track))
    }

    // MARK: - Publishing

    private func setState(_ state: PlaybackState) {
        if state != .buffering { corkedForBuffering = false }  // every other state set the output's pause itself
        let changed = published.withLock { () -> Bool in
            defer { publishedState = state }
            switch state {
            case .stopped, .error:
                publishedTimeline = []
                publishedDuration = 0
            default:
                break
            }
            return publishedState != state
        }
        if changed {
            logger.debug("state: \(state)")
            hub.emit(.stateChanged(state))
        }
    }

    private func publishTimeline() {
        let points = segments.map {
            TimelinePoint(writeStart: $0.writeStart, sourceStart: $0.sourceStart,
                          trackStart: $0.open.startFrame, sampleRate: $0.open.info.sampleRate)
        }
        published.withLock {
            publishedTimeline = points
            if points.isEmpty { publishedDuration = 0 }
        }
    }

    private func publishQueue() {
        let queue = playbackQueue
        published.withLock { publishedQueue = queue }
    }

    private func publishedCurrent(_ id: UUID?) {
        published.withLock { publishedCurrentID = id }
    }

    /// Seconds into the heard track for `heard` frames played.
    private static func position(in timeline: [TimelinePoint], heard: Int64) -> Double {
        var index = 0
        while index + 1 < timeline.count && timeline[index + 1].writeStart <= heard { index += 1 }
        let point = timeline[index]
        let limit = index + 1 < timeline.count ? timeline[index + 1].writeStart : Int64.max
        let frame = point.sourceStart + max(0, min(heard, limit) - point.writeStart)
        return Double(frame - point.trackStart) / point.sampleRate
    }

    // MARK: - Output events

    /// Underruns become events, and `buffering` while a read is stalled;
    /// output errors become error events (the output reconnects itself).
    /// The output's observer only queues the event (it may run under the
    /// output's lock); a thread of the service's own handles it, so nothing
    /// depends on a Swift concurrency executor being free.
    private func startOutputEventForwarder() {
        let inbox = OutputEventInbox()
        output.observe { inbox.post($0) }
        let thread = Thread { [weak self] in
            nameCurrentThread("harmonia.events")
            while let event = inbox.take() {
                guard let self else { return }
                self.handle(event)
            }
        }
        thread.name = "harmonia.output-events"
        outputEvents = inbox
        thread.start()
    }

    private func handle(_ event: AudioOutputEvent) {
        engine.withLock {
            switch event {
            case .underrun(let count):
                // The end of the queue, a range or a format is not an underrun.
                guard !(endOfData || awaitingFormat != nil || rangeEndReached), intent == .playing else { return }
                hub.emit(.underrun(count: count))
                if readInFlight != nil, currentState == .playing {
                    setState(.buffering)
                    // Gather `rebuffer` seconds before sound resumes (resumeWhenRefilled).
                    if configuration.rebuffer > 0 {
                        output.pause()
                        corkedForBuffering = true
                    }
                }
            case .error(let error):
                hub.emit(.error(error, url: nil))
            case .reconnected(let frame):
                logger.info("output reconnected at frame \(frame)")
            }
        }
    }
}

// MARK: - Supporting types

private enum Intent { case stopped, paused, playing }

struct AudioFormat: Equatable {
    let sampleRate: Double
    let channels: Int
    init(_ info: StreamInfo) {
        sampleRate = info.sampleRate
        channels = info.channels
    }
}

/// Frames `[start, end]` of the heard track's file.
struct FrameRange {
    let start: Int64
    let end: Int64?

    func description(for open: OpenTrack) -> String {
        "\(open.seconds(atFrame: start))…\(end.map { "\(open.seconds(atFrame: $0))" } ?? "end") s"
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

/// Frames of one track in the output's timeline: output frame `writeStart`
/// is the track's file frame `sourceStart`.
struct Segment {
    let open: OpenTrack
    let writeStart: Int64
    let sourceStart: Int64
}

/// What readers need of a segment to turn heard frames into seconds.
struct TimelinePoint: Sendable {
    let writeStart: Int64
    let sourceStart: Int64
    let trackStart: Int64
    let sampleRate: Double
}

/// A reusable interleaved Float buffer; grows, never shrinks.
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

/// Output events on their way from the output's observer to the service's
/// event thread: `post` never blocks for long; `take` waits for one.
final class OutputEventInbox: @unchecked Sendable {
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var queue: [AudioOutputEvent] = []
    private var closed = false

    func post(_ event: AudioOutputEvent) {
        lock.withLock {
            queue.append(event)
            lock.broadcast()
        }
    }

    /// The next event, or nil once closed.
    func take() -> AudioOutputEvent? {
        lock.withLock {
            while queue.isEmpty && !closed { lock.wait() }
            return closed ? nil : queue.removeFirst()
        }
    }

    func close() {
        lock.withLock {
            closed = true
            lock.broadcast()
        }
    }
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

/// Titles reported on the decode thread while the engine lock is released.
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
