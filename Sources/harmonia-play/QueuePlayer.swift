// Plays a queue to its end through a PlaybackService and reports as it goes.
import Dispatch
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// Runs one queue on `service`: enqueue, jump to the first entry, play, then
/// wait on the service's events (no polling) until the queue has ended
/// (`stopped`), playback failed for good (`error`), or a termination signal
/// arrived. Every failed input is reported on stderr as
/// `harmonia-play: PATH: CATEGORY: message` as soon as the service reports it;
/// unless quiet, one line per track started goes to stdout. With a terminal
/// session, keys act on the service and the status line follows the events.
struct QueuePlayer {
    enum Outcome: Equatable {
        /// The queue ended; `failures` error events were reported on the way.
        case finished(failures: Int)
        /// SIGINT or SIGTERM: playback was stopped.
        case interrupted(signal: Int32)
        /// The control protocol's `quit`: playback was stopped.
        case quit
    }

    let service: DefaultPlaybackService
    let quiet: Bool
    /// JSON events and control requests (--json, --control); with a control
    /// channel the player stays at the end of the queue until `quit`.
    var control: ControlSession? = nil
    /// The status line and keys (interactive play on a terminal), or nil.
    var terminal: TerminalSession? = nil
    /// Called on the first termination signal, from a signal thread: makes
    /// the decoder's opens and reads in flight fail at once, so the main
    /// loop gets to the signal, as specs/inputs.md §Signals says.
    var interruptIO: @Sendable () -> Void = {}
    /// How long the main loop has to end the process after a signal before
    /// the process ends itself (a call FFmpeg cannot interrupt: a DNS lookup).
    static let signalGrace = 0.5
    /// MPRIS on the session bus, or nil: specs/mpris.md §harmonia-play.
    var desktop: DesktopSession? = nil
    /// Shared by keys and control commands; remembers a radio's heard title
    /// for `status` and the status line.
    var actions: PlayerActions? = nil

    /// Plays `tracks` in order. Call once, on a fresh service.
    func run(_ tracks: [Track]) -> Outcome {
        let inbox = EventInbox()
        let interruptIO = self.interruptIO
        let server = control?.server
        inbox.catchTerminationSignals { signo in
            interruptIO()
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.signalGrace) {
                // Still running: held up where no flag reaches. End as the
                // main loop would: terminal, socket file, 128 + signal.
                Terminal.restore(newline: true)
                server?.shutdown(drainSeconds: 0)
                _exit(128 + signo)
            }
        }
        defer { terminal?.finish() }
        terminal?.startKeys { inbox.post(.key($0)) }
        // The observer runs on the service's threads, possibly under its lock:
        // it only hands the event over.
        service.observe { inbox.post(.event($0)) }
        desktop?.start(inbox: inbox)
        defer { desktop?.shutdown() }
        do throws(CoreError) {
            try control?.open()
        } catch {
            Console.err("harmonia-play: \(error.category.rawValue): \(Console.oneLine(error.message))")
            return .finished(failures: 1)
        }
        defer { control?.shutdown() }
        service.enqueue(tracks)

        var failures = 0
        var ended = false
        if !tracks.isEmpty { do {
            // Inputs that cannot be opened are reported (error events) and
            // skipped; the call throws only when none from here on opens.
            try service.jump(to: 0)
            try service.play()
        } catch {
            // An error state comes with its events (drained below); anything
            // else leaves no event behind, so it is reported here.
            if case .error = service.state {} else {
                Console.err("harmonia-play: \(error.category.rawValue): \(Console.oneLine(error.message))")
                failures += 1
                ended = !(control?.waitsForCommands ?? false)
            }
        } }
        // Requests are read once the queue has started.
        control?.start(inbox: inbox)

        while !ended {
            switch inbox.take() {
            case .signal(let signo):
                terminal?.finish()  // the terminal first, whatever stopping takes
                service.stop()
                return .interrupted(signal: signo)
            case .control(let message):
                switch control?.handle(message) {
                case .quit?:
                    interruptIO()  // an open in flight ends now, not at its timeout
                    service.stop()
                    return .quit
                case .inputClosed?:
                    // No command can come: end as without a control channel
                    // (and at once when paused: nothing could resume it).
                    switch service.state {
                    case .stopped, .error, .paused: ended = true
                    default: break
                    }
                default:
                    break
                }
            case .event(let event):
                control?.event(event)
                switch event {
                case .error(let error, let url):
                    failures += 1
                    if let url {
                        Console.report(url, error)
                    } else {
                        Console.err("harmonia-play: \(error.category.rawValue): \(Console.oneLine(error.message))")
                    }
                case .trackStarted(let index, let track):
                    if !quiet {
                        // With a control channel the queue may have changed since the start.
                        let count = control == nil ? tracks.count : service.queue.count
                        Console.out(Self.startedLine(index: index, of: count, track: track))
                    }
                case .network(let network, let url):
                    if case .streamTitle(let title, _) = network { actions?.noteStreamTitle(title, url: url) }
                    if !quiet, let line = Self.networkLine(network) { Console.out(line) }
                case .stateChanged(.stopped), .stateChanged(.error):
                    // A Stop from the desktop keeps the player, for its Play or Quit.
                    let desktopStop = event == .stateChanged(.stopped) && desktop?.takeStopRequest() == true
                    ended = !(control?.waitsForCommands ?? false) && !desktopStop
                default:
                    break
                }
                terminal?.show(event)
            case .quit:
                service.stop()
                return .quit
            case .key(let key):
                // q ends the queue as if it had played out.
                if terminal?.perform(key) == .quit {
                    service.stop()
                    ended = true
                }
            }
        }
        return .finished(failures: failures)
    }

    /// `Playing 2/3: Title — Artist (3:25)`; the file name stands in for a
    /// missing title, and the length is left out when unknown.
    static func startedLine(index: Int, of count: Int, track: Track) -> String {
        var line = "Playing \(index + 1)/\(count): " + Console.oneLine(track.title ?? Self.fileName(track.url))
        if let artist = track.artist { line += " — " + Console.oneLine(artist) }
        if let duration = track.duration, duration.isFinite { line += " (\(Self.minutesSeconds(duration)))" }
        return line
    }

    /// What a network source says, as a line for people: a radio's
    /// station and titles, each reconnect (`nil`: nothing to say).
    static func networkLine(_ event: NetworkEvent) -> String? {
        switch event {
        case .station(let station):
            guard let name = station.name else { return nil }
            return "Station: " + Console.oneLine(name) + (station.genre.map { " (\(Console.oneLine($0)))" } ?? "")
        case .streamTitle(let title, _):
            return "Now playing: " + Console.oneLine(title)
        case .reconnecting(let attempt, let byte):
            return "Connection lost; reconnecting at byte \(byte) (attempt \(attempt))…"
        case .linkExpired(let status):
            return "The server refused the link (HTTP \(status)); asking for a fresh one…"
        case .connecting, .resumed:
            return nil  // the Playing line, and then the sound, say it
        }
    }

    /// The last path component of a path or URL.
    static func fileName(_ url: String) -> String {
        url.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init) ?? url
    }

    /// 205.4 → "3:25"; 3725 → "1:02:05" (rounded to the second); below
    /// 10 s with tenths: 0.25 → "0:00.3".
    static func minutesSeconds(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1e12 else { return "?" }  // durations come from files
        if seconds < 9.95 {
            let tenths = Int64((seconds * 10).rounded())
            return "0:0\(tenths / 10).\(tenths % 10)"
        }
        let total = Int64(seconds.rounded())
        let h = total / 3600, m = total / 60 % 60, s = total % 60
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return h > 0 ? "\(h):\(two(m)):\(two(s))" : "\(m):\(two(s))"
    }
}
