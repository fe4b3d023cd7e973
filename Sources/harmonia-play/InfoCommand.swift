// harmonia-play info: tags and stream facts of each input.
import ArgumentParser
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaFFmpeg

struct InfoCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "info",
        abstract: "Print the tags and stream facts of each input.",
        discussion: """
            A folder stands for its audio files and those of its subfolders, in natural
            order (hidden files skipped), as with 'play'.
            With --json, one JSON object per line per input: "url" (the exact name), every tag that is
            present (TagBundle names; the cover as "artworkBytes", its size) and the
            stream facts. A bad input is reported on stderr as
            'harmonia-play: PATH: CATEGORY: message'; the others still print.
            --artwork PATH also saves the one input's embedded cover, bytes as stored
            (JPEG or PNG), to PATH; a file without a cover is an error (notFound).
            Exit status: 0 all inputs read, 1 some failed, 2 usage error.
            """
    )

    @Flag(name: .long, help: "One JSON object per line.")
    var json = false

    @Option(name: .long, help: ArgumentHelp("Save the embedded cover (JPEG or PNG bytes as stored) to PATH; one input only.", valueName: "PATH"))
    var artwork: String?

    @Option(name: .long, help: ArgumentHelp("Files read at once (default: the number of cores); the output keeps the input order.", valueName: "N"))
    var jobs: Int?

    @Argument(help: "Audio files, URLs or folders.")
    var inputs: [String]

    func validate() throws {
        if let jobs, !(1...256).contains(jobs) { throw ValidationError("--jobs must be between 1 and 256") }
        if let artwork {
            guard !artwork.isEmpty else { throw ValidationError("--artwork needs a file path to write the cover to") }
            guard inputs.count == 1 else { throw ValidationError("--artwork takes exactly one input; got \(inputs.count)") }
        }
    }

    func run() throws {
        let tagReader = FFmpegTagReaderAdapter()
        let expansion = InputExpander(cueSheets: CueSheetFileAdapter(), report: Console.report).expandFolders(inputs)
        var failed = expansion.failures > 0
        let urls = expansion.tracks.map(\.url)
        let workers = min(jobs ?? ProcessInfo.processInfo.activeProcessorCount, max(urls.count, 1))
        // Read on `workers` threads, print on this one in input order.
        OrderedWork.run(count: urls.count, workers: workers, work: { index in
            Result { () throws(CoreError) in try tagReader.readWithStreamInfo(url: urls[index]) }
        }, deliver: { index, result in
            let input = urls[index]
            do throws(CoreError) {
                let (tags, stream) = try result.get()
                if json {
                    Console.out(JSONValue.object(EventJSON.info(url: input, tags: tags, stream: stream)).serialized)
                } else {
                    Console.out(Self.readable(url: input, tags: tags, stream: stream))
                }
                if let artwork { try Self.saveArtwork(tags.artworkData, of: input, to: artwork) }
            } catch {
                failed = true
                Console.report(input, error)
            }
        })
        if failed { throw ExitCode(1) }
    }

    /// Writes the cover's bytes to `path` (replacing it), or throws
    /// `notFound` when the file has none, `ioError` when `path` cannot be written.
    static func saveArtwork(_ data: Data?, of input: String, to path: String) throws(CoreError) {
        guard let data else { throw .notFound("\(input): no embedded cover art; nothing written to \(path)") }
        do {
            try data.write(to: URL(fileURLWithPath: path))
        } catch {
            throw .ioError("\(path): the cover cannot be written there; check the folder and its permissions")
        }
    }

    /// A block a person reads.
    static func readable(url: String, tags: TagBundle, stream: StreamInfo) -> String {
        var lines = [Console.oneLine(url)]
        func line(_ label: String, _ value: String?) {
            if let value { lines.append("  " + (label + ":").padding(toLength: 14, withPad: " ", startingAt: 0) + Console.oneLine(value)) }
        }
        line("Title", tags.title); line("Artist", tags.artist); line("Album", tags.album)
        line("Album artist", tags.albumArtist); line("Composer", tags.composer); line("Genre", tags.genre)
        line("Year", tags.year.map(String.init))
        line("Track", tags.trackNumber.map { n in tags.trackTotal.map { "\(n)/\($0)" } ?? "\(n)" })
        line("Disc", tags.discNumber.map { n in tags.discTotal.map { "\(n)/\($0)" } ?? "\(n)" })
        line("BPM", tags.bpm.map(String.init))
        line("ReplayGain", Self.replayGain(tags))
        line("Comment", tags.comment)
        line("Cover", tags.artworkData.map { "\($0.count) bytes" })
        line("Lyrics", tags.lyrics.map { "\($0.count) text(s)" })
        var format = "\(stream.codec ?? "?"), \(Int(stream.sampleRate)) Hz, \(stream.channels) ch, \(stream.bitDepth)-bit"
        if let bitrate = stream.bitrate { format += ", \(bitrate) kbit/s" }
        if let encoding = tags.encoding { format += ", \(encoding)" }
        line("Format", format)
        let remote = url.contains("://") && !url.hasPrefix("file://")
        let duration = stream.duration.isFinite ? TimeFormat.clock(stream.duration)
            : remote ? "unknown (a live stream)" : "unknown (the file declares no usable length)"
        line("Duration", duration + (stream.totalFrames.map { " (\($0) frames)" } ?? ""))
        line("Size", tags.fileSize.map { "\($0) bytes" })
        return lines.joined(separator: "\n")
    }

    private static func replayGain(_ tags: TagBundle) -> String? {
        var parts: [String] = []
        if let g = tags.replayGainTrack { parts.append("track \(g) dB") }
        if let p = tags.replayGainTrackPeak { parts.append("peak \(p)") }
        if let g = tags.replayGainAlbum { parts.append("album \(g) dB") }
        if let p = tags.replayGainAlbumPeak { parts.append("peak \(p)") }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }
}

enum TimeFormat {
    /// 83.5 → "1:23.500"; 3723 → "1:02:03.000".
    static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 1e12 else { return "?" }  // durations come from files
        let millis = Int64((seconds * 1000).rounded())
        let h = millis / 3_600_000, m = millis / 60_000 % 60, s = millis / 1000 % 60, ms = millis % 1000
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let frac = String(ms + 1000).dropFirst()
        return h > 0 ? "\(h):\(two(m)):\(two(s)).\(frac)" : "\(m):\(two(s)).\(frac)"
    }
}

/// Work on items 0..<count on a few threads, delivered in order on the
/// calling thread as soon as each item and all before it are done. At most
/// `2 × workers` results wait to be delivered, so memory does not grow with
/// the number of items.
enum OrderedWork {
    static func run<T>(count: Int, workers: Int, work: @escaping @Sendable (Int) -> T, deliver: (Int, T) -> Void) {
        guard count > 0 else { return }
        guard workers > 1 else {
            for index in 0..<count { deliver(index, work(index)) }
            return
        }
        let state = OrderedWorkState<T>(window: 2 * workers)
        for _ in 0..<workers {
            Thread {
                while let index = state.take(count: count) { state.put(index, work(index)) }
            }.start()
        }
        for index in 0..<count { deliver(index, state.wait(for: index)) }
    }
}

final class OrderedWorkState<T>: @unchecked Sendable {
    private let lock = ConditionLock()
    private var next = 0
    private var delivered = 0
    private var done: [Int: T] = [:]
    private let window: Int

    init(window: Int) { self.window = window }

    /// The next item to work on, once it is within the window; nil when none is left.
    func take(count: Int) -> Int? {
        lock.withLock {
            while next < count && next >= delivered + window { lock.wait() }
            guard next < count else { return nil }
            next += 1
            return next - 1
        }
    }

    func put(_ index: Int, _ value: T) {
        lock.withLock {
            done[index] = value
            lock.broadcast()
        }
    }

    func wait(for index: Int) -> T {
        lock.withLock {
            while done[index] == nil { lock.wait() }
            delivered = index + 1
            lock.broadcast()
            return done.removeValue(forKey: index)!
        }
    }
}
