// The MPD protocol as a frontend of the player: the server's lifetime, and
// the player's events as MPD's idle subsystems — specs/mpd-protocol.md §Frontend
import HarmoniaControl
import HarmoniaCore
import HarmoniaLibrary

/// Runs an `MPDServer` for as long as the player runs, and tells its idle
/// clients what changed: the queue (`playlist`), the modes (`options`),
/// playback (`player`), the volume (`mixer`), library updates (`update`,
/// `database`). Consume mode removes each entry once it has played.
///
/// Threads: the PlayerFrontend methods on the main loop; the updater's
/// observer on the scanning thread (it only notifies).
public final class MPDFrontend: PlayerFrontend {
    public let server: MPDServer
    public let player: MPDPlayer
    // Main loop only.
    private var lastModes: MPDPlayer.Modes?
    private var lastVersion = 0
    private var inbox: EventInbox?

    /// Told once the port listens ("MPD protocol on 127.0.0.1:6600").
    private let announce: (String) -> Void

    public init(server: MPDServer, player: MPDPlayer, updater: LibraryUpdater?, announce: @escaping (String) -> Void = { _ in }) {
        self.server = server
        self.player = player
        self.announce = announce
        player.setNotifier { [server] in server.notify($0) }
        updater?.observe { [server] event in
            switch event {
            case .started:
                server.notify(.update)
            case .finished(_, let summary, _):
                let changed = summary.added + summary.updated + summary.removed > 0
                server.notify(changed ? [.update, .database] : .update)
            }
        }
    }

    /// Binds the port before playback starts: a port in use ends the run.
    public func open(_ app: PlayerApplication) throws(CoreError) {
        let inbox = app.inbox
        server.setStampSource { inbox.lastStamp.value }
        self.inbox = inbox
        try server.start()
        lastVersion = player.ledger.version
        lastModes = player.modes
        lastModes?.consume = false
        let host = server.configuration.host
        announce("MPD protocol on \(host.contains(":") ? "[\(host)]" : host):\(server.port)")
    }

    /// Clients keep the server running at the end of the queue.
    public var waitsForCommands: Bool { true }

    /// Each change reaches the clients connected before its event was
    /// posted (`EventStamp`), as MPD tells a client only of later changes.
    public func show(_ event: PlaybackEvent, stamp: EventStamp) {
        var changed: MPDSubsystems = []
        switch event {
        case .stateChanged(let state):
            changed.insert(.player)
            player.notePlaying(state == .playing || state == .buffering)
        case .trackStarted, .seekCompleted:
            changed.insert(.player)
        case .trackEnded(_, let track, let reason):
            changed.insert(.player)
            if player.consumes, reason == .finished || reason == .skipped,
               let position = player.service.queue.firstIndex(where: { $0.id == track.id }) {
                try? player.service.remove(at: position)
                // A change made now, on the main loop: stamped as of now.
                if let inbox { settled(at: inbox.lastStamp) }
            }
        case .volumeChanged:
            changed.insert(.mixer)
        case .queueChanged, .queueEnded:
            // A change no command of the main loop made (the engine's own,
            // single oneshot turning itself off at a song border): commands'
            // changes were derived when they ran (`settled`).
            changed.formUnion(derive())
        case .error:
            changed.insert(.player)
        default:
            break
        }
        server.notify(changed, stamp: stamp.value)
    }

    /// A command changed the player: the queue version and the modes are
    /// compared now, as of the change, and stamped with its last event.
    public func settled(at stamp: EventStamp) {
        server.notify(derive(), stamp: stamp.value)
    }

    /// What changed in the queue (`playlist`) and the modes (`options`)
    /// since the last call (main loop).
    private func derive() -> MPDSubsystems {
        var changed: MPDSubsystems = []
        player.syncQueue()
        let version = player.ledger.version
        if version != lastVersion { changed.insert(.playlist) }
        lastVersion = version
        // Consume is MPD's alone: its command tells the clients itself, and
        // no event follows it, so it is left out here (else a later event
        // would announce it again, to clients that connected since).
        var modes = player.modes
        modes.consume = false
        if let lastModes, modes != lastModes { changed.insert(.options) }
        lastModes = modes
        return changed
    }

    /// The crossfade changed (MPD's `crossfade`, the control protocol's
    /// `set_crossfade`, the web remote): a mode, so `options`; the queue's
    /// version is untouched, so no `playlist`.
    public func settingsChanged() {
        server.notify(.options)
    }

    public func shutdown() { server.shutdown(timeout: 2) }
}
