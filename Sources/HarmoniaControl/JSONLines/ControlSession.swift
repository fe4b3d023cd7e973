// The JSON-lines driving adapter: JSON events (--json) and the control
// protocol (--control) on stdin/stdout or a Unix socket
// — specs/control-protocol.md §Transports
import HarmoniaCore

/// Writes events as JSON lines and answers control requests through the
/// one `ControlDispatcher`. A frontend of `PlayerApplication`: the transport's
/// threads post each message as a job, which runs on the main loop.
public final class ControlSession: PlayerFrontend, @unchecked Sendable {
    public let dispatcher: ControlDispatcher
    public let server: ControlServer?
    /// Events go to stdout (--json, or --control stdin).
    public let eventsOnStdout: Bool
    // Main loop only: true while commands can still come (the player then
    // stays at the end of the queue).
    private var commandsMayCome: Bool

    public init(dispatcher: ControlDispatcher, transport: ControlTransport?, json: Bool) {
        self.dispatcher = dispatcher
        self.server = transport.map(ControlServer.init)
        self.eventsOnStdout = json && transport != .stdin
        self.commandsMayCome = transport != nil
    }

    public var waitsForCommands: Bool { commandsMayCome }

    /// Creates the Unix socket, before playback starts (a failure ends the player).
    public func open(_ app: PlayerApplication) throws(CoreError) { try server?.open() }

    /// Starts reading requests; each message becomes a job on the main loop.
    public func start(_ app: PlayerApplication) {
        let inbox = app.inbox
        server?.start(stamp: { inbox.lastStamp }) { [self] message in inbox.post(.job { self.handle(message) }) }
    }

    /// Writes `event` to every listener: to each socket client connected
    /// before it happened (`EventStamp`).
    public func show(_ event: PlaybackEvent, stamp: EventStamp) {
        announce(EventJSON.line(event, naming: dispatcher.naming), stamp: stamp)
    }

    /// Writes an event line that is not the service's (a counted `listen`)
    /// as `show` does, to the listeners connected before `stamp`. Main loop.
    public func announce(_ line: JSONValue, stamp: EventStamp) {
        if eventsOnStdout { Console.out(line.serialized) }
        server?.broadcast(line.serialized, stamp: stamp)
    }

    /// Writes an offline download's event to every listener connected now.
    public func show(offline event: OfflineEvent) {
        let text = ControlOffline.line(event).serialized
        if eventsOnStdout { Console.out(text) }
        server?.broadcast(text)
    }

    /// Answers one message (main loop).
    func handle(_ message: ControlMessage) -> EventInbox.JobOutcome {
        switch message {
        case .line(let client, let bytes):
            defer { client.releaseSlot() }
            let outcome = dispatcher.handle(line: bytes)
            client.send(outcome.reply.serialized)
            return outcome.quit ? .quit : .continue
        case .tooLong(let client):
            defer { client.releaseSlot() }
            client.send(dispatcher.tooLong().reply.serialized)
            return .continue
        case .closed(let client):
            client.releaseSlot()
            guard client.isStdin else {
                client.finishWriting()  // the replies to its last lines are queued: they go out, then it closes
                return .continue
            }
            commandsMayCome = false
            return .inputClosed
        }
    }

    /// Closes the transport (removes the socket file).
    public func shutdown() { server?.shutdown() }
}
