// What the player's main loop calls for the machine interface: JSON events
// (--json) and the control protocol (--control) — specs/control-protocol.md §Transports.
import HarmoniaCore

/// Writes events as JSON lines and answers control requests. Used only on
/// the player's main loop (the transports' threads post to its inbox).
final class ControlSession {
    /// What the main loop does after a control message.
    enum Next {
        case `continue`
        /// `quit` was answered: stop and exit 0.
        case quit
        /// Standard input ended: no command can come any more.
        case inputClosed
    }

    let dispatcher: ControlDispatcher
    let server: ControlServer?
    /// Events go to stdout (--json, or --control stdin).
    let eventsOnStdout: Bool
    /// True while commands can still come: the player then stays at the end of the queue.
    private(set) var waitsForCommands: Bool

    init(dispatcher: ControlDispatcher, transport: ControlTransport?, json: Bool) {
        self.dispatcher = dispatcher
        self.server = transport.map(ControlServer.init)
        self.eventsOnStdout = json && transport != .stdin
        self.waitsForCommands = transport != nil
    }

    /// Creates the Unix socket, before playback starts (a failure ends the player).
    func open() throws(CoreError) { try server?.open() }

    /// Starts reading requests; each message is posted to `inbox`.
    func start(inbox: EventInbox) {
        server?.start { inbox.post(.control($0)) }
    }

    /// Writes `event` to every listener.
    func event(_ event: PlaybackEvent) {
        let text = EventJSON.line(event).serialized
        if eventsOnStdout { Console.out(text) }
        server?.broadcast(text)
    }

    func handle(_ message: ControlMessage) -> Next {
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
            waitsForCommands = false
            return .inputClosed
        }
    }

    /// Closes the transport (removes the socket file).
    func shutdown() { server?.shutdown() }
}
