// The interactive face of `play` on a terminal: one status line redrawn in
// place, and keys read on their own thread.
import Dispatch
import Foundation
import HarmoniaControl
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// What the status line shows, and how it fits a width.
struct StatusLine: Equatable {
    /// The title (or file name), or a notice standing in for it.
    var title: String
    var artist: String?
    var elapsed: Double
    /// nil when unknown (a stream): no bar, elapsed only.
    var total: Double?
    var volumePercent: Int
    var muted: Bool
    var state: String
    /// 1-based queue position and queue length.
    var position: (index: Int, count: Int)?

    static func == (a: StatusLine, b: StatusLine) -> Bool {
        a.title == b.title && a.artist == b.artist && a.elapsed == b.elapsed && a.total == b.total
            && a.volumePercent == b.volumePercent && a.muted == b.muted && a.state == b.state
            && a.position?.index == b.position?.index && a.position?.count == b.position?.count
    }

    /// `Title — Artist  [######--------------]  0:12 / 3:25  vol 80%  playing  2/3`
    /// in at most `width - 1` columns (the last column stays free so the
    /// terminal never wraps): the title is truncated first (to 12 columns),
    /// then the bar narrows (to 6 cells) and goes, then the title goes.
    func render(width: Int) -> String {
        let columns = max(width - 1, 1)
        let time = total.map { "\(ConsoleLines.minutesSeconds(elapsed)) / \(ConsoleLines.minutesSeconds($0))" }
            ?? ConsoleLines.minutesSeconds(elapsed)
        var fields = [time, muted ? "muted" : "vol \(volumePercent)%", state]
        if let position { fields.append("\(position.index)/\(position.count)") }
        let tail = fields.joined(separator: "  ")
        let head = artist.map { title + " — " + $0 } ?? title

        func bar(_ cells: Int) -> String {
            guard cells > 0, let total, total > 0 else { return "" }
            let filled = Int((min(max(elapsed / total, 0), 1) * Double(cells)).rounded(.down))
            return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: cells - filled) + "]"
        }
        func compose(_ title: String, _ cells: Int) -> String {
            [title, bar(cells), tail].filter { !$0.isEmpty }.joined(separator: "  ")
        }

        var cells = total == nil ? 0 : 20
        while true {
            let room = columns - compose("", cells).count - 2
            let headColumns = Self.columns(head)
            if headColumns <= room { return compose(head, cells) }
            if room >= min(12, headColumns) || cells == 0 {
                if room >= 2 { return compose(Self.truncate(head, to: room), cells) }
                return String(compose("", cells).prefix(columns))
            }
            let deficit = min(12, headColumns) - room
            cells = cells > 6 ? max(6, cells - deficit) : 0
        }
    }

    /// `text` in at most `columns` columns, ending in "…" when cut.
    static func truncate(_ text: String, to columns: Int) -> String {
        guard Self.columns(text) > columns else { return text }
        var kept = "", used = 0
        for character in text {
            let width = Self.columns(character)
            if used + width > columns - 1 { break }
            kept.append(character)
            used += width
        }
        return kept + "…"
    }

    /// Terminal columns `text` takes: wide (East Asian, emoji) characters 2,
    /// controls 0, others 1.
    static func columns(_ text: String) -> Int { text.reduce(0) { $0 + columns($1) } }

    static func columns(_ character: Character) -> Int {
        guard let scalar = character.unicodeScalars.first else { return 0 }
        switch scalar.value {
        case 0..<0x20, 0x7F..<0xA0: return 0
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
             0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
             0xFFE0...0xFFE6, 0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x3FFFD:
            return 2
        default: return 1
        }
    }
}

/// The interactive session of one `play` run on a terminal: owns the key
/// mode, the status line and the key thread. Console output goes above the
/// line while it is drawn (`Console.out`/`err` route through `printAbove`).
/// Thread-safe: the line is written under a lock; the service is read
/// outside it (its observers and logger may run under the service's locks).
final class TerminalSession: PlayerFrontend, Console.LinePrinter, @unchecked Sendable {
    enum KeyOutcome: Equatable { case handled, quit }

    /// The key help, as `?` shows it and `play --help` lists it.
    static let keyHelp = """
        space pause/resume  ←/→ seek -/+5 s  ↓/↑ seek -/+60 s  n/p next/previous
        +/- volume +/-5 (= is +)  m mute/unmute  q quit  ? this help
        """

    let service: DefaultPlaybackService
    let actions: PlayerActions

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var drawn = ""
    private var lastStatus: StatusLine?
    private var active = true
    /// Between ^Z and SIGCONT: the terminal is the user's, nothing is drawn.
    private var suspended = false
    private var track: Track?
    private var notice: String?
    private var noticeGeneration = 0
    private var stopKeysFD: Int32 = -1
    private var signalSources: [DispatchSourceSignal] = []

    private static let registryLock = ConditionLock()
    nonisolated(unsafe) private static var current: TerminalSession?

    /// The session whose line is drawn now, if any.
    static var active: TerminalSession? { registryLock.withLock { current } }

    /// Starts a session when stdin and stdout are a terminal in the
    /// foreground (`Terminal.isInteractive`) and its modes can be set; nil
    /// otherwise (then nothing interactive is printed).
    static func start(service: DefaultPlaybackService, actions: PlayerActions) -> TerminalSession? {
        guard Terminal.isInteractive, Terminal.enterKeyMode() else { return nil }
        let session = TerminalSession(service: service, actions: actions)
        registryLock.withLock { current = session }
        Console.setLinePrinter(session)
        session.watchSignals()
        return session
    }

    private init(service: DefaultPlaybackService, actions: PlayerActions) {
        self.service = service
        self.actions = actions
    }

    // MARK: As the player's frontend

    /// Starts reading keys; each is acted on in the player's main loop (q
    /// ends the queue as if it had played out).
    func open(_ app: PlayerApplication) throws(CoreError) {
        let inbox = app.inbox
        startKeys { [self] key in inbox.post(.job { self.perform(key) == .quit ? .endQueue : .continue }) }
    }

    /// The terminal first, whatever stopping takes.
    func interrupted() { finish() }

    func shutdown() { finish() }

    // MARK: Keys

    /// Reads stdin on a dedicated thread until `finish` (or end of input),
    /// handing each key to `post`.
    func startKeys(_ post: @escaping @Sendable (Key) -> Void) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return }
        let stopRead = fds[0]
        lock.withLock { stopKeysFD = fds[1] }
        let thread = Thread {
            nameCurrentThread("harmonia.keys")
            defer { close(stopRead) }
            var parser = KeyParser()
            var buffer = [UInt8](repeating: 0, count: 64)
            while true {
                var polled = [pollfd(fd: 0, events: Int16(POLLIN), revents: 0),
                              pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0)]
                if poll(&polled, 2, -1) < 0 {
                    if errno == EINTR { continue }
                    return
                }
                if polled[1].revents != 0 { return }
                guard polled[0].revents != 0 else { continue }
                let n = read(0, &buffer, buffer.count)
                if n < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    return
                }
                if n == 0 { return }  // end of input: no more keys
                for key in parser.feed(buffer[0..<n]) { post(key) }
            }
        }
        thread.name = "harmonia-play keys"
        thread.start()
    }

    /// Acts on `key`; an action's error is shown on the line for a moment.
    func perform(_ key: Key) -> KeyOutcome {
        do throws(CoreError) {
            switch key {
            case .character(" "): try actions.toggle()
            case .left: try actions.seek(by: -5)
            case .right: try actions.seek(by: 5)
            case .down: try actions.seek(by: -60)
            case .up: try actions.seek(by: 60)
            case .character("n"): try actions.next()
            case .character("p"): try actions.previous()
            case .character("+"), .character("="): actions.changeVolume(by: 5)
            case .character("-"), .character("_"): actions.changeVolume(by: -5)
            case .character("m"): actions.toggleMute()
            case .character("q"), .character("Q"): return .quit
            case .character("?"), .character("h"): printAbove(1, Self.keyHelp + "\n")
            default: break
            }
        } catch {
            show(notice: error.message)
        }
        redraw()
        return .handled
    }

    // MARK: The line

    /// Takes note of `event` and redraws.
    func show(_ event: PlaybackEvent) {
        if case .trackStarted(_, let track) = event { lock.withLock { self.track = track } }
        redraw()
    }

    /// Shows `text` in place of the title for two seconds.
    func show(notice text: String) {
        let generation = lock.withLock { () -> Int in
            notice = text
            noticeGeneration += 1
            return noticeGeneration
        }
        DispatchQueue.global().asyncAfter(deadline: .now() + 2) { [weak self] in
            guard let self else { return }
            let expired = self.lock.withLock { () -> Bool in
                guard self.noticeGeneration == generation else { return false }
                self.notice = nil
                return true
            }
            if expired { self.redraw() }
        }
    }

    /// Draws the line from the service's state now (skipped when unchanged).
    func redraw(force: Bool = false) {
        let (track, notice) = lock.withLock { (self.track, self.notice) }
        // The queue's entry (read when opened) agrees with the index and
        // duration read next; the last track event stands in before that.
        let current = service.currentTrack ?? track
        let state = service.state
        let duration = service.duration()
        let index = service.currentIndex
        let count = service.queue.count  // the queue may be edited while playing
        // Between the queue's end and the stopped state the service has no
        // current track but still reads playing: drawing that moment would
        // replace the last track's line (kept, marked stopped) with an empty
        // one (seen once under load). The stopped state follows at once.
        if index == nil, state == .playing || state == .paused || state == .buffering { return }
        var status = StatusLine(
            title: notice ?? current.map { actions.streamTitle(for: $0.url) ?? $0.title ?? ConsoleLines.fileName($0.url) } ?? "",
            artist: notice == nil ? current?.artist : nil,
            elapsed: service.currentTime(),
            total: duration.isFinite && duration > 0 ? duration : nil,
            volumePercent: actions.volumePercent,
            muted: actions.isMuted,
            state: state.name,
            position: index.map { ($0 + 1, count) })
        lock.withLock {
            // Stopped (the queue ended, or n on the last track): the last
            // track's line stays, marked stopped, rather than an empty one.
            if state == .stopped, var last = lastStatus {
                last.state = status.state
                last.volumePercent = status.volumePercent
                last.muted = status.muted
                status = last
            }
            lastStatus = status
            let text = status.render(width: Terminal.width)
            guard active, !suspended, force || text != drawn else { return }
            drawn = text
            Console.writeAll(1, Terminal.clearLine + text)
        }
    }

    /// Writes `text` (whole lines) to `fd` above the line: clears the line,
    /// writes, draws the line again.
    func printAbove(_ fd: Int32, _ text: String) {
        lock.withLock {
            guard active, !suspended else { return Console.writeAll(fd, text) }
            Console.writeAll(1, Terminal.clearLine)
            Console.writeAll(fd, text)
            Console.writeAll(1, drawn)
        }
    }

    /// Ends the session: the line as last drawn stays, ended by a newline;
    /// the cursor is shown and the terminal's modes restored; the key thread
    /// stops. Idempotent; safe from any thread.
    func finish() {
        let sources = lock.withLock { () -> [DispatchSourceSignal] in
            guard active else { return [] }
            active = false
            if stopKeysFD >= 0 {
                var byte: UInt8 = 0
                _ = write(stopKeysFD, &byte, 1)
                close(stopKeysFD)
                stopKeysFD = -1
            }
            Terminal.restore(newline: !drawn.isEmpty)
            defer { signalSources = [] }
            return signalSources
        }
        sources.forEach { $0.cancel() }
        Self.registryLock.withLock {
            if Self.current === self {
                Self.current = nil
                Console.setLinePrinter(nil)
            }
        }
    }

    // MARK: Signals

    /// SIGWINCH redraws at the new width; SIGTSTP (^Z) restores the terminal
    /// before stopping, and the key mode and line come back on SIGCONT.
    private func watchSignals() {
        var sources: [DispatchSourceSignal] = []
        let registered = DispatchSemaphore(value: 0)
        let resize = DispatchSource.makeSignalSource(signal: SIGWINCH, queue: .global())
        resize.setEventHandler { [weak self] in self?.redraw(force: true) }
        sources.append(resize)
        signal(SIGTSTP, SIG_IGN)
        let stop = DispatchSource.makeSignalSource(signal: SIGTSTP, queue: .global())
        stop.setEventHandler { [weak self] in self?.suspend() }
        sources.append(stop)
        for source in sources {
            source.setRegistrationHandler { registered.signal() }
            source.resume()
        }
        // Registered asynchronously: until then a ^Z would be ignored.
        for _ in sources { _ = registered.wait(timeout: .now() + 1) }
        lock.withLock { signalSources = sources }
    }

    private func suspend() {
        let restored = lock.withLock { () -> Bool in
            guard active else { return false }
            suspended = true
            Terminal.restore(newline: true)
            return true
        }
        guard restored else { return }
        raise(SIGSTOP)  // this thread stops here (kill(getpid()) may let it run on first)
        // Continued (fg or bg).
        let stillActive = lock.withLock { () -> Bool in
            suspended = false
            guard active else { return false }
            Terminal.reenterKeyMode()
            return true
        }
        if stillActive { redraw(force: true) }
    }
}
