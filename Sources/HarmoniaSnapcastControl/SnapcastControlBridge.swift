// The control bridge's I/O: snapserver's plugin JSON-RPC on stdin/stdout,
// the player's control socket, one poll loop on one thread — specs/snapcast-control.md
import HarmoniaControl
#if canImport(Glibc)
import Glibc
#endif

/// Bounded line reading from a byte stream: a line longer than `limit` is
/// dropped as it comes (never held whole) and reported once.
struct BoundedLineReader {
    enum Item: Equatable {
        case line([UInt8])
        case tooLong
    }

    let limit: Int
    private var buffer: [UInt8] = []
    private var discarding = false

    init(limit: Int) { self.limit = limit }

    /// Splits `bytes` into lines (without `\n`, a `\r` before it dropped).
    mutating func feed(_ bytes: UnsafeRawBufferPointer, _ handle: (Item) -> Void) {
        var start = 0
        for i in 0..<bytes.count where bytes[i] == 0x0A {
            take(bytes, start..<i)
            if discarding {
                discarding = false
                handle(.tooLong)
            } else {
                if buffer.last == 0x0D { buffer.removeLast() }
                if !buffer.isEmpty { handle(.line(buffer)) }
            }
            buffer.removeAll(keepingCapacity: buffer.capacity <= 65536)
            start = i + 1
        }
        take(bytes, start..<bytes.count)
    }

    private mutating func take(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) {
        guard !discarding, !range.isEmpty else { return }
        if buffer.count + range.count > limit {
            discarding = true
            buffer.removeAll()
        } else {
            buffer.append(contentsOf: bytes[range])
        }
    }
}

/// Bytes waiting for a non-blocking descriptor.
struct Outbox {
    private var bytes: [UInt8] = []
    private var offset = 0

    var pending: Int { bytes.count - offset }

    mutating func append(_ line: JSONValue) {
        bytes.append(contentsOf: Array(line.serialized.utf8))
        bytes.append(0x0A)
    }

    /// Writes what the descriptor takes. False when it failed for good.
    mutating func flush(_ fd: Int32, socket: Bool) -> Bool {
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                socket ? send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                    : write(fd, raw.baseAddress! + offset, min(raw.count - offset, 4096))
            }
            if n > 0 { offset += n; continue }
            if n < 0 && (errno == EAGAIN || errno == EINTR) { break }
            return false
        }
        if offset == bytes.count { bytes.removeAll(keepingCapacity: bytes.capacity <= 65536); offset = 0 }
        return true
    }

    mutating func clear() { bytes.removeAll(); offset = 0 }
}

/// `harmonia-play snapcast-control`: everything runs on the calling thread.
public final class SnapcastControlBridge {
    public struct Timing {
        public init() {}
        /// Between connection attempts: the first ten, then the rest.
        var firstRetries = 0.2
        var laterRetries = 1.0
        /// A command the player has not answered by then is answered with an error.
        var playerReplyTimeout = 3.0
        /// While playing, a status this often (positions also come from events).
        var playingPoll = 1.0
        /// A "still waiting for the player" line this often.
        var waitingReminder = 60.0
    }

    /// Lines from the player longer than this are dropped (a `status` is under 2 KB).
    static let maxPlayerLineBytes = 4 << 20
    /// Past this much unwritten on stdout, stdin is not read (snapserver is not reading).
    static let stdoutBackpressure = 256 * 1024

    private let socketPath: String
    private let timing: Timing
    private let log: (String) -> Void

    // Everything below: the loop's thread only.
    private var stdinReader = BoundedLineReader(limit: SnapcastPlugin.maxLineBytes)
    private var stdoutBox = Outbox()
    private var stdinEnded = false

    private var player: Int32 = -1
    private var playerReader = BoundedLineReader(limit: SnapcastControlBridge.maxPlayerLineBytes)
    private var playerBox = Outbox()
    private var attempts = 0
    private var nextAttempt = 0.0
    private var lastWaitingLog = -Double.infinity
    private var everConnected = false
    private var readySent = false

    private enum Purpose {
        case status
        case info(url: String)
        case cover(url: String)
        case forward(id: JSONValue, started: Double)
    }
    private var nextMessageID: Int64 = 1
    private var pending: [Int64: Purpose] = [:]
    private var statusInFlight = false
    private var statusWanted = false
    private var lastStatusAt = -Double.infinity

    private var snapshot: PlayerSnapshot?
    private var albumArtists: [String: [String]?] = [:]
    /// The last file's cover (one is enough: the bridge shows the current track).
    private var cover: (url: String, cover: SnapcastCover)?
    private var lastPushed: JSONValue?

    public init(socketPath: String, timing: Timing = Timing(), log: @escaping (String) -> Void) {
        self.socketPath = socketPath
        self.timing = timing
        self.log = log
    }

    /// Runs until stdin ends; returns then (the caller exits).
    public func run() {
        for fd in [Int32(0), 1] { Self.makeNonBlockingIfPipe(fd) }
        var buffer = [UInt8](repeating: 0, count: 65536)
        while !stdinEnded {
            let now = Self.now()
            if player < 0 && now >= nextAttempt { connect(now) }
            if player >= 0 && snapshot?.state == "playing" && now - lastStatusAt >= timing.playingPoll { requestStatus() }
            expireForwards(now)

            var fds = [pollfd(fd: 0, events: stdoutBox.pending < Self.stdoutBackpressure ? Int16(POLLIN) : 0, revents: 0),
                       pollfd(fd: 1, events: stdoutBox.pending > 0 ? Int16(POLLOUT) : 0, revents: 0)]
            if player >= 0 {
                fds.append(pollfd(fd: player, events: Int16(POLLIN) | (playerBox.pending > 0 ? Int16(POLLOUT) : 0), revents: 0))
            }
            let timeout = pollTimeout(now)
            let ready = poll(&fds, nfds_t(fds.count), timeout)
            if ready < 0 {
                if errno == EINTR { continue }
                log("poll failed: \(String(cString: strerror(errno)))")
                return
            }
            // stdin: snapserver's requests; its end is snapserver's end.
            if fds[0].revents != 0 {
                let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress!, $0.count) }
                if n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) { return }
                if n > 0 {
                    buffer.withUnsafeBytes { raw in
                        stdinReader.feed(UnsafeRawBufferPointer(rebasing: raw[0..<n])) { handleSnapserver($0) }
                    }
                }
            }
            if fds[1].revents & Int16(POLLOUT | POLLERR | POLLHUP) != 0 {
                if !stdoutBox.flush(1, socket: false) { return }  // snapserver gone
            }
            if player >= 0, fds.count > 2, fds[2].revents != 0 {
                if fds[2].revents & Int16(POLLOUT) != 0, !playerBox.flush(player, socket: true) {
                    disconnect("the player's socket failed: \(String(cString: strerror(errno)))")
                } else if fds[2].revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                    let n = buffer.withUnsafeMutableBytes { recv(player, $0.baseAddress!, $0.count, Int32(MSG_DONTWAIT)) }
                    if n == 0 {
                        disconnect("the player closed the connection")
                    } else if n < 0 && errno != EAGAIN && errno != EINTR {
                        disconnect("reading from the player failed: \(String(cString: strerror(errno)))")
                    } else if n > 0 {
                        buffer.withUnsafeBytes { raw in
                            playerReader.feed(UnsafeRawBufferPointer(rebasing: raw[0..<n])) { handlePlayer($0) }
                        }
                    }
                }
            }
            if stdoutBox.pending > 0, !stdoutBox.flush(1, socket: false) { return }
            if player >= 0, playerBox.pending > 0, !playerBox.flush(player, socket: true) {
                disconnect("writing to the player failed: \(String(cString: strerror(errno)))")
            }
        }
    }

    // MARK: snapserver's side

    private func handleSnapserver(_ item: BoundedLineReader.Item) {
        switch item {
        case .tooLong:
            log("snapserver sent a line longer than \(SnapcastPlugin.maxLineBytes) bytes; dropped")
            send(SnapcastPlugin.error(id: .null, .invalidRequest("the line is longer than \(SnapcastPlugin.maxLineBytes) bytes")))
        case .line(let bytes):
            switch SnapcastPlugin.parse(bytes) {
            case .invalid(let id, let error):
                log("snapserver sent an unreadable message: \(error.data ?? error.message)")
                send(SnapcastPlugin.error(id: id, error))
            case .notification(let method):
                log("ignored a notification from snapserver: \(SnapcastPlugin.brief(method))")
            case .response(let id):
                log("ignored a response from snapserver (id \(id.brief)): we send no requests")
            case .request(let id, let method, let params):
                switch SnapcastPlugin.action(method: method, params: params) {
                case .failure(let error):
                    send(SnapcastPlugin.error(id: id, error))
                case .success(.getProperties):
                    let properties = currentProperties()
                    lastPushed = properties
                    send(SnapcastPlugin.result(id: id, properties))
                case .success(.nothing):
                    send(SnapcastPlugin.result(id: id, .string("ok")))
                case .success(.player(let command, let args)):
                    guard player >= 0 else {
                        send(SnapcastPlugin.error(id: id, .internalError("not connected to the player at \(socketPath)")))
                        return
                    }
                    sendToPlayer(command, args, .forward(id: id, started: Self.now()))
                }
            }
        }
    }

    private func send(_ message: JSONValue) {
        stdoutBox.append(message)
    }

    private func currentProperties() -> JSONValue {
        SnapcastProperties.properties(snapshot, albumArtists: snapshot?.url.flatMap { albumArtists[$0] ?? nil } ?? [],
                                      cover: cover.flatMap { $0.url == snapshot?.url ? $0.cover : nil })
    }

    /// The first time: Ready (snapserver then asks for the properties, so
    /// that it learns them complete, album artist included); then pushes.
    private func publish() {
        guard readySent else {
            readySent = true
            send(SnapcastPlugin.ready)
            return
        }
        pushProperties()
    }

    /// Pushes the properties when they differ from what snapserver has.
    private func pushProperties() {
        let properties = currentProperties()
        guard properties != lastPushed else { return }
        lastPushed = properties
        send(SnapcastPlugin.propertiesNotification(properties))
    }

    /// Forwards that took too long get an error, so that snapserver (which
    /// has no timeout) and its client are not left waiting.
    private func expireForwards(_ now: Double) {
        for (messageID, purpose) in pending {
            guard case .forward(let id, let started) = purpose, now - started >= timing.playerReplyTimeout else { continue }
            pending[messageID] = nil
            log("the player did not answer within \(timing.playerReplyTimeout) s; told snapserver so")
            send(SnapcastPlugin.error(id: id, .internalError("the player did not answer within \(timing.playerReplyTimeout) s")))
        }
    }

    private func pollTimeout(_ now: Double) -> Int32 {
        var until = Double.infinity
        if player < 0 { until = min(until, nextAttempt) }
        if player >= 0 && snapshot?.state == "playing" { until = min(until, lastStatusAt + timing.playingPoll) }
        for purpose in pending.values {
            if case .forward(_, let started) = purpose { until = min(until, started + timing.playerReplyTimeout) }
        }
        guard until.isFinite else { return -1 }
        return Int32(min(max((until - now) * 1000, 0).rounded(.up), 60_000))
    }

    // MARK: The player's side

    private func connect(_ now: Double) {
        attempts += 1
        nextAttempt = now + (attempts < 10 ? timing.firstRetries : timing.laterRetries)
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard fd >= 0 else { return waiting(now, "socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(socketPath.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            return waiting(now, "the path is longer than a Unix socket path may be")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 || errno == EINPROGRESS else {
            let why = String(cString: strerror(errno))
            close(fd)
            return waiting(now, why)
        }
        player = fd
        attempts = 0
        log("connected to the player at \(socketPath)")
        everConnected = true
        requestStatus()
    }

    private func waiting(_ now: Double, _ why: String) {
        guard attempts == 1 || now - lastWaitingLog >= timing.waitingReminder else { return }
        lastWaitingLog = now
        log("waiting for the player at \(socketPath) (\(why)); retrying every \(timing.firstRetries) s at first, then every \(timing.laterRetries) s, while snapserver runs")
    }

    private func disconnect(_ why: String) {
        log("\(why); reconnecting to \(socketPath)")
        close(player)
        player = -1
        playerBox.clear()
        playerReader = BoundedLineReader(limit: Self.maxPlayerLineBytes)
        for purpose in pending.values {
            if case .forward(let id, _) = purpose {
                send(SnapcastPlugin.error(id: id, .internalError("lost the player at \(socketPath)")))
            }
        }
        pending.removeAll()
        statusInFlight = false
        statusWanted = false
        snapshot = nil
        attempts = 0
        nextAttempt = Self.now()
        if readySent { pushProperties() }
    }

    private func sendToPlayer(_ command: String, _ args: JSONValue, _ purpose: Purpose) {
        let id = nextMessageID
        nextMessageID += 1
        pending[id] = purpose
        playerBox.append(.object([("message_id", .int(id)), ("command", .string(command)), ("args", args)]))
        if playerBox.pending > 1 << 20 { disconnect("the player does not read its socket") }
    }

    private func requestStatus() {
        guard player >= 0 else { return }
        if statusInFlight { statusWanted = true; return }
        statusInFlight = true
        statusWanted = false
        sendToPlayer("status", .object([]), .status)
    }

    private func handlePlayer(_ item: BoundedLineReader.Item) {
        guard case .line(let bytes) = item else {
            log("the player sent a line longer than \(Self.maxPlayerLineBytes) bytes; dropped")
            return
        }
        guard ControlProtocol.nestingDepth(bytes) <= ControlProtocol.maxDepth, let message = try? JSONValue.parse(bytes),
              case .object = message else {
            log("the player sent a line that is not a JSON object; ignored")
            return
        }
        if message["event"] != nil {
            // Any event may change what snapserver shows: read the status again.
            requestStatus()
            return
        }
        guard let id = message["message_id"]?.number, id.isFinite, abs(id) < 9e15,
              let purpose = pending.removeValue(forKey: Int64(id)) else { return }  // not ours, or expired
        let failed = message["error_code"] != nil
        switch purpose {
        case .forward(let rpcID, _):
            if failed {
                send(SnapcastPlugin.error(id: rpcID, SnapcastPlugin.error(fromPlayerReply: message)))
            } else {
                send(SnapcastPlugin.result(id: rpcID, .string("ok")))
            }
        case .info(let url):
            let result = message["result"]
            albumArtists[url] = failed ? .some(nil)
                : .some(PlayerSnapshot.strings(result?["albumArtists"]) ?? result?["albumArtist"]?.string.map { [$0] })
            if !failed, let bytes = message["result"]?["artworkBytes"]?.number, bytes > 0 {
                // It has a cover: fetched next (answered before anything asked
                // later), then one push with everything.
                sendToPlayer("cover", .object([("uri", .string(url))]), .cover(url: url))
            } else {
                publish()
            }
        case .cover(let url):
            if !failed, let fetched = SnapcastCover(result: message["result"]) { cover = (url, fetched) }
            publish()
        case .status:
            statusInFlight = false
            lastStatusAt = Self.now()
            if !failed, let result = message["result"], let status = PlayerSnapshot(status: result) {
                snapshot = status
                if let url = status.url, albumArtists[url] == nil, Self.isLocal(url) {
                    // A new file: its album artist first (the player answers
                    // `info` before anything asked after it), then one push.
                    if albumArtists.count >= 256 { albumArtists.removeAll() }
                    albumArtists[url] = .some(nil)  // asked once
                    sendToPlayer("info", .object([("uri", .string(url))]), .info(url: url))
                } else {
                    publish()
                }
            } else {
                log("the player's status could not be read; ignored")
            }
            if statusWanted { requestStatus() }
        }
    }

    // MARK: Helpers

    /// A local file: `info` reads it at once (a network URL could keep the
    /// player's loop waiting on the connection).
    static func isLocal(_ url: String) -> Bool { !url.contains("://") || url.hasPrefix("file:") }

    static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// Pipes and sockets only: a terminal's flags are shared with the shell.
    static func makeNonBlockingIfPipe(_ fd: Int32) {
        var st = stat()
        guard fstat(fd, &st) == 0 else { return }
        let type = st.st_mode & S_IFMT
        guard type == S_IFIFO || type == S_IFSOCK else { return }
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Closes every descriptor above 2: snapserver's own (its stream
    /// source's listening socket, pipes) would otherwise outlive it here.
    /// Returns how many were closed.
    @discardableResult
    public static func closeInheritedDescriptors() -> Int {
        var numbers: [Int32] = []
        if let dir = opendir("/proc/self/fd") {
            let own = dirfd(dir)
            while let entry = readdir(dir) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if let n = Int32(name), n > 2, n != own { numbers.append(n) }
            }
            closedir(dir)
        } else {
            // No /proc: every possible descriptor.
            var limit = rlimit()
            let top = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 ? min(Int32(clamping: limit.rlim_cur), 65536) : 1024
            numbers = Array(3..<max(top, 3))
        }
        var closed = 0
        for n in numbers where close(n) == 0 { closed += 1 }
        return closed
    }
}
