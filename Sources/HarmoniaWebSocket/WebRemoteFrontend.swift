// The WebSocket driving adapter: the control protocol's commands and events
// for network clients and the web page — specs/control-protocol.md §WebSocket
import HarmoniaControl
import HarmoniaCore

/// A frontend of `PlayerApplication`: requests of authenticated WebSocket
/// clients run on the main loop through the one `ControlDispatcher`, their
/// replies go to the asking client before any event the command caused,
/// and every event goes to every authenticated client.
///
/// Threads: the `PlayerFrontend` methods on the main loop; the server's
/// event loop posts each request as a job.
public final class WebRemoteFrontend: PlayerFrontend, @unchecked Sendable {
    public let server: WebRemoteServer
    private let dispatcher: ControlDispatcher
    private let announce: (String) -> Void
    /// The main loop's inbox, from `start` (main loop only).
    private var inbox: EventInbox?

    /// - Parameter announce: a line for standard error once listening.
    public init(server: WebRemoteServer, dispatcher: ControlDispatcher, announce: @escaping (String) -> Void) {
        self.server = server
        self.dispatcher = dispatcher
        self.announce = announce
    }

    /// A network server waits for commands: the player stays at the end of the queue.
    public var waitsForCommands: Bool { true }

    /// Takes the port before playback starts (a taken port ends the run).
    public func open(_ app: PlayerApplication) throws(CoreError) {
        try server.bind()
        announce("web remote on \(server.url)")
    }

    public func start(_ app: PlayerApplication) {
        let inbox = app.inbox
        self.inbox = inbox
        server.hub.setStampSource { inbox.lastStamp.value }
        server.hub.receive { [self] request in inbox.post(.job { self.handle(request) }) }
        server.start()
    }

    /// Each event goes to the clients connected before it happened (`EventStamp`).
    public func show(_ event: PlaybackEvent, stamp: EventStamp) {
        server.hub.broadcast(EventJSON.line(event, naming: dispatcher.naming).serialized, stamp: stamp.value)
    }

    /// A setting changed (the crossfade, by any client: MPD's `crossfade`,
    /// JSON `set_crossfade`): every client authenticated then gets
    /// `settings_changed` with the status, after the command's reply (a job
    /// behind the command's, on the main loop), so the page's list shows it.
    public func settingsChanged() {
        inbox?.post(.job { [self] in
            server.hub.broadcast(dispatcher.settingsChangedEvent().serialized)
            return .continue
        })
    }

    /// An offline download's event goes to every client authenticated now.
    public func show(offline event: OfflineEvent) {
        server.hub.broadcast(ControlOffline.line(event).serialized)
    }

    /// Answers one request (main loop).
    func handle(_ request: WebRemoteHub.Request) -> EventInbox.JobOutcome {
        defer { server.hub.answered(request.client) }  // its next request queues behind the others'

        let outcome = dispatcher.handle(line: request.bytes)
        request.client.send(outcome.reply.serialized)
        return outcome.quit ? .quit : .continue
    }

    public func shutdown() { server.shutdown() }
}
