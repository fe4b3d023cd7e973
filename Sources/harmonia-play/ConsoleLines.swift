// `play`'s lines for people: what started, what a radio says, what failed.
import HarmoniaControl
import HarmoniaCore

/// A frontend of the player that writes lines: every failed input on stderr
/// as `harmonia-play: PATH: CATEGORY: message` as soon as the service reports
/// it, and unless quiet one line per track started and each radio title.
final class ConsoleLines: PlayerFrontend {
    let service: DefaultPlaybackService
    let quiet: Bool
    /// The queue's length in the Playing line when nothing can change it
    /// (no control channel); nil: the queue's length now.
    let fixedCount: Int?

    init(service: DefaultPlaybackService, quiet: Bool, fixedCount: Int?) {
        self.service = service
        self.quiet = quiet
        self.fixedCount = fixedCount
    }

    func show(_ event: PlaybackEvent) {
        switch event {
        case .error(let error, let url):
            if let url {
                Console.report(url, error)
            } else {
                Self.report(error)
            }
        case .trackStarted(let index, let track):
            if !quiet {
                Console.out(Self.startedLine(index: index, of: fixedCount ?? service.queue.count, track: track))
            }
        case .network(let network, _):
            if !quiet, let line = Self.networkLine(network) { Console.out(line) }
        default:
            break
        }
    }

    /// `harmonia-play: CATEGORY: message`, for an error of no input in particular.
    static func report(_ error: CoreError) {
        Console.err("harmonia-play: \(error.category.rawValue): \(Console.oneLine(error.message))")
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
