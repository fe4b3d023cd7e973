// Crossfade (issue 41), as a user hears it: tones of distinct frequencies
// made by the ffmpeg command line, played by `harmonia-play --crossfade`
// through the file output, and the output analysed: where the overlap
// starts and how long it is (from the measured amplitude of each tone),
// the curve (equal-power), the total length to the frame, no step; and
// joins that stay gapless to the bit (one album in order, crossfade 0);
// a manual next through serve's real-time file output, the fade found
// from the file's length (a's heard frames, then b whole); a fade across
// 44.1 -> 48 kHz into a WAV that stays 44.1 kHz.
import Foundation
import HarmoniaTestSupport
import Testing

/// Tones written by the ffmpeg command line into a folder of their own.
struct ToneFiles {
    let folder: String

    init() throws {
        folder = NSTemporaryDirectory() + "harmonia-crossfade-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: folder) }

    /// A stereo FLAC of `amplitude`·sin(2π·`frequency`·t) for `seconds`, with album tags.
    func tone(_ name: String, frequency: Double, seconds: Double, rate: Int = 44100, amplitude: Double = 0.5,
              album: String, albumArtist: String = "Tone Band", track: Int) throws -> String {
        let path = folder + "/" + name + ".flac"
        let result = try ProcessRunner.run("/usr/bin/env", [
            "ffmpeg", "-nostdin", "-v", "error", "-f", "lavfi",
            "-i", "aevalsrc=\(amplitude)*sin(2*PI*\(frequency)*t)|\(amplitude)*sin(2*PI*\(frequency)*t):s=\(rate):d=\(seconds)",
            "-metadata", "album=\(album)", "-metadata", "album_artist=\(albumArtist)",
            "-metadata", "track=\(track)", "-metadata", "title=\(name)", "-c:a", "flac", path,
        ])
        guard result.status == 0 else { throw FixtureError("ffmpeg: \(result.stderrText)") }
        return path
    }
}

/// The amplitude of each of several tones in a window of a signal (least
/// squares on a sine and cosine per frequency).
enum ToneMeter {
    static func amplitudes(_ samples: [Float], channels: Int, rate: Double, from start: Int, count: Int,
                           frequencies: [Double]) -> [Double] {
        let n = frequencies.count * 2
        var normal = [[Double]](repeating: [Double](repeating: 0, count: n + 1), count: n)
        var basis = [Double](repeating: 0, count: n)
        for frame in start..<(start + count) {
            let t = Double(frame) / rate
            for (k, f) in frequencies.enumerated() {
                basis[2 * k] = sin(2 * .pi * f * t)
                basis[2 * k + 1] = cos(2 * .pi * f * t)
            }
            let y = Double(samples[frame * channels])
            for i in 0..<n {
                for j in 0..<n { normal[i][j] += basis[i] * basis[j] }
                normal[i][n] += basis[i] * y
            }
        }
        // Gauss–Jordan on the small normal equations.
        for column in 0..<n {
            let pivot = (column..<n).max { abs(normal[$0][column]) < abs(normal[$1][column]) }!
            normal.swapAt(column, pivot)
            for row in 0..<n where row != column {
                let factor = normal[row][column] / normal[column][column]
                for k in column...n { normal[row][k] -= factor * normal[column][k] }
            }
        }
        let solution = (0..<n).map { normal[$0][n] / normal[$0][$0] }
        return frequencies.indices.map { hypot(solution[2 * $0], solution[2 * $0 + 1]) }
    }
}

@Suite("crossfade: tones through the file output")
struct CrossfadeTests {
    static let rate = 44100

    private func floats(_ path: String) throws -> [Float] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// Plays `inputs` into a raw f32le file; returns the process and the samples.
    private func play(_ options: [String], _ inputs: [String], in files: ToneFiles) throws -> (ProcessResult, [Float]) {
        let out = files.folder + "/out-\(UUID().uuidString.prefix(8)).f32"
        let result = try ProcessRunner.harmoniaPlay(["--quiet", "--output", "file:" + out] + options + inputs)
        let samples = FileManager.default.fileExists(atPath: out) ? try floats(out) : []
        return (result, samples)
    }

    /// What an equal-power fade of `length` frames from `a` into `b` gives,
    /// as the issue defines it (stereo): `a` up to `start` (by default its
    /// last `length` frames; a manual skip's heard frame), then `a` from
    /// there fading out over `b`'s first `length` frames, then the rest of `b`.
    private func model(_ a: [Float], _ b: [Float], start: Int? = nil, length: Int) -> [Float] {
        let start = start ?? a.count / 2 - length
        var out = Array(a[0..<(start * 2)])
        for k in 0..<length {
            let t = Double(k) / Double(length)
            for c in 0..<2 {
                let mixed = Double(a[(start + k) * 2 + c]) * cos(.pi / 2 * t) + Double(b[k * 2 + c]) * sin(.pi / 2 * t)
                out.append(Float(mixed))
            }
        }
        out += b[(length * 2)...]
        return out
    }

    private func maxAbsDiff(_ a: [Float], _ b: [Float]) -> Float {
        zip(a, b).reduce(0) { max($0, abs($1.0 - $1.1)) }
    }

    /// The largest step between neighbouring frames (left channel).
    private func largestStep(_ samples: [Float]) -> Float {
        var worst: Float = 0
        for frame in 1..<(samples.count / 2) { worst = max(worst, abs(samples[frame * 2] - samples[frame * 2 - 2])) }
        return worst
    }

    /// The fade measured from the output alone: each tone's amplitude in
    /// 10 ms windows, the incoming tone's arcsine fitted to a line (an
    /// equal-power fade in is sin(π/2·(t − start)/length)).
    struct MeasuredFade {
        let start: Double
        let length: Double
        /// The largest |gOut² + gIn² − 1| in the fade (0 for equal power).
        let powerError: Double
        /// The largest |gOut − cos(π/2·(t − start)/length)| in the fade.
        let curveError: Double
    }

    private func measureFade(_ samples: [Float], outgoing: Double, incoming: Double, amplitude: Double,
                             around seconds: ClosedRange<Double>) -> MeasuredFade {
        let window = Self.rate / 100
        var points: [(t: Double, out: Double, in: Double)] = []
        var frame = Int(seconds.lowerBound * Double(Self.rate))
        while frame + window <= min(samples.count / 2, Int(seconds.upperBound * Double(Self.rate))) {
            let a = ToneMeter.amplitudes(samples, channels: 2, rate: Double(Self.rate), from: frame, count: window,
                                         frequencies: [outgoing, incoming])
            points.append(((Double(frame) + Double(window) / 2) / Double(Self.rate), a[0] / amplitude, a[1] / amplitude))
            frame += window
        }
        let fit = points.filter { $0.in > 0.1 && $0.in < 0.9 }
        let xs = fit.map(\.t), ys = fit.map { asin($0.in) }
        let n = Double(fit.count), mx = xs.reduce(0, +) / n, my = ys.reduce(0, +) / n
        let slope = zip(xs, ys).reduce(0) { $0 + ($1.0 - mx) * ($1.1 - my) } / xs.reduce(0) { $0 + ($1 - mx) * ($1 - mx) }
        let length = Double.pi / 2 / slope
        let start = mx - my / slope
        var powerError = 0.0, curveError = 0.0
        for point in points where point.t > start + 0.01 && point.t < start + length - 0.01 {
            powerError = max(powerError, abs(point.out * point.out + point.in * point.in - 1))
            curveError = max(curveError, abs(point.out - cos(.pi / 2 * (point.t - start) / length)))
        }
        return MeasuredFade(start: start, length: length, powerError: powerError, curveError: curveError)
    }

    /// Two tracks of different albums and the crossfade between them; the
    /// overlap expected: N s, or half the shorter track when it is shorter than 2·N.
    struct FadeCase: Sendable, CustomStringConvertible {
        let outgoingSeconds: Double
        let incomingSeconds: Double
        let crossfade: Double
        var overlap: Double { min(crossfade, outgoingSeconds / 2, incomingSeconds / 2) }
        var description: String { "\(outgoingSeconds) s → \(incomingSeconds) s, crossfade \(crossfade) s" }
    }

    @Test("different albums fade equal-power: the overlap starts N s before the end and lasts N s (half the shorter track when it is shorter than 2·N), the total shrinks by as much",
          arguments: [FadeCase(outgoingSeconds: 4, incomingSeconds: 4, crossfade: 1),
                      FadeCase(outgoingSeconds: 1.5, incomingSeconds: 4, crossfade: 2),
                      FadeCase(outgoingSeconds: 4, incomingSeconds: 1.5, crossfade: 2)])
    func equalPowerFade(_ fadeCase: FadeCase) throws {
        let files = try ToneFiles()
        defer { files.remove() }
        let a = try files.tone("a", frequency: 440, seconds: fadeCase.outgoingSeconds, album: "First", track: 1)
        let b = try files.tone("b", frequency: 1000, seconds: fadeCase.incomingSeconds, album: "Second", track: 2)
        let (result, samples) = try play(["--crossfade", "\(fadeCase.crossfade)"], [a, b], in: files)
        #expect(result.status == 0, "stderr: \(result.stderrText)")
        let sourceA = try Fixtures.cliReference(a), sourceB = try Fixtures.cliReference(b)
        let length = Int(fadeCase.overlap * Double(Self.rate))
        // The total: both tracks less the overlap, to the frame.
        #expect(samples.count / 2 == (sourceA.count + sourceB.count) / 2 - length)
        // The overlap measured from the tones' amplitudes alone (±1 ms).
        let start = fadeCase.outgoingSeconds - fadeCase.overlap
        let fade = measureFade(samples, outgoing: 440, incoming: 1000, amplitude: 0.5,
                               around: max(0, start - 0.5)...(start + fadeCase.overlap + 0.5))
        #expect(abs(fade.start - start) <= 0.001, "overlap starts at \(fade.start) s")
        #expect(abs(fade.length - fadeCase.overlap) <= 0.001, "overlap lasts \(fade.length) s")
        #expect(fade.powerError < 0.01, "not equal-power: \(fade.powerError)")
        #expect(fade.curveError < 0.01, "the outgoing side is not cos: \(fade.curveError)")
        // Sample by sample, the fade is the formula, and nothing steps:
        // no frame moves further than the two tones' steepest slopes together.
        #expect(maxAbsDiff(samples, model(sourceA, sourceB, length: length)) < 1e-5)
        let steepest = Float(2 * Double.pi * (440 + 1000) * 0.5 / Double(Self.rate))
        #expect(largestStep(samples) <= steepest * 1.01, "a step of \(largestStep(samples))")
        if ProcessInfo.processInfo.environment["HARMONIA_CROSSFADE_FIGURES"] != nil {
            print("crossfade \(fadeCase): start \(fade.start) s, length \(fade.length) s, power error \(fade.powerError), curve error \(fade.curveError), model error \(maxAbsDiff(samples, model(sourceA, sourceB, length: length))), largest step \(largestStep(samples)) (bound \(steepest))")
        }
    }

    /// Track 1 of album "Live" (440 Hz, 3 s), then `album`'s track `track`
    /// (1000 Hz, 3 s); their paths and their samples as the ffmpeg command line decodes them.
    private func livePair(_ files: ToneFiles, album: String, track: Int) throws -> (paths: [String], a: [Float], b: [Float]) {
        let a = try files.tone("one", frequency: 440, seconds: 3, album: "Live", track: 1)
        let b = try files.tone("next", frequency: 1000, seconds: 3, album: album, track: track)
        return ([a, b], try Fixtures.cliReference(a), try Fixtures.cliReference(b))
    }

    @Test("gapless to the bit: consecutive tracks of one album with a crossfade, and any join with --crossfade 0",
          arguments: [(["--crossfade", "1"], "Live"), (["--crossfade", "0"], "Studio")])
    func gaplessJoins(_ options: [String], _ album: String) throws {
        let files = try ToneFiles()
        defer { files.remove() }
        let pair = try livePair(files, album: album, track: 2)
        let (result, samples) = try play(options, pair.paths, in: files)
        #expect(result.status == 0, "stderr: \(result.stderrText)")
        #expect(samples == pair.a + pair.b, "the join is not the sources end to end")
    }

    @Test("--crossfade-albums fades one album's tracks too; a track number that does not follow fades without it",
          arguments: [(["--crossfade", "1", "--crossfade-albums"], 2), (["--crossfade", "1"], 3)])
    func albumJoinsThatFade(_ options: [String], _ nextTrack: Int) throws {
        let files = try ToneFiles()
        defer { files.remove() }
        let pair = try livePair(files, album: "Live", track: nextTrack)
        let (result, samples) = try play(options, pair.paths, in: files)
        #expect(result.status == 0, "stderr: \(result.stderrText)")
        #expect(samples.count / 2 == (pair.a.count + pair.b.count) / 2 - Self.rate)
        #expect(maxAbsDiff(samples, model(pair.a, pair.b, length: Self.rate)) < 1e-5)
    }

    @Test("a manual next while playing, through serve's real-time file output: a fades out from the heard frame over b's first N s, sample by sample")
    func manualNext() throws {
        let files = try ToneFiles()
        defer { files.remove() }
        let sourceA = try Fixtures.cliReference(try files.tone("a", frequency: 440, seconds: 10, album: "First", track: 1))
        let sourceB = try Fixtures.cliReference(try files.tone("b", frequency: 1000, seconds: 2.5, album: "Second", track: 1))
        let dir = try HarmoniaPlayServeTests.folder("xfade-next")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let out = dir + "/out.f32", socket = dir + "/control.sock"
        let server = try ServeProcess(music: files.folder, folder: dir,
                                      extra: ["--output", "file:" + out, "--control", "unix:" + socket])
        try server.waitForLibrary(songs: 2)
        let control = try UnixLineClient(path: socket)
        typealias C = HarmoniaPlayControlTests
        let requests: [(String, [String: Any])] = [("queue/add", ["uri": "a.flac"]), ("queue/add", ["uri": "b.flac"]),
                                                   ("set_crossfade", ["seconds": 1]), ("play", [:])]
        for (id, (command, args)) in requests.enumerated() {
            control.write(C.request(id, command, args))
            #expect(try C.reply(control.lines, id).object["error"] == nil, "\(command)")
        }
        // Heard a while (serve's first position report, 1 s in), then skipped: wherever the skip lands.
        _ = try C.event(control.lines, "position") { ($0["position"] as? Double ?? 0) > 0 }
        control.write(C.request(10, "next"))
        #expect(try C.reply(control.lines, 10).object["error"] == nil)
        _ = try C.event(control.lines, "queue_ended")
        #expect(server.stop() != nil)
        let data = try Data(contentsOf: URL(fileURLWithPath: out))
        let samples = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        // The file holds what was heard: a up to the skip, the fade, the rest of b;
        // so the skip's frame is the file's length less b's.
        let skip = samples.count / 2 - sourceB.count / 2
        #expect(skip > Self.rate / 2 && skip < sourceA.count / 2 - Self.rate, "skipped at frame \(skip)")
        guard skip > 0 && skip < sourceA.count / 2 - Self.rate else { return }
        #expect(maxAbsDiff(samples, model(sourceA, sourceB, start: skip, length: Self.rate)) < 1e-5)
        let start = Double(skip) / Double(Self.rate)
        let fade = measureFade(samples, outgoing: 440, incoming: 1000, amplitude: 0.5, around: (start - 0.5)...(start + 1.5))
        #expect(abs(fade.start - start) <= 0.001, "overlap starts at \(fade.start) s, the skip at \(start) s")
        #expect(abs(fade.length - 1) <= 0.001, "overlap lasts \(fade.length) s")
        #expect(fade.powerError < 0.01, "not equal-power: \(fade.powerError)")
        let steepest = Float(2 * Double.pi * (440 + 1000) * 0.5 / Double(Self.rate))
        #expect(largestStep(samples) <= steepest * 1.01, "a step of \(largestStep(samples))")
        if ProcessInfo.processInfo.environment["HARMONIA_CROSSFADE_FIGURES"] != nil {
            print("manual next at \(start) s: overlap start \(fade.start) s, length \(fade.length) s, power error \(fade.powerError), model error \(maxAbsDiff(samples, model(sourceA, sourceB, start: skip, length: Self.rate)))")
        }
    }

    @Test("44.1 -> 48 kHz into a WAV: the file stays 44.1 kHz, a is bit-exact to the overlap, which starts 1 s before its end and lasts 1 s, equal-power, b converted after it, no step")
    func rateChangeFadeIntoWAV() throws {
        let files = try ToneFiles()
        defer { files.remove() }
        let a = try files.tone("a", frequency: 440, seconds: 4, album: "First", track: 1)
        let b = try files.tone("b", frequency: 1000, seconds: 4, rate: 48000, album: "Second", track: 2)
        let out = files.folder + "/out.wav"
        let result = try ProcessRunner.harmoniaPlay(["--quiet", "--output", "file:" + out, "--crossfade", "1", a, b])
        #expect(result.status == 0, "stderr: \(result.stderrText)")
        let data = try Data(contentsOf: URL(fileURLWithPath: out))
        try #require(data.count > 44)
        func le(_ offset: Int, _ size: Int) -> Int { (0..<size).reduce(0) { $0 | Int(data[offset + $1]) << (8 * $1) } }
        #expect(le(24, 4) == Self.rate && le(22, 2) == 2, "the WAV says \(le(24, 4)) Hz, \(le(22, 2)) ch")
        let samples = data.dropFirst(44).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        // The total: 3 s of a, then b's 4 s at 44.1 kHz (the first second under a's last).
        #expect(samples.count / 2 == 7 * Self.rate)
        let sourceA = try Fixtures.cliReference(a)
        #expect(Array(samples.prefix(3 * Self.rate * 2)) == Array(sourceA.prefix(3 * Self.rate * 2)), "a is not bit-exact before the overlap")
        let fade = measureFade(samples, outgoing: 440, incoming: 1000, amplitude: 0.5, around: 2.5...4.5)
        #expect(abs(fade.start - 3) <= 0.001, "overlap starts at \(fade.start) s")
        #expect(abs(fade.length - 1) <= 0.001, "overlap lasts \(fade.length) s")
        #expect(fade.powerError < 0.01, "not equal-power: \(fade.powerError)")
        #expect(fade.curveError < 0.01, "the outgoing side is not cos: \(fade.curveError)")
        // Frame by frame against the tones themselves: a (converted to 48 kHz
        // for the mix and back) fading out, b (converted) fading in, then b.
        var worst = 0.0
        for n in 0..<(4 * Self.rate - 16) {  // (not the converter's last 16 frames, after which is silence)
            let t = Double(n) / Double(Self.rate)
            let fadeIn = min(t, 1)
            let want = 0.5 * sin(2 * .pi * 440 * (3 + t)) * cos(.pi / 2 * fadeIn) + 0.5 * sin(2 * .pi * 1000 * t) * sin(.pi / 2 * fadeIn)
            worst = max(worst, abs(Double(samples[(3 * Self.rate + n) * 2]) - want))
        }
        #expect(worst < 1e-4, "the fade and b are \(worst) off the tones")
        let steepest = Float(2 * Double.pi * (440 + 1000) * 0.5 / Double(Self.rate))
        #expect(largestStep(samples) <= steepest * 1.01, "a step of \(largestStep(samples))")
        if ProcessInfo.processInfo.environment["HARMONIA_CROSSFADE_FIGURES"] != nil {
            print("44.1 -> 48 kHz: start \(fade.start) s, length \(fade.length) s, power error \(fade.powerError), curve error \(fade.curveError), off the tones \(worst), largest step \(largestStep(samples)) (bound \(steepest))")
        }
    }

    @Test("bad --crossfade values: a one-line error, nothing played", arguments: ["-1", "abc", "1e9", "nan", "31"])
    func badValues(_ value: String) throws {
        let files = try ToneFiles()
        defer { files.remove() }
        let (result, samples) = try play(["--crossfade", value], [Fixtures.named("wav_s16_stereo_44k.wav").path], in: files)
        #expect(result.status != 0)
        #expect(result.stderrText.contains("crossfade"), "stderr: \(result.stderrText)")
        #expect(samples.isEmpty)
    }
}
