// The acceptance test of gapless playback (issue 4): a sine split into three
// parts as PCM, each part encoded on its own (Tests/Fixtures/gapless, made by
// generate.sh), played in order through `harmonia-play --output file:` must
// give the unsplit sine back — the same length to the frame at the decoded
// rate, and no gap, overlap or step at the joins.
import Foundation
import HarmoniaTestSupport
import Testing

/// Tests/Fixtures/gapless/gapless.json.
struct GaplessManifest: Decodable, Sendable {
    struct Signal: Decodable, Sendable {
        let frequencies: [Double]
        let amplitude: Double
    }
    struct Part: Decodable, Sendable {
        let file: String
        /// Exact frames of the part's PCM source.
        let frames: Int
        /// What `ffmpeg -i PART -f f32le -` decoded at generation time.
        let cliFrames: Int
    }
    struct Set: Decodable, Sendable, CustomStringConvertible {
        let codec: String
        let sampleRate: Int
        let channels: Int
        /// The unsplit sine's frames (the parts' sum).
        let frames: Int
        let parts: [Part]
        var description: String { codec }
        var paths: [String] { parts.map { GaplessManifest.root + "/" + $0.file } }
        /// First frame of each part after the first.
        var joins: [Int] { parts.dropLast().reduce(into: [Int]()) { $0.append(($0.last ?? 0) + $1.frames) } }
    }
    let signal: Signal
    let sets: [Set]

    static let root = Fixtures.root + "/gapless"
    static let shared: GaplessManifest = {
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: root + "/gapless.json"))
            return try JSONDecoder().decode(GaplessManifest.self, from: data)
        } catch {
            fatalError("cannot read \(root)/gapless.json: \(error)")
        }
    }()

    /// The sine as aevalsrc computed it: in double, `t = i / rate`, rounded to float.
    func ideal(frame: Int, channel: Int, rate: Int) -> Float {
        Float(signal.amplitude * sin(2 * Double.pi * signal.frequencies[channel] * (Double(frame) / Double(rate))))
    }
}

@Suite("gapless joins: split sine, parts encoded separately")
struct GaplessJoinTests {
    static let manifest = GaplessManifest.shared

    /// Half a join window: the joins are judged over ±5 ms.
    static let halfWindowMs = 5
    /// How much larger than in the middle of the parts the error at a join may be. Each
    /// lossy encoder sees its part's start and end as an abrupt onset and cut, and codes
    /// them worse than the steady sine (measured, FFmpeg 5.1: AAC 13×, Opus 11×, MP3 7×,
    /// Vorbis 2×, FLAC 1×, all from the encoders: the decode equals the ffmpeg command
    /// line's there). Silence or a step at a join makes it ≈ the amplitude instead, and a
    /// shift of the parts after it fails the lag check.
    static let joinFactor: Float = 16
    /// Lags searched in the middle of each part: the best match to the ideal sine must be at 0.
    static let maxLag = 32

    private func floats(_ path: String) throws -> [Float] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    /// Plays the set's parts in order into a raw f32le file; returns the process and the samples.
    private func play(_ set: GaplessManifest.Set) throws -> (ProcessResult, [Float]) {
        let out = NSTemporaryDirectory() + "harmonia-gapless-\(set.codec)-\(getpid())-\(UUID().uuidString.prefix(8)).f32"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try ProcessRunner.harmoniaPlay(["--quiet", "--output", "file:" + out] + set.paths)
        let samples = FileManager.default.fileExists(atPath: out) ? try floats(out) : []
        return (result, samples)
    }

    /// The ideal sine of the whole set, interleaved.
    private func ideal(_ set: GaplessManifest.Set) -> [Float] {
        var samples = [Float](repeating: 0, count: set.frames * set.channels)
        for frame in 0..<set.frames {
            for channel in 0..<set.channels {
                samples[frame * set.channels + channel] = Self.manifest.ideal(frame: frame, channel: channel, rate: set.sampleRate)
            }
        }
        return samples
    }

    /// Largest |decoded − ideal| over frames `range`, all channels.
    private func maxError(_ decoded: [Float], _ ideal: [Float], _ range: Range<Int>, channels: Int) -> Float {
        var worst: Float = 0
        for i in (range.lowerBound * channels)..<(range.upperBound * channels) {
            worst = max(worst, abs(decoded[i] - ideal[i]))
        }
        return worst
    }

    /// The lag L in ±maxLag for which decoded frames `range` best match ideal frames
    /// `range + L` (least squares).
    private func bestLag(_ decoded: [Float], _ ideal: [Float], _ range: Range<Int>, channels: Int) -> Int {
        var best = (lag: 0, error: Float.infinity)
        for lag in -Self.maxLag...Self.maxLag {
            var sum: Float = 0
            for i in (range.lowerBound * channels)..<(range.upperBound * channels) {
                let d = decoded[i] - ideal[i + lag * channels]
                sum += d * d
            }
            if sum < best.error { best = (lag, sum) }
        }
        return best.lag
    }

    @Test("the parts play back as the unsplit sine: exact length, no gap or step at the joins",
          arguments: GaplessJoinTests.manifest.sets)
    func joins(_ set: GaplessManifest.Set) throws {
        let (result, decoded) = try play(set)
        #expect(result.status == 0, "exit status; stderr: \(result.stderrText.prefix(500))")
        #expect(result.stderrText.isEmpty, "stderr: \(result.stderrText.prefix(500))")
        let frames = decoded.count / set.channels
        #expect(decoded.count % set.channels == 0)
        // The length is the unsplit original's, to the frame.
        try #require(frames == set.frames, "decoded \(frames) frames, the unsplit sine has \(set.frames)")

        let ideal = ideal(set)
        let half = set.sampleRate * Self.halfWindowMs / 1000
        // Every part sits at its frame: in a window in the middle of each part, the
        // decoded sine best matches the ideal one at lag 0 (a gap or an overlap at an
        // earlier join would shift it), with a small error (this is the reference).
        var starts = [0] + set.joins
        starts.append(set.frames)
        var middleError: Float = 0
        for (index, (start, end)) in zip(starts, starts.dropFirst()).enumerated() {
            let middle = ((start + end) / 2 - half)..<((start + end) / 2 + half)
            middleError = max(middleError, maxError(decoded, ideal, middle, channels: set.channels))
            let lag = bestLag(decoded, ideal, middle, channels: set.channels)
            #expect(lag == 0, "part \(index + 1) is shifted by \(lag) frames")
        }
        #expect(middleError < 0.1 * Float(Self.manifest.signal.amplitude),
                "error \(middleError) in the middle of the parts: the decode is not the sine")

        // No gap or step at a join: the error around it stays within a small factor of
        // the error in the middle of the parts.
        var joinErrors: [Float] = []
        for join in set.joins {
            let joinError = maxError(decoded, ideal, (join - half)..<(join + half), channels: set.channels)
            joinErrors.append(joinError)
            #expect(joinError <= Self.joinFactor * middleError,
                    "join at frame \(join): error \(joinError), \(middleError) in the middle of the parts")
        }
        print("gapless \(set.codec): \(frames) frames (expected \(set.frames)); max error at the joins \(joinErrors), in the middle \(middleError)")
    }

    @Test("FLAC: the joined parts are bit-exact against the quantised ideal sine")
    func flacBitExact() throws {
        let set = try #require(Self.manifest.sets.first { $0.codec == "flac" })
        let (result, decoded) = try play(set)
        #expect(result.status == 0)
        try #require(decoded.count == set.frames * set.channels)
        // s16 as FFmpeg quantises float: lrintf(x * 32768), clipped; decoded back as q / 32768.
        let quantised = ideal(set).map { Float(Int16(clamping: Int(($0 * 32768).rounded(.toNearestOrEven)))) / 32768 }
        let mismatches = zip(decoded, quantised).lazy.filter { $0 != $1 }.count
        let first = decoded.indices.first { decoded[$0] != quantised[$0] }
        #expect(mismatches == 0, "\(mismatches) samples differ, the first at sample \(first ?? -1)")
    }

    @Test("AAC: the ffmpeg command line keeps each part's end padding; we do not")
    func aacCommandLinePadding() throws {
        let set = try #require(Self.manifest.sets.first { $0.codec == "aac" })
        var cliFrames = 0
        for path in set.paths { cliFrames += try Fixtures.cliReference(path).count / set.channels }
        #expect(cliFrames > set.frames, "the ffmpeg CLI decodes \(cliFrames) frames, the sine has \(set.frames)")
        let (result, decoded) = try play(set)
        #expect(result.status == 0)
        #expect(decoded.count / set.channels == set.frames)
    }
}
