// harmonia-play info and decode, run as a user runs them: the built binary.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play info / decode")
struct HarmoniaPlayInfoTests {
    private func json(_ line: Substring) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
    }

    @Test("info --json prints one object per input with tags, artworkBytes and stream facts")
    func infoJSON() throws {
        let flac = Fixtures.named("flac_s16_stereo_44k.flac"), opus = Fixtures.named("opus_stereo_48k.opus")
        let result = try ProcessRunner.harmoniaPlay(["info", "--json", flac.path, opus.path])
        #expect(result.status == 0)
        #expect(result.stderrText.isEmpty)
        let lines = result.stdoutText.split(separator: "\n")
        #expect(lines.count == 2)
        let first = try json(lines[0])
        #expect(first["url"] as? String == flac.path)
        #expect(first["title"] as? String == "Harmonia Test Title")
        #expect(first["trackNumber"] as? Int == 3)
        #expect(first["trackTotal"] as? Int == 12)
        #expect(first["replayGainTrack"] as? Double == -6.5)
        #expect(first["artworkBytes"] as? Int == Fixtures.manifest.artwork.bytes)
        #expect(first["artworkData"] == nil)
        #expect(first["sampleRate"] as? Double == 44100)
        #expect(first["channels"] as? Int == 2)
        #expect(first["bitDepth"] as? Int == 16)
        #expect(first["totalFrames"] as? Int == 88200)
        #expect(first["duration"] as? Double == 2.0)
        #expect(first["codec"] as? String == "flac")
        let second = try json(lines[1])
        #expect(second["replayGainTrack"] as? Double == -2.0)  // from R128_TRACK_GAIN
        #expect(second["sampleRate"] as? Double == 48000)
        // Untagged files carry no tag keys at all (nil is absent, never "").
        let plain = try json(try ProcessRunner.harmoniaPlay(["info", "--json", Fixtures.named("wav_s16_stereo_44k.wav").path])
            .stdoutText.split(separator: "\n")[0])
        #expect(plain["title"] == nil && plain["artist"] == nil)
    }

    @Test("a bad input is reported on stderr as 'harmonia-play: PATH: CATEGORY: message'; the rest print; exit 1")
    func badInput() throws {
        let good = Fixtures.named("mp3_cbr_stereo_44k.mp3").path
        let missing = Fixtures.root + "/audio/missing.mp3"
        let text = Fixtures.root + "/bad/text.mp3"
        let result = try ProcessRunner.harmoniaPlay(["info", "--json", missing, good, text])
        #expect(result.status == 1)
        #expect(result.stdoutText.split(separator: "\n").count == 1)
        let errors = result.stderrText.split(separator: "\n")
        #expect(errors.count == 2)
        #expect(errors.first?.hasPrefix("harmonia-play: \(missing): notFound: ") == true)
        #expect(errors.last?.hasPrefix("harmonia-play: \(text): unsupported: ") == true)
    }

    @Test("--jobs reads files on several threads; the output is the one-thread output, in input order, errors included")
    func jobsKeepOrder() throws {
        let folder = Fixtures.root + "/audio"
        let missing = "/nonexistent/harmonia-missing.flac"
        let one = try ProcessRunner.harmoniaPlay(["info", "--json", "--jobs", "1", folder, missing, folder])
        let many = try ProcessRunner.harmoniaPlay(["info", "--json", "--jobs", "4", folder, missing, folder])
        #expect(one.status == 1 && many.status == 1)
        #expect(one.stdoutText.split(separator: "\n").count > 20)
        #expect(many.stdoutText == one.stdoutText)
        #expect(many.stderrText == one.stderrText)
        #expect(try ProcessRunner.harmoniaPlay(["info", "--jobs", "0", folder]).status == 2)
    }

    @Test("usage errors exit 2; --help exits 0")
    func usage() throws {
        #expect(try ProcessRunner.harmoniaPlay(["info"]).status == 2)
        #expect(try ProcessRunner.harmoniaPlay(["info", "--bogus", "x"]).status == 2)
        #expect(try ProcessRunner.harmoniaPlay(["--no-such-option", "x"]).status == 2)
        let help = try ProcessRunner.harmoniaPlay(["info", "--help"])
        #expect(help.status == 0)
        #expect(help.stdoutText.contains("--json"))
    }

    @Test("info without --json prints a readable block")
    func readable() throws {
        let result = try ProcessRunner.harmoniaPlay(["info", Fixtures.named("mp3_cbr_stereo_44k.mp3").path])
        #expect(result.status == 0)
        #expect(result.stdoutText.contains("Title:        Harmonia Test Title"))
        #expect(result.stdoutText.contains("Track:        3/12"))
        #expect(result.stdoutText.contains("Duration:     0:02.000 (88200 frames)"))
        #expect(result.stdoutText.contains("mp3, 44100 Hz, 2 ch"))
    }

    @Test("decode writes the exact PCM the ffmpeg command line decodes")
    func decode() throws {
        let fixture = Fixtures.named("vorbis_stereo_44k.ogg")
        let out = NSTemporaryDirectory() + "harmonia-decode-\(getpid()).f32"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let result = try ProcessRunner.harmoniaPlay(["decode", fixture.path, "-o", out])
        #expect(result.status == 0)
        let ours = try Data(contentsOf: URL(fileURLWithPath: out))
        let reference = try Fixtures.cliReference(fixture.path)
        #expect(ours == reference.withUnsafeBytes { Data($0) })
    }
}
