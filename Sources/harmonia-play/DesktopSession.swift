// harmonia-play on the desktop: MPRIS 2 on the session bus (--no-mpris turns
// it off) — specs/mpris.md §harmonia-play
import HarmoniaControl
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaMPRIS
import Logging

/// The playing command's MPRIS player: the adapter, fed with the service's
/// events, and the commands it sends — the same `PlayerActions` the keys and
/// the control protocol use. `Quit` ends the player as `quit` does; a `Stop`
/// from the desktop keeps the player running (its `Play` starts again).
///
/// Threads: the adapter calls the commands on its D-Bus thread; the main
/// loop calls `start`, `takeStopRequest` and `shutdown`.
final class DesktopSession: MPRISCommands, PlayerFrontend, @unchecked Sendable {
    let actions: PlayerActions
    private var adapter: MPRISPlayerAdapter?
    private let busAddress: String
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var inbox: EventInbox?
    private var stopRequested = false

    /// Nil when no session bus is set in the environment (not an error).
    init?(actions: PlayerActions, logLevel: Logger.Level) {
        guard let address = MPRISPlayerAdapter.sessionBusAddress() else { return nil }
        self.actions = actions
        self.busAddress = address
        adapter = MPRISPlayerAdapter(service: actions.service, commands: self, tagReader: FFmpegTagReaderAdapter(),
                                     logger: SwiftLogLoggerAdapter(label: "harmonia.mpris", level: logLevel))
    }

    /// Follows the service's events and connects to the bus (on the
    /// adapter's thread: this returns at once). `Quit` is posted to the player's inbox.
    func open(_ app: PlayerApplication) throws(CoreError) {
        guard let adapter else { return }
        lock.withLock { self.inbox = app.inbox }
        actions.service.observe { [weak adapter] in adapter?.post($0) }
        adapter.start(busAddress: busAddress)
    }

    /// Leaves the bus. The adapter is released here: it holds this session
    /// (its commands), which would otherwise keep both alive.
    func shutdown() {
        adapter?.shutdown()
        adapter = nil
    }

    /// True once after the desktop asked to stop: that `stopped` keeps the player.
    func takeStopRequest() -> Bool {
        lock.withLock {
            defer { stopRequested = false }
            return stopRequested
        }
    }

    // MARK: MPRISCommands (the adapter's D-Bus thread)

    func play() throws(CoreError) { try actions.play() }

    func pause() throws(CoreError) { try actions.service.pause() }

    func playPause() throws(CoreError) { try actions.toggle() }

    func stop() {
        guard actions.service.state != .stopped else { return }
        lock.withLock { stopRequested = true }
        actions.service.stop()
    }

    func next() throws(CoreError) { try actions.next() }

    func previous() throws(CoreError) { try actions.previous() }

    func seek(to seconds: Double) throws(CoreError) { try actions.service.seek(to: seconds) }

    func seek(by delta: Double) throws(CoreError) { try actions.seek(by: delta) }

    func setVolume(_ level: Double) { actions.setVolume(percent: level * 100) }

    func setRepeatMode(_ mode: RepeatMode) { actions.service.setRepeatMode(mode) }

    func setShuffle(_ enabled: Bool) { actions.service.setShuffle(enabled) }

    func open(url: String) throws(CoreError) { try actions.open(url: url) }

    func quit() {
        lock.withLock { inbox }?.post(.job { .quit })
    }
}
