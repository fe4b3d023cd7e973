// MPRIS 2 on the D-Bus session bus, a driving adapter:
// specs/mpris.md §Threads (Names, Signals)
import Foundation
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// Puts a playback service on the session bus as an MPRIS 2 media player,
/// so desktop media keys, panels, KDE Connect and `playerctl` control it.
/// The core does not know it: it reads the service, sends commands through
/// `MPRISCommands`, and learns of changes from the events handed to `post`.
///
/// Threads: one D-Bus thread of its own does everything on the bus —
/// connecting, owning the name, answering calls, emitting signals — so a
/// slow or absent bus never delays playback or the caller. `post` only
/// records what changed (a lock held for a few instructions and a byte
/// written to a pipe); it is safe from the service's synchronous observer.
/// No bus, or a bus that refuses us, is not an error: the thread logs at
/// debug level and ends.
public final class MPRISPlayerAdapter: @unchecked Sendable {
    public struct Options: Sendable {
        /// The bus name's last element: `org.mpris.MediaPlayer2.<name>`, or
        /// `org.mpris.MediaPlayer2.<name>.instance<pid>` when that is taken.
        public var name = "harmonia_play"
        /// The Identity property: the player's name as a panel shows it.
        public var identity = "Harmonia Play"
        /// Where covers are written for `mpris:artUrl`; nil: no artUrl.
        public var coverFolder: String? = CoverArtCache.defaultFolder()

        public init() {}
    }

    private let service: any PlaybackService
    private let commands: any MPRISCommands
    private let tagReader: (any TagReaderPort)?
    private let logger: any LoggerPort
    private let options: Options
    /// A pipe that wakes the D-Bus thread's poll: [read end, write end], non-blocking.
    private let wakePipe: [Int32]

    /// What happened since the D-Bus thread last looked. Guarded by `lock`.
    private struct Pending {
        var changed = false
        /// Seeked signals to send, oldest first (bounded: the newest 64 are kept).
        var seeks: [Double] = []
        /// Queue entries that started, oldest first (bounded like `seeks`).
        var started: [UUID] = []
        var stopRequested = false
        /// Internet radio: the latest ICY title and station name per URL.
        var radio: [String: RadioFacts] = [:]
    }
    private let lock = ConditionLock()
    private var pending = Pending()
    private var threadRunning = false
    private var ownedName: String?

    public init(service: any PlaybackService, commands: any MPRISCommands, tagReader: (any TagReaderPort)?,
                logger: any LoggerPort, options: Options = Options()) {
        self.service = service
        self.commands = commands
        self.tagReader = tagReader
        self.logger = logger
        self.options = options
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) == 0 {
            for fd in fds {
                _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
                _ = fcntl(fd, F_SETFL, O_NONBLOCK)
            }
        } else {
            fds = [-1, -1]
        }
        wakePipe = fds
    }

    deinit {
        for fd in wakePipe where fd >= 0 { close(fd) }
    }

    /// The session bus address from the environment, when one is set.
    public static func sessionBusAddress(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        environment["DBUS_SESSION_BUS_ADDRESS"].flatMap { $0.isEmpty ? nil : $0 }
    }

    /// Starts the D-Bus thread, which connects to `busAddress`; returns at once.
    /// Call once.
    public func start(busAddress: String) {
        guard wakePipe[0] >= 0 else {
            logger.debug("mpris: pipe failed (\(String(cString: strerror(errno)))); not on the bus")
            return
        }
        lock.withLock { threadRunning = true }
        let thread = Thread { [self] in nameCurrentThread("harmonia.mpris"); run(address: busAddress) }
        thread.name = "harmonia-mpris"
        thread.start()
    }

    /// The bus name owned, once the D-Bus thread has one.
    public var busName: String? { lock.withLock { ownedName } }

    /// Records a service event: called from the service's observer, on any thread.
    public func post(_ event: PlaybackEvent) {
        switch event {
        case .position, .underrun, .trackEnded, .error, .network(.connecting, _), .network(.reconnecting, _), .network(.resumed, _), .network(.linkExpired, _):
            return  // nothing a desktop sees changes with these alone
        default:
            break
        }
        lock.withLock {
            pending.changed = true
            switch event {
            case .seekCompleted(let seconds):
                pending.seeks.append(seconds)
                if pending.seeks.count > 64 { pending.seeks.removeFirst() }
            case .trackStarted(_, let track):
                pending.started.append(track.id)
                if pending.started.count > 64 { pending.started.removeFirst() }
            case .network(.streamTitle(let title, _), let url):
                pending.radio[url, default: RadioFacts()].title = title
            case .network(.station(let station), let url):
                pending.radio[url, default: RadioFacts()].station = station.name
            default:
                break
            }
        }
        wake()
    }

    /// Ends the D-Bus thread and closes the connection (the bus drops the
    /// name). Waits for a thread that is running its loop; a thread still
    /// connecting to a slow bus is left to end by itself.
    public func shutdown() {
        lock.withLock {
            pending.stopRequested = true
        }
        wake()
        lock.withLock {
            while threadRunning && ownedName != nil { lock.wait() }
        }
    }

    /// A byte in the pipe (a full pipe already wakes the thread).
    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakePipe[1], &byte, 1)
    }

    // MARK: The D-Bus thread

    private func run(address: String) {
        defer {
            lock.withLock {
                threadRunning = false
                ownedName = nil
                lock.broadcast()
            }
        }
        let connection: DBusBusConnection
        let name: String
        do throws(DBusFailure) {
            connection = try DBusBusConnection(address: address)
            let primary = MPRISNames.busNamePrefix + options.name
            name = try connection.requestName(primary) ? primary : primary + ".instance\(getpid())"
            if name != primary {
                guard try connection.requestName(name) else {
                    logger.debug("mpris: \(name) is taken; not on the bus")
                    return
                }
            }
        } catch {
            logger.debug("mpris: no session bus: \(error)")
            return
        }
        defer { connection.close() }
        let stop = lock.withLock { () -> Bool in
            guard !pending.stopRequested else { return true }
            ownedName = name
            return false
        }
        if stop { return }
        logger.info("mpris: \(name) on the session bus")

        let covers = options.coverFolder.map(CoverArtCache.init)
        let object = MPRISObject(service: service, commands: commands, identity: options.identity,
                                 metadataSource: MPRISMetadataSource(tagReader: tagReader, covers: covers))
        // What happened before is in the baseline; what happens from here on
        // is compared with it (cleared first, so nothing falls in between).
        // Radio facts are not changes but state: they are kept.
        let radio = lock.withLock { () -> [String: RadioFacts] in
            defer { pending = Pending(stopRequested: pending.stopRequested) }
            return pending.radio
        }
        object.noteRadio(radio)
        var published = object.playerProperties()
        var currentID = service.currentTrack?.id

        while connection.isConnected {
            guard waitForWork(connection) else { break }
            connection.readWrite()
            while let message = connection.popMessage() {
                if message.kind == .signal, message.interface == MPRISNames.local, message.member == "Disconnected" {
                    logger.debug("mpris: the session bus went away")
                    return
                }
                guard message.kind == .methodCall else { continue }
                handle(message, object: object, connection: connection)
            }
            let news = lock.withLock { () -> Pending in
                defer { pending = Pending(stopRequested: pending.stopRequested) }
                return pending
            }
            if !news.radio.isEmpty { object.noteRadio(news.radio) }
            if news.changed {
                publishChanges(object: object, published: &published, currentID: &currentID, news: news, connection: connection)
            }
            if news.stopRequested {
                connection.readWrite()  // the last changes go out if the socket takes them now
                break
            }
        }
    }

    /// Polls the bus socket and the wake-up pipe; false when polling fails.
    private func waitForWork(_ connection: DBusBusConnection) -> Bool {
        guard let fd = connection.fileDescriptor else { return false }
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN) | (connection.hasMessagesToSend ? Int16(POLLOUT) : 0), revents: 0),
            pollfd(fd: wakePipe[0], events: Int16(POLLIN), revents: 0),
        ]
        while poll(&fds, 2, -1) < 0 {
            guard errno == EINTR else { return false }
        }
        if fds[1].revents & Int16(POLLIN) != 0 {
            var bytes = [UInt8](repeating: 0, count: 64)
            while read(wakePipe[0], &bytes, bytes.count) == bytes.count {}
        }
        return true
    }

    private func handle(_ message: DBusIncomingMessage, object: MPRISObject, connection: DBusBusConnection) {
        guard let member = message.member, let path = message.path else { return }
        let answer: MPRISObject.Answer
        if message.interface == MPRISNames.peer {
            switch member {
            case "Ping": answer = .values([])
            case "GetMachineId":
                do throws(DBusFailure) { answer = .values([.string(try connection.machineID())]) } catch {
                    answer = .error(name: MPRISNames.Error.failed, message: "\(error)")
                }
            default: answer = .error(name: MPRISNames.Error.unknownMethod, message: "No method \(member.prefix(100))")
            }
        } else if let arguments = message.arguments(maxStringBytes: 65536) {
            answer = object.call(path: path, interface: message.interface, member: member, arguments: arguments)
        } else {
            answer = .error(name: MPRISNames.Error.invalidArgs,
                            message: "arguments of signature '\(message.signature.prefix(40))' are not taken by \(member.prefix(100))")
        }
        guard message.wantsReply || isQuit(message) else { return }
        do throws(DBusFailure) {
            switch answer {
            case .values(let values): if message.wantsReply { try connection.reply(to: message, values) }
            case .error(let name, let text): if message.wantsReply { try connection.replyError(to: message, name: name, message: text) }
            }
        } catch {
            logger.debug("mpris: \(error)")
        }
        if isQuit(message), case .values = answer {
            connection.flush()  // the caller hears back before the process ends
            commands.quit()
        }
    }

    private func isQuit(_ message: DBusIncomingMessage) -> Bool {
        message.path == MPRISNames.objectPath && message.member == "Quit"
            && (message.interface == MPRISNames.root || message.interface == nil)
    }

    /// PropertiesChanged with whatever differs from what was last published,
    /// then Seeked for each seek (and for a queue entry that started again:
    /// repeat-one, or Previous on the first entry).
    private func publishChanges(object: MPRISObject, published: inout MPRISPlayerProperties, currentID: inout UUID?,
                                news: Pending, connection: DBusBusConnection) {
        let now = object.playerProperties()
        let changes = now.changes(since: published)
        published = now
        var restarts = 0
        for id in news.started {
            if id == currentID { restarts += 1 }
            currentID = id
        }
        do throws(DBusFailure) {
            if !changes.isEmpty {
                try connection.signal(path: MPRISNames.objectPath, interface: MPRISNames.properties, member: "PropertiesChanged",
                                      [.string(MPRISNames.player), .dictionary(changes), .strings([])])
            }
            for _ in 0..<restarts {
                try connection.signal(path: MPRISNames.objectPath, interface: MPRISNames.player, member: "Seeked", [.int64(0)])
            }
            for seconds in news.seeks {
                try connection.signal(path: MPRISNames.objectPath, interface: MPRISNames.player, member: "Seeked",
                                      [.int64(MPRISMapping.microseconds(seconds))])
            }
        } catch {
            logger.debug("mpris: \(error)")
        }
    }
}
