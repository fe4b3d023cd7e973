// The player's actions, one implementation for every way of asking: keys in
// the terminal, commands of the control protocol, MPD and UPnP clients and
// MPRIS calls from the desktop.
import HarmoniaCore

/// Actions on a playback service as a person or a script asks for them:
/// relative seeks clamped to the track, volume in percent, mute, toggle.
/// Thread-safe (the service is; the remembered mute volume is locked).
public final class PlayerActions: @unchecked Sendable {
    public let service: DefaultPlaybackService
    private let lock = ConditionLock()
    // Guarded by `lock`: the volume to restore when unmuting.
    private var volumeBeforeMute: Float?
    // Guarded by `lock`: the heard ICY title of each radio URL (the newest 8).
    private var streamTitles: [(url: String, title: String)] = []

    // Guarded by `lock`: single mode (`SingleMode`).
    private var single = SingleMode.off
    // Guarded by `lock`: told when a setting no event carries changed
    // (`PlayerApplication` tells its frontends).
    private var settingsObserver: (@Sendable () -> Void)?
    // Main loop only: the last track that ended had finished (played to its end).
    private var lastEndFinished = false

    /// Fresh links a control client gives (`renew`); nil without a control channel.
    public let renewals: LinkRenewals?

    public init(service: DefaultPlaybackService, renewals: LinkRenewals? = nil) {
        self.service = service
        self.renewals = renewals
    }

    /// Plays; from stopped (or after an error), starts the current entry
    /// (or the first) again.
    public func play() throws(CoreError) {
        switch service.state {
        case .stopped, .error:
            try service.jump(to: service.currentIndex ?? 0)
            try service.play()
        default:
            try service.play()
        }
    }

    /// Pauses when playing, plays when paused; from stopped, starts the queue.
    public func toggle() throws(CoreError) {
        switch service.state {
        case .playing, .buffering: try service.pause()
        case .paused, .stopped, .error: try play()
        }
    }

    /// Goes to the next entry (repeat and shuffle apply) and plays it, from
    /// playing or paused: a skip is asked for to hear where it lands, as MPD
    /// 0.23 does (specs/application.md §Next and previous). Past the last
    /// entry without repeat: stopped. Any thread.
    /// - Throws: `invalidState` when stopped (it stays stopped); the open's error.
    public func next() throws(CoreError) {
        try skip { () throws(CoreError) in try service.next() }
    }

    /// Goes to the previous entry (at the first, its start) and plays it,
    /// from playing or paused, as `next()`. Any thread.
    /// - Throws: `invalidState` when stopped (it stays stopped); the open's error.
    public func previous() throws(CoreError) {
        try skip { () throws(CoreError) in try service.previous() }
    }

    /// Runs `move`, which keeps play or pause, then plays the entry it
    /// landed on when the player was paused before and still is.
    private func skip(_ move: () throws(CoreError) -> Void) throws(CoreError) {
        let wasPaused = service.state == .paused
        try move()
        if wasPaused && service.state == .paused { try service.play() }
    }

    /// Adds `url` to the end of the queue and plays it.
    public func open(url: String) throws(CoreError) {
        let track = Track(url: url)
        service.enqueue([track])
        guard let index = service.queue.firstIndex(where: { $0.id == track.id }) else { return }
        try service.jump(to: index)
        try service.play()
    }

    /// Seeks `delta` seconds from the heard position, clamped to the track
    /// (a seek past the end lands on the end, which plays on to the next track).
    public func seek(by delta: Double) throws(CoreError) {
        let target = min(max(service.currentTime() + delta, 0), service.duration())
        try service.seek(to: target)
    }

    /// Volume in percent, 0–100 (clamped); unmutes.
    public func setVolume(percent: Double) {
        lock.withLock { volumeBeforeMute = nil }
        service.setVolume(Float(min(max(percent, 0), 100) / 100))
    }

    /// Changes the volume by `delta` percent (from the muted level's volume when muted).
    public func changeVolume(by delta: Double) {
        let base = lock.withLock { volumeBeforeMute } ?? service.volume
        setVolume(percent: Double(base) * 100 + delta)
    }

    /// Mutes, or restores the volume from before muting.
    public func toggleMute() {
        let restore = lock.withLock { () -> Float? in
            defer { volumeBeforeMute = volumeBeforeMute == nil ? service.volume : nil }
            return volumeBeforeMute
        }
        service.setVolume(restore ?? 0)
    }

    public var isMuted: Bool { lock.withLock { volumeBeforeMute != nil } }

    /// The volume in whole percent as set: when muted, the level unmuting
    /// restores (UPnP's Volume beside its Mute). Any thread.
    public var levelPercent: Int {
        let level = lock.withLock { volumeBeforeMute } ?? service.volume
        return Int((min(max(level, 0), 1) * 100).rounded())
    }

    /// The volume in whole percent, as shown and reported.
    public var volumePercent: Int { Int((service.volume * 100).rounded()) }

    /// Sets the crossfade's seconds (0: off), keeping the album rule as
    /// configured: the one implementation behind MPD's `crossfade`, the
    /// control protocol's `set_crossfade` and the web remote's list. A
    /// change is told to the observer (`observeSettings`: the application's
    /// frontends; the state file saves it) before this returns, so before
    /// the command's reply goes out. Main loop (a command's job, as every
    /// frontend runs its commands), where the observer is called.
    /// - Returns: whether the value changed.
    /// - Throws: `invalidArgument` for a value that is not a number of
    ///   seconds from 0 to 30; nothing changes.
    @discardableResult
    public func setCrossfade(seconds: Double) throws(CoreError) -> Bool {
        let settings = try CrossfadeSettings(seconds: seconds, fadeAlbums: service.crossfadeSettings.fadeAlbums)
        guard settings != service.crossfadeSettings else { return false }
        service.setCrossfade(settings)
        let observer = lock.withLock { settingsObserver }
        observer?()
        return true
    }

    /// Calls `observer` after each change of a setting no playback event
    /// carries (`setCrossfade`), on the main loop that made it; replaces
    /// the one before. `PlayerApplication` sets it when made. Any thread.
    public func observeSettings(_ observer: @escaping @Sendable () -> Void) {
        lock.withLock { settingsObserver = observer }
    }

    /// A radio's title the listener now hears (a `stream_title` event).
    public func noteStreamTitle(_ title: String, url: String) {
        lock.withLock {
            streamTitles.removeAll { $0.url == url }
            streamTitles.append((url, title))
            if streamTitles.count > 8 { streamTitles.removeFirst() }
        }
    }

    /// The title the listener hears on the radio at `url`, if it sent one.
    public func streamTitle(for url: String) -> String? {
        lock.withLock { streamTitles.last { $0.url == url }?.title }
    }

    // MARK: Single mode

    /// Single mode, MPD's `single` (specs/application.md §Single mode), kept
    /// here so that every frontend sees the same mode. With the engine's
    /// repeat mode `.one` the track repeats (the engine does it); otherwise,
    /// when a track ends and the next starts on its own, `on` and `oneshot`
    /// pause the player at the start of the next track, as MPD 0.23 pauses
    /// at the song border, and `oneshot` then turns itself off.
    public enum SingleMode: String, Sendable, CaseIterable {
        case off, on, oneshot
    }

    /// The single mode now. Any thread.
    public var singleMode: SingleMode { lock.withLock { single } }

    /// Sets single mode; returns whether it changed. Any thread.
    @discardableResult
    public func setSingle(_ mode: SingleMode) -> Bool {
        lock.withLock {
            defer { single = mode }
            return single != mode
        }
    }

    /// Sets single mode as a command does: a change is announced as the
    /// modes' other changes are, with the service's `queueChanged` (the
    /// repeat mode set again to itself). Main loop.
    public func changeSingle(to mode: SingleMode) {
        if setSingle(mode) { service.setRepeatMode(service.repeatMode) }
    }

    /// Follows each event (main loop, after the frontends were shown it):
    /// a track started on its own after another finished — a song border —
    /// is paused at its start when single mode asks for it.
    /// - Returns: true when single mode turned off here (a `oneshot` used).
    @discardableResult
    public func followBorder(_ event: PlaybackEvent) -> Bool {
        switch event {
        case .trackEnded(_, _, let reason):
            lastEndFinished = reason == .finished
            return false
        case .trackStarted:
            defer { lastEndFinished = false }
            let mode = singleMode
            guard lastEndFinished, mode != .off, service.repeatMode != .one else { return false }
            try? service.pause()
            try? service.seek(to: 0)  // the few milliseconds heard since the border
            guard mode == .oneshot else { return false }
            changeSingle(to: .off)
            return true
        default:
            // Anything between an end and a start (the queue ended, a stop)
            // means the start that follows is no border: a `play` later.
            lastEndFinished = false
            return false
        }
    }
}
