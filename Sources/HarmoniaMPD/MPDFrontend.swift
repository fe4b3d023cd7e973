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
        try server.start()
        lastVersion = player.ledger.version
        let host = server.configuration.host
        announce("MPD protocol on \(host.contains(":") ? "[\(host)]" : host):\(server.port)")
    }

    /// Clients keep the server running at the end of the queue.
    public var waitsForCommands: Bool { true }

    public func show(_ event: PlaybackEvent) {
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
            }
        case .volumeChanged:
            changed.insert(.mixer)
        case .queueChanged, .queueEnded:
            player.syncQueue()
            let version = player.ledger.version
            if version != lastVersion { changed.insert(.playlist) }
            lastVersion = version
            let modes = player.modes
            if modes != lastModes, lastModes != nil { changed.insert(.options) }
            lastModes = modes
        case .error:
            changed.insert(.player)
        default:
            break
        }
        if lastModes == nil { lastModes = player.modes }
        if !changed.isEmpty { server.notify(changed) }
    }

    public func shutdown() { server.shutdown(timeout: 2) }
}
