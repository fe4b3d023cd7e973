// harmonia-play [play], run as a user runs it: the built binary, through the
// file and null outputs (no sound server needed). Every expected sample comes
// from the ffmpeg command line (Fixtures.cliReference).
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play play")
struct HarmoniaPlayPlaybackTests {
    /// Lossless fixtures of one format (44.1 kHz stereo) that the ffmpeg
    /// command line decodes to exactly their frames: a gapless queue of them
    /// is one stream whose expected samples are the references end to end.
    static let sameFormat: [Fixture] = Fixtures.all.filter {
        $0.lossless && $0.sampleRate == 44100 && $0.channels == 2 && $0.cliFrames == $0.frames && $0.cliOffset == 0
    }

    private func temporaryOutput() -> String {
        NSTemporaryDirectory() + "harmonia-play-\(getpid())-\(UUID().uuidString.prefix(8)).f32"
    }

    private func floats(_ path: String) throws -> [Float] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// Plays `inputs` into a raw f32le file; returns the process and the samples.
    private func playToFile(_ options: [String], _ inputs: [String]) throws -> (ProcessResult, [Float]) {
        let out = temporaryOutput()
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try ProcessRunner.harmoniaPlay(["--output", "file:" + out] + options + inputs)
        let samples = FileManager.default.fileExists(atPath: out) ? try floats(out) : []
        return (result, samples)
    }

    private func maxAbsDiff(_ a: [Float], _ b: [Float]) -> Float {
        zip(a, b).reduce(0) { max($0, abs($1.0 - $1.1)) }
    }

    /// Expects `samples` to be `expected`, frame count exact, every sample within 1e-6.
    private func expectSamples(_ samples: [Float], _ expected: [Float], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(samples.count == expected.count, "frame count", sourceLocation: sourceLocation)
        #expect(maxAbsDiff(samples, expected) <= 1e-6, sourceLocation: sourceLocation)
    }

    @Test("several inputs through file output are the per-file decodes end to end; one line per track")
    func gaplessConcatenation() throws {
        try #require(Self.sameFormat.count >= 2, "needs two fixtures of one format")
        let (result, samples) = try playToFile([], Self.sameFormat.map(\.path))
        #expect(result.status == 0)
        #expect(result.stderrText.isEmpty)
        let expected = try Self.sameFormat.flatMap { try Fixtures.cliReference($0.path) }
        expectSamples(samples, expected)
        let lines = result.stdoutText.split(separator: "\n")
        #expect(lines.count == Self.sameFormat.count)
        for (i, line) in lines.enumerated() {
            #expect(line.hasPrefix("Playing \(i + 1)/\(Self.sameFormat.count): "))
        }
    }

    @Test("bad inputs in the middle: reported as 'harmonia-play: PATH: CATEGORY:', skipped; exit 1")
    func badInputInTheMiddle() throws {
        let first = Self.sameFormat[0], last = Self.sameFormat[1]
        let missing = Fixtures.root + "/audio/missing-\(getpid()).flac"
        let text = Fixtures.root + "/bad/text.mp3"
        let (result, samples) = try playToFile([], [first.path, missing, text, last.path])
        #expect(result.status == 1)
        let errors = result.stderrText.split(separator: "\n")
        #expect(errors.count == 2)
        #expect(errors.first?.hasPrefix("harmonia-play: \(missing): notFound: ") == true)
        #expect(errors.last?.hasPrefix("harmonia-play: \(text): unsupported: ") == true)
        expectSamples(samples, try Fixtures.cliReference(first.path) + Fixtures.cliReference(last.path))
        // The numbering is the queue's: the skipped entries keep theirs.
        let lines = result.stdoutText.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.last?.hasPrefix("Playing 4/4: ") == true)
    }

    @Test("bad first and last inputs are skipped too; all bad exits 1 with nothing played")
    func badFirstAndLast() throws {
        let good = Self.sameFormat[0]
        let text = Fixtures.root + "/bad/text.mp3", empty = Fixtures.root + "/bad/empty.mp3"
        let (result, samples) = try playToFile([], [text, good.path, empty])
        #expect(result.status == 1)
        let errors = result.stderrText.split(separator: "\n")
        #expect(errors.count == 2)
        #expect(errors.first?.hasPrefix("harmonia-play: \(text): ") == true)
        #expect(errors.last?.hasPrefix("harmonia-play: \(empty): ") == true)
        expectSamples(samples, try Fixtures.cliReference(good.path))

        let (allBad, nothing) = try playToFile([], [text, empty])
        #expect(allBad.status == 1)
        #expect(allBad.stderrText.split(separator: "\n").count == 2)
        #expect(allBad.stdoutText.isEmpty)
        #expect(nothing.isEmpty)
    }

    @Test("corrupt data inside a file: warnings on stderr, the file's length played, exit 0")
    func corruptDataWarns() throws {
        let corrupt = try #require(Fixtures.bad.first { $0.kind == "corrupt" && $0.file.hasSuffix(".flac") })
        let source = Fixtures.all.first { $0.file == corrupt.source }
        let (result, samples) = try playToFile(["--quiet"], [corrupt.path])
        #expect(result.status == 0)
        let lines = result.stderrText.split(separator: "\n")
        #expect(!lines.isEmpty)
        #expect(lines.allSatisfy { $0.hasPrefix("harmonia-play: warning: \(corrupt.path): ") })
        if let source { #expect(samples.count == Int(source.frames) * source.channels) }
    }

    @Test("--start/--end play a frame-exact range of the first input, then the next input follows")
    func rangeOnFirstInput() throws {
        let first = Self.sameFormat[0], second = Self.sameFormat[1]
        let (start, end) = (0.25, 0.75)
        // The same times in both accepted forms.
        let (result, samples) = try playToFile(["--start", "\(start)", "--end", "0:00.750"], [first.path, second.path])
        #expect(result.status == 0)
        #expect(result.stderrText.isEmpty)
        let rate = Double(first.sampleRate)
        let startFrame = Int((start * rate).rounded()), endFrame = Int((end * rate).rounded())
        let reference = try Fixtures.cliReference(first.path)
        let range = Array(reference[(startFrame * first.channels)..<(endFrame * first.channels)])
        expectSamples(samples, range + (try Fixtures.cliReference(second.path)))
    }

    @Test("--volume 50 halves every sample")
    func volumeHalves() throws {
        let fixture = Self.sameFormat[0]
        let (result, samples) = try playToFile(["--volume", "50", "--quiet"], [fixture.path])
        #expect(result.status == 0)
        #expect(result.stdoutText.isEmpty)  // --quiet
        let reference = try Fixtures.cliReference(fixture.path)
        #expect(reference.contains { $0 != 0 })
        expectSamples(samples, reference.map { $0 * 0.5 })
    }

    @Test("--output null plays a short clip in real time and exits 0")
    func nullOutput() throws {
        let shortest = try #require(Fixtures.all.min { Double($0.frames) / Double($0.sampleRate) < Double($1.frames) / Double($1.sampleRate) })
        let result = try ProcessRunner.harmoniaPlay(["--output", "null", "--end", "0.2", shortest.path])
        #expect(result.status == 0)
        #expect(result.stderrText.isEmpty)
        #expect(result.stdoutText.hasPrefix("Playing 1/1: "))
    }

    @Test("usage errors exit 2 without playing", arguments: [
        ["--volume", "150", "x.flac"],
        ["--volume", "loud", "x.flac"],
        ["--start", "1:75", "x.flac"],
        ["--start", "-1", "x.flac"],
        ["--end", "1:2:3:4", "x.flac"],
        ["--start", "2", "--end", "1.5", "x.flac"],
        ["--end", "0", "x.flac"],
        ["--replaygain", "loud", "x.flac"],
        ["--preamp", "3", "x.flac"],
        ["--output", "speaker", "x.flac"],
        ["--output", "file:", "x.flac"],
        ["--output", "null", "--latency", "20", "x.flac"],
        ["--latency", "5", "x.flac"],
        ["--quiet"],
        [],
        ["--control", "tcp:4000", "x.flac"],
        ["--control", "unix:", "x.flac"],
        ["--repeat", "twice", "x.flac"],
        ["--tick", "-5", "x.flac"],
        ["--tick", "5", "x.flac"],
        ["--log-level", "loud", "x.flac"],
        ["--start", "1", "--control", "stdin"],
    ])
    func usageErrors(_ arguments: [String]) throws {
        let result = try ProcessRunner.harmoniaPlay(arguments)
        #expect(result.status == 2)
        #expect(result.stdoutText.isEmpty)
        #expect(result.stderrText.contains("Error: "))
    }

    @Test("times: seconds or [hh:]mm:ss[.fff]")
    func timeForms() throws {
        // A range past the end of the file is the service's to refuse (exit 1), not a usage error.
        let fixture = Self.sameFormat[0]
        for form in ["1:00:00", "60:00", "3600", "3600.0"] {
            let (result, samples) = try playToFile(["--start", form], [fixture.path])
            #expect(result.status == 1, "\(form)")
            #expect(result.stderrText.hasPrefix("harmonia-play: \(fixture.path): invalidArgument: "), "\(form)")
            #expect(samples.isEmpty)
        }
    }

    @Test("play is the default subcommand: 'play' may be named, and an unknown word is an input")
    func defaultSubcommand() throws {
        let fixture = Self.sameFormat[0]
        let (named, samples) = try playToFile(["--quiet"], [fixture.path])
        #expect(named.status == 0)
        #expect(samples.count == (try Fixtures.cliReference(fixture.path)).count)
        let explicit = try ProcessRunner.harmoniaPlay(["play", "--output", "null", "--end", "0.05", "--quiet", fixture.path])
        #expect(explicit.status == 0)
        let word = try ProcessRunner.harmoniaPlay(["--output", "null", "no-such-command"])
        #expect(word.status == 1)
        #expect(word.stderrText.hasPrefix("harmonia-play: no-such-command: notFound: "))
        let help = try ProcessRunner.harmoniaPlay(["play", "--help"])
        #expect(help.status == 0)
        #expect(help.stdoutText.contains("--replaygain"))
        #expect(help.stdoutText.contains("Examples:"))
    }

    @Test("SIGINT and SIGTERM stop playback and exit 130 and 143", arguments: [SIGINT, SIGTERM])
    func signals(_ signo: Int32) throws {
        // A queue far longer than the test: it ends only by the signal.
        let fixture = Self.sameFormat[0]
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ProcessRunner.productsDirectory + "/harmonia-play")
        process.arguments = ["--output", "null"] + Array(repeating: fixture.path, count: 100)
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        // The first track line comes after the handlers are installed.
        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains("\n") {
            let chunk = out.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        #expect(String(decoding: seen, as: UTF8.self).hasPrefix("Playing 1/100: "))
        kill(process.processIdentifier, signo)
        process.waitUntilExit()
        #expect(process.terminationReason == .exit)
        #expect(process.terminationStatus == 128 + signo)
        #expect(err.fileHandleForReading.readDataToEndOfFile().isEmpty)
    }
}
