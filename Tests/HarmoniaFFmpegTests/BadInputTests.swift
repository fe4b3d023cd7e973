// Every kind of bad input gets its CoreError category, names the file, and
// breaks nothing else: specs/ports.md §DecoderPort errors.
import Foundation
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaTestSupport
import Testing

@Suite("Bad inputs")
struct BadInputTests {
    /// What each kind must produce.
    static func expectedCategory(_ input: BadInput) -> CoreError.Category? {
        switch input.kind {
        case "empty", "random", "image", "text", "video": .unsupported
        case "truncated": .decodeError
        case "corrupt": input.name.hasSuffix(".mp3") ? .decodeError : nil
        default: .invalidArgument  // an unknown kind fails the test below
        }
    }

    @Test("open or read fails with the right category, naming the file", arguments: Fixtures.bad)
    func category(input: BadInput) {
        let decoder = FFmpegDecoderAdapter()
        let error = coreError { _ = try decodeFile(input.path) }
        let expected = Self.expectedCategory(input)
        #expect(error?.category == expected, "\(input.name): \(String(describing: error))")
        if let error {
            #expect(error.message.contains(input.path), "the message must name the file: \(error.message)")
        }
        #expect(decoder.openSessionCount == 0)
    }

    @Test("the tag reader reports the same category for inputs that fail at open", arguments: Fixtures.bad)
    func tagReader(input: BadInput) {
        let openError = coreError { _ = try FFmpegDecoderAdapter().open(url: input.path) }
        let tagError = coreError { _ = try FFmpegTagReaderAdapter().read(url: input.path) }
        #expect(tagError?.category == openError?.category, "\(input.name)")
    }

    @Test("the library scan's header reader refuses what a full read refuses at the headers, in the same category",
          arguments: Fixtures.bad)
    func headerReader(input: BadInput) {
        let headerError = coreError { _ = try FFmpegTagReaderAdapter().readHeaders(url: input.path) }
        let fullError = coreError { _ = try FFmpegTagReaderAdapter().readWithStreamInfo(url: input.path) }
        if let headerError {
            #expect(headerError.category == fullError?.category, "\(input.name): \(headerError.message)")
            #expect(headerError.message.contains(input.path), "the message must name the file: \(headerError.message)")
        }
    }

    @Test("a truncated file delivers every frame before the cut, then decodeError with the position")
    func truncatedDeliversWhatItHas() throws {
        for input in Fixtures.bad where input.kind == "truncated" && input.source != nil {
            let source = Fixtures.all.first { input.source == $0.file }!
            let straight = try decodeFile(source.path)
            let decoder = FFmpegDecoderAdapter()
            guard let handle = try? decoder.open(url: input.path) else { continue }  // cut inside the headers
            defer { decoder.close(handle) }
            var delivered: [Float] = []
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 4096 * source.channels)
            defer { buffer.deallocate() }
            let error = coreError {
                while true {
                    let n = try decoder.read(handle, into: buffer, maxFrames: 4096)
                    if n == 0 { break }
                    delivered.append(contentsOf: UnsafeBufferPointer(start: buffer, count: n * source.channels))
                }
            }
            #expect(error?.category == .decodeError, "\(input.name)")
            #expect(error?.message.contains(" s") == true, "\(input.name): the message gives the position")
            #expect(!delivered.isEmpty && delivered.count < straight.count, "\(input.name)")
            // What was delivered is the file's audio up to the cut (the last
            // frame before the cut may be partial in lossy codecs).
            let compare = max(0, delivered.count - 4096 * source.channels)
            if compare > 0 {
                #expect(maxDifference(delivered[0..<compare], straight[0..<compare]) <= 1e-4, "\(input.name)")
            }
            // Reading again repeats the error rather than pretending success.
            #expect(coreError { _ = try decoder.read(handle, into: buffer, maxFrames: 1) }?.category == .decodeError)
        }
    }

    @Test("corrupt data where timestamps show the loss: the span is silence, the timeline stays exact",
          arguments: ["corrupt_mid.flac", "corrupt_mid.m4a"])
    func corruptResyncs(name: String) throws {
        let input = Fixtures.bad.first { $0.name == name }!
        let source = Fixtures.all.first { input.source == $0.file }!
        let clean = try decodeFile(source.path)
        let damaged = try decodeFile(input.path)
        #expect(damaged.count == clean.count)
        guard damaged.count == clean.count else { return }
        let channels = source.channels
        var firstBad = -1, lastBad = -1
        for frame in 0..<(clean.count / channels) {
            let i = frame * channels
            if maxDifference(damaged[i..<i + channels], clean[i..<i + channels]) > 0 {
                if firstBad < 0 { firstBad = frame }
                lastBad = frame
            }
        }
        #expect(firstBad > 0, "the corruption must show somewhere")
        // Before the damage and a little after it (one codec frame of
        // overlap), the samples are the clean file's, at the same positions.
        let tail = (lastBad + 8192) * channels
        #expect(tail < clean.count)
        #expect(maxDifference(damaged[tail...], clean[tail...]) <= 1e-4)
        #expect(maxDifference(damaged[0..<(firstBad * channels)], clean[0..<(firstBad * channels)]) == 0)
    }

    @Test("skipped corrupt data is logged as a warning naming the file and the position")
    func corruptionIsLogged() throws {
        let input = Fixtures.bad.first { $0.name == "corrupt_mid.m4a" }!
        let logger = CapturingLogger()
        let decoder = FFmpegDecoderAdapter(logger: logger)
        let handle = try decoder.open(url: input.path)
        defer { decoder.close(handle) }
        _ = try decodeToEnd(decoder, handle)
        let warnings = logger.messages.withLock { $0 }.filter { $0.level == "warn" }
        #expect(!warnings.isEmpty)
        #expect(warnings.allSatisfy { $0.text.contains(input.path) && $0.text.contains(" s") })
    }

    @Test("corrupt MP3 data (timestamps counted, so the loss is invisible) ends in decodeError after playing the rest")
    func corruptMP3() throws {
        let input = Fixtures.bad.first { $0.name == "corrupt_mid.mp3" }!
        let decoder = FFmpegDecoderAdapter()
        let handle = try decoder.open(url: input.path)
        defer { decoder.close(handle) }
        let error = coreError { _ = try decodeToEnd(decoder, handle) }
        #expect(error?.category == .decodeError)
        #expect(try decoder.position(handle) > 80_000)  // most of the 88 200 frames were played
    }

    @Test("permission denied is ioError")
    func permissionDenied() throws {
        let path = NSTemporaryDirectory() + "harmonia-unreadable-\(getpid()).flac"
        try FileManager.default.copyItem(atPath: Fixtures.named("flac_s16_stereo_44k.flac").path, toPath: path)
        defer { try? FileManager.default.removeItem(atPath: path) }
        chmod(path, 0)
        if geteuid() == 0 {
            // Root reads anything: ask as an unprivileged user instead.
            let result = try ProcessRunner.run("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                                     ProcessRunner.productsDirectory + "/harmonia-play", "info", path])
            #expect(result.status == 1)
            #expect(result.stderrText.contains("harmonia-play: \(path): ioError: "), "\(result.stderrText)")
            #expect(result.stderrText.contains("permission denied"))
        } else {
            #expect(coreError { _ = try FFmpegDecoderAdapter().open(url: path) }?.category == .ioError)
        }
    }
}

/// A LoggerPort that keeps what it is told.
final class CapturingLogger: LoggerPort {
    let messages = LockedValue<[(level: String, text: String)]>([])
    func debug(_ message: @autoclosure () -> String) { messages.withLock { $0.append(("debug", message())) } }
    func info(_ message: @autoclosure () -> String) { messages.withLock { $0.append(("info", message())) } }
    func warn(_ message: @autoclosure () -> String) { messages.withLock { $0.append(("warn", message())) } }
    func error(_ message: @autoclosure () -> String) { messages.withLock { $0.append(("error", message())) } }
}
