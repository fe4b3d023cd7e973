// The seek guarantee per codec (specs/ports.md §DecoderPort (Exact seek)) on files the
// fixtures' generator did not make: Opus from noise and sweeps at several
// bitrates and frame sizes, AAC with and without noise substitution. Made
// here by the ffmpeg command line (libopus, FFmpeg's AAC encoder), decoded
// by the adapter, compared with the adapter's own straight decode.
import Foundation
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaTestSupport
import Testing

@Suite("Exact seek per codec, on files made here")
struct SeekExactnessTests {
    /// Encodes `source` (a lavfi graph) with `codec` options into a file named `name`.
    static func make(_ name: String, _ source: String, _ options: [String]) throws -> String {
        let directory = NSTemporaryDirectory() + "harmonia-seek-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let path = directory + "/" + name
        let made = try ProcessRunner.run("/usr/bin/env", ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", source] + options + [path])
        try #require(made.status == 0, "ffmpeg: \(made.stderrText)")
        return path
    }

    /// For each target: (frames after the seek, frames expected, samples identical).
    static func seekResults(_ path: String, targets count: Int) throws -> [(target: Int64, frames: Int, expected: Int, identical: Bool)] {
        let decoder = FFmpegDecoderAdapter()
        let handle = try decoder.open(url: path)
        defer { decoder.close(handle) }
        let channels = try decoder.info(handle).channels
        let straight = try decodeToEnd(decoder, handle)
        let total = Int64(straight.count / channels)
        var generator = SplitMix64(seed: 20_261_125)
        var results: [(Int64, Int, Int, Bool)] = []
        for _ in 0..<count {
            let target = Int64(generator.next() % UInt64(total))
            try decoder.seek(handle, toFrame: target)
            let rest = try decodeToEnd(decoder, handle)
            let expected = straight[(Int(target) * channels)...]
            results.append((target, rest.count / channels, expected.count / channels, rest == Array(expected)))
        }
        return results
    }

    static let opus: [(name: String, source: String, options: [String])] = [
        ("pink-96k.opus", "anoisesrc=d=6:c=pink:a=0.3", ["-ac", "2", "-c:a", "libopus", "-b:a", "96k"]),
        ("sweep-256k.opus", "aevalsrc=0.4*sin(2*PI*(200+300*t)*t)|0.3*sin(2*PI*(900-50*t)*t):d=6:s=48000", ["-c:a", "libopus", "-b:a", "256k"]),
        ("brown-voip-32k-mono.opus", "anoisesrc=d=6:c=brown:a=0.5", ["-ac", "1", "-c:a", "libopus", "-b:a", "32k", "-application", "voip"]),
        ("tremolo-60ms.opus", "aevalsrc=0.5*sin(2*PI*220*t)*sin(2*PI*3*t)|0.5*sin(2*PI*330*t):d=6:s=48000",
         ["-c:a", "libopus", "-b:a", "64k", "-frame_duration", "60"]),
    ]

    @Test("Opus: bit-identical to the straight decode after a seek to any frame", arguments: 0..<4)
    func opusBitExact(_ index: Int) throws {
        let file = Self.opus[index]
        let path = try Self.make(file.name, file.source, file.options)
        for result in try Self.seekResults(path, targets: 12) {
            #expect(result.frames == result.expected, "\(file.name) seek \(result.target)")
            #expect(result.identical, "\(file.name) seek \(result.target): samples differ")
        }
    }

    @Test("AAC without noise substitution (-aac_pns 0): bit-identical after a seek")
    func aacWithoutPNS() throws {
        let path = try Self.make("pink-nopns.m4a", "anoisesrc=d=6:c=pink:a=0.3", ["-ac", "2", "-c:a", "aac", "-b:a", "96k", "-aac_pns", "0"])
        for result in try Self.seekResults(path, targets: 12) {
            #expect(result.frames == result.expected && result.identical, "seek \(result.target)")
        }
    }

    @Test("AAC with noise substitution: the position and length stay exact; the noise bands are a new draw")
    func aacWithPNS() throws {
        let path = try Self.make("pink-pns.m4a", "anoisesrc=d=6:c=pink:a=0.3", ["-ac", "2", "-c:a", "aac", "-b:a", "64k", "-aac_pns", "1"])
        let results = try Self.seekResults(path, targets: 12)
        for result in results { #expect(result.frames == result.expected, "seek \(result.target)") }
        // The exception is real: on noise, PNS is used and some seeks differ.
        #expect(results.contains { !$0.identical })
    }
}

/// A small deterministic generator for seek targets.
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
