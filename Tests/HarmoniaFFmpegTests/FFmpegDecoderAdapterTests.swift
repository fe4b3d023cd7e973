// FFmpegDecoderAdapter against the fixture corpus: specs/ports.md §DecoderPort.
import Foundation
import HarmoniaCore
@testable import HarmoniaFFmpeg
import HarmoniaTestSupport
import Testing

final class Weak<T: AnyObject> {
    weak var value: T?
    init(_ value: T?) { self.value = value }
}

@Suite("FFmpegDecoderAdapter: exact decode")
struct FFmpegDecodeTests {
    @Test("info reports the source's format and exact length", arguments: Fixtures.all)
    func info(fixture: Fixture) throws {
        let decoder = FFmpegDecoderAdapter()
        let handle = try decoder.open(url: fixture.path)
        defer { decoder.close(handle) }
        let info = try decoder.info(handle)
        #expect(info.sampleRate == Double(fixture.sampleRate))
        #expect(info.channels == fixture.channels)
        #expect(info.bitDepth == fixture.bitDepth)
        #expect(info.codec == fixture.codec)
        #expect(info.totalFrames == fixture.frames)
        #expect(info.duration == Double(fixture.frames) / Double(fixture.sampleRate))
        try info.validate()
    }

    @Test("a straight decode equals the ffmpeg command line's, bit for bit, to the exact frame count",
          arguments: Fixtures.all)
    func straightDecode(fixture: Fixture) throws {
        let ours = try decodeFile(fixture.path)
        let reference = try Fixtures.cliReference(fixture.path)
        let channels = fixture.channels
        #expect(ours.count == Int(fixture.frames) * channels, "frames: \(ours.count / channels), expected \(fixture.frames)")
        #expect(reference.count == Int(fixture.cliFrames) * channels)
        // The CLI keeps AAC's end padding in MP4 (cliFrames > frames): compare
        // the frames both have; the container's length is the truth (checked above).
        let start = Int(fixture.cliOffset) * channels
        let count = min(ours.count, reference.count - start)
        #expect(count == Int(fixture.frames) * channels)
        #expect(maxDifference(ours[0..<count], reference[start..<start + count]) == 0)
    }

    @Test("raw PCM in the format given (s16be mono, s24le stereo, s8): the ffmpeg command line's decode of the same bytes, bit for bit; a WAV given as raw PCM is read by its header")
    func rawPCM() throws {
        let wav = Fixtures.named("wav_s16_stereo_44k.wav").path
        let folder = NSTemporaryDirectory() + "harmonia-raw-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for (demuxer, rate, channels) in [("s16be", 22050, 1), ("s24le", 48000, 2), ("s8", 44100, 2)] {
            let raw = folder + "/tone.\(demuxer)"
            let made = try ProcessRunner.run("/usr/bin/env", ["ffmpeg", "-nostdin", "-v", "error", "-i", wav, "-ar", "\(rate)",
                                                              "-ac", "\(channels)", "-f", demuxer, raw])
            #expect(made.status == 0, "\(made.stderrText)")
            let reference = try ProcessRunner.run("/usr/bin/env", ["ffmpeg", "-nostdin", "-v", "error", "-f", demuxer, "-sample_rate",
                                                                   "\(rate)", "-ch_layout", "\(channels)c", "-i", raw, "-f", "f32le", "-"])
            let expected = reference.stdout.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
            let format = try #require(RawPCMFormat(bitsPerSample: demuxer == "s8" ? 8 : demuxer == "s16be" ? 16 : 24, sampleRate: rate,
                                                   channels: channels, bigEndian: demuxer.hasSuffix("be")))
            let decoder = FFmpegDecoderAdapter()
            let handle = try decoder.open(url: raw, rawPCM: format)
            defer { decoder.close(handle) }
            let info = try decoder.info(handle)
            #expect(info.sampleRate == Double(rate) && info.channels == channels, "\(demuxer): \(info.sampleRate) Hz, \(info.channels) ch")
            let ours = try decodeToEnd(decoder, handle)
            #expect(!expected.isEmpty && ours == expected, "\(demuxer): \(ours.count) samples against \(expected.count)")
        }
        // The fixture's own header wins over a wrong raw format (squeezelite's header check).
        let wrong = try #require(RawPCMFormat(bitsPerSample: 32, sampleRate: 8000, channels: 1, bigEndian: true))
        let decoder = FFmpegDecoderAdapter()
        let handle = try decoder.open(url: wav, rawPCM: wrong)
        defer { decoder.close(handle) }
        #expect(try decodeToEnd(decoder, handle) == Fixtures.cliReference(wav))
    }

    @Test("reading in odd chunk sizes delivers the same samples", arguments: [1, 7, 1000, 65536])
    func chunking(chunk: Int) throws {
        for name in ["mp3_cbr_stereo_44k.mp3", "flac_s16_51_48k.flac", "opus_stereo_48k.opus"] {
            let fixture = Fixtures.named(name)
            #expect(try decodeFile(fixture.path, chunk: chunk) == decodeFile(fixture.path), "\(name), chunk \(chunk)")
        }
    }

    @Test("the same source in WAV, ALAC and FLAC decodes to identical samples")
    func losslessAgainstSource() throws {
        // Every lossless fixture is the same chirp: decoding them is checked
        // against the CLI above; here two of them must agree with each other
        // where they share rate and channels (WAV vs FLAC vs ALAC at 44.1 kHz stereo).
        let wav = try decodeFile(Fixtures.named("wav_s16_stereo_44k.wav").path)
        let alac = try decodeFile(Fixtures.named("alac_stereo_44k.m4a").path)
        let flac = try decodeFile(Fixtures.named("flac_s16_stereo_44k.flac").path)
        #expect(wav == alac)
        #expect(Array(flac.prefix(wav.count)) == wav)
    }

    @Test("the steady decode loop reuses its converter and output buffer")
    func reusesBuffers() throws {
        for fixture in Fixtures.all {
            let session = try FFmpegDecodeSession(url: fixture.path, logger: NoopLoggerAdapter())
            defer { session.close() }
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 4096 * fixture.channels)
            defer { buffer.deallocate() }
            while try session.read(into: buffer, maxFrames: 4096) > 0 {}
            #expect(session.converterConfigurations == 1, "\(fixture): converter set up \(session.converterConfigurations) times")
            #expect(session.outputBufferGrowths <= 1, "\(fixture): output buffer grew \(session.outputBufferGrowths) times")
        }
    }
}

@Suite("FFmpegDecoderAdapter: sample-accurate seek")
struct FFmpegSeekTests {
    /// After seek(f), the next frames equal the straight decode from f.
    @Test("seek lands on the exact frame with the straight decode's samples", arguments: Fixtures.all)
    func seekMatchesStraightDecode(fixture: Fixture) throws {
        let channels = fixture.channels
        let straight = try decodeFile(fixture.path)
        let n = fixture.frames
        let targets: [Int64] = [0, 1, 1000, n / 3, n / 2 + 7, n - 1000, n - 1, n]
        let decoder = FFmpegDecoderAdapter()
        let handle = try decoder.open(url: fixture.path)
        defer { decoder.close(handle) }
        // Out of order on one handle: forward, backward, to the end and back.
        for target in [targets[3], targets[1], targets[7], targets[0], targets[5], targets[2], targets[6], targets[4]] {
            try decoder.seek(handle, toFrame: target)
            #expect(try decoder.position(handle) == target)
            let rest = try decodeToEnd(decoder, handle)
            let expected = straight[(Int(target) * channels)...]
            #expect(rest.count == expected.count, "\(fixture) seek \(target): \(rest.count / channels) frames, expected \(expected.count / channels)")
            // Bit-identical: no fixture uses AAC noise substitution (specs/ports.md §DecoderPort (Exact seek)).
            #expect(rest == Array(expected), "\(fixture) seek \(target): max error \(rest.count == expected.count ? maxDifference(rest[...], expected) : .nan)")
            #expect(try decoder.position(handle) == n)
        }
    }

    @Test("seek after partial reads, and seek(toSeconds:) rounds to the nearest frame")
    func seekMidRead() throws {
        let fixture = Fixtures.named("vorbis_stereo_44k.ogg")
        let straight = try decodeFile(fixture.path)
        let decoder = FFmpegDecoderAdapter()
        let handle = try decoder.open(url: fixture.path)
        defer { decoder.close(handle) }
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 2 * 2048)
        defer { buffer.deallocate() }
        _ = try decoder.read(handle, into: buffer, maxFrames: 2048)
        #expect(try decoder.position(handle) == 2048)
        try decoder.seek(handle, toSeconds: 0.5)  // 22050
        #expect(try decoder.position(handle) == 22050)
        let got = try decoder.read(handle, into: buffer, maxFrames: 2048)
        #expect(got == 2048)
        #expect(Array(UnsafeBufferPointer(start: buffer, count: 4096)) == Array(straight[44100..<44100 + 4096]))
        try decoder.seek(handle, toSeconds: 1.00001)  // 44100.44 → 44100
        #expect(try decoder.position(handle) == 44100)
    }

    @Test("seeks outside the stream throw invalidArgument and change nothing")
    func seekOutOfRange() throws {
        let fixture = Fixtures.named("flac_s16_stereo_44k.flac")
        let decoder = FFmpegDecoderAdapter()
        let handle = try decoder.open(url: fixture.path)
        defer { decoder.close(handle) }
        #expect(coreError { try decoder.seek(handle, toFrame: -1) }?.category == .invalidArgument)
        #expect(coreError { try decoder.seek(handle, toFrame: fixture.frames + 1) }?.category == .invalidArgument)
        #expect(coreError { try decoder.seek(handle, toSeconds: -0.5) }?.category == .invalidArgument)
        #expect(coreError { try decoder.seek(handle, toSeconds: .nan) }?.category == .invalidArgument)
        #expect(coreError { try decoder.seek(handle, toSeconds: 2.5) }?.message.contains("past the end") == true)
        #expect(try decoder.position(handle) == 0)
        #expect(try decodeToEnd(decoder, handle).count == Int(fixture.frames) * 2)
    }
}

@Suite("FFmpegDecoderAdapter: handles, errors, sources")
struct FFmpegDecoderLifecycleTests {
    @Test("close is idempotent, use after close is invalidState, no session outlives close")
    func lifecycle() throws {
        let decoder = FFmpegDecoderAdapter()
        var handles: [DecodeHandle] = []
        var sessions: [Weak<FFmpegDecodeSession>] = []
        for fixture in Fixtures.all {
            let handle = try decoder.open(url: fixture.path)
            handles.append(handle)
            sessions.append(Weak(decoder.sessionForTesting(handle)))
        }
        let strong = sessions.compactMap(\.value)  // kept alive to inspect after close
        #expect(strong.count == Fixtures.all.count && strong.allSatisfy { !$0.isClosed })
        #expect(decoder.openSessionCount == Fixtures.all.count)
        #expect(Set(handles).count == handles.count)
        for handle in handles {
            decoder.close(handle)
            decoder.close(handle)
        }
        #expect(decoder.openSessionCount == 0)
        #expect(strong.allSatisfy { $0.isClosed }, "close() left FFmpeg objects allocated")
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: 64)
        defer { buffer.deallocate() }
        #expect(coreError { _ = try decoder.read(handles[0], into: buffer, maxFrames: 1) }?.category == .invalidState)
        #expect(coreError { _ = try decoder.info(handles[0]) }?.category == .invalidState)
        #expect(coreError { try decoder.seek(handles[0], toFrame: 0) }?.category == .invalidState)
        #expect(coreError { _ = try decoder.position(handles[0]) }?.category == .invalidState)
    }

    @Test("closed sessions are released, not kept by the adapter")
    func released() throws {
        let decoder = FFmpegDecoderAdapter()
        var weak = Weak<FFmpegDecodeSession>(nil)
        do {
            let handle = try decoder.open(url: Fixtures.named("opus_stereo_48k.opus").path)
            weak = Weak(decoder.sessionForTesting(handle))
            #expect(weak.value != nil)
            decoder.close(handle)
        }
        #expect(weak.value == nil)
    }

    @Test("missing files, directories and empty URLs get their categories")
    func openErrors() {
        let decoder = FFmpegDecoderAdapter()
        let missing = Fixtures.root + "/audio/no-such-file.flac"
        let notFound = coreError { _ = try decoder.open(url: missing) }
        #expect(notFound?.category == .notFound)
        #expect(notFound?.message.contains(missing) == true)
        #expect(coreError { _ = try decoder.open(url: "file://" + missing) }?.category == .notFound)
        #expect(coreError { _ = try decoder.open(url: Fixtures.root) }?.category == .unsupported)
        #expect(coreError { _ = try decoder.open(url: "") }?.category == .invalidArgument)
        #expect(decoder.openSessionCount == 0)
    }

    @Test("file:// URLs with escapes open the same file")
    func fileURL() throws {
        let fixture = Fixtures.named("wav_s16_stereo_44k.wav")
        let escaped = "file://" + fixture.path.replacingOccurrences(of: "_", with: "%5F")
        #expect(try decodeFile(escaped) == decodeFile(fixture.path))
    }

    @Test("http sources decode like the local file; 404 is notFound; a refused connection is ioError")
    func http() throws {
        let server = try LoopbackHTTPServer(root: Fixtures.root + "/audio")
        defer { server.stop() }
        for name in ["flac_s16_stereo_44k.flac", "mp3_cbr_stereo_44k.mp3", "opus_stereo_48k.opus"] {
            let fixture = Fixtures.named(name)
            #expect(try decodeFile(server.url(name)) == decodeFile(fixture.path), "\(name) over http")
        }
        let missing = coreError { _ = try FFmpegDecoderAdapter().open(url: server.url("missing.flac")) }
        #expect(missing?.category == .notFound)
        #expect(missing?.message.contains("missing.flac") == true)
        // Port 9 (discard) on loopback: nothing listens there.
        #expect(coreError { _ = try FFmpegDecoderAdapter().open(url: "http://127.0.0.1:9/x.mp3") }?.category == .ioError)
    }

    @Test("open never crashes on any byte prefix of a valid file")
    func prefixes() {
        // Truncation at every 10 %: each either opens (and then reads to the
        // end or throws decodeError) or throws a CoreError at open.
        let fixture = Fixtures.named("mp3_cbr_stereo_44k.mp3")
        let data = FileManager.default.contents(atPath: fixture.path)!
        let path = NSTemporaryDirectory() + "harmonia-prefix-\(getpid()).mp3"
        defer { try? FileManager.default.removeItem(atPath: path) }
        for tenth in 0..<10 {
            #expect(FileManager.default.createFile(atPath: path, contents: data.prefix(data.count * tenth / 10)))
            let error = coreError { _ = try decodeFile(path) }
            #expect(error != nil, "a \(tenth * 10) % prefix decoded without complaint")
            #expect(error?.category == (tenth == 0 ? .unsupported : .decodeError), "\(tenth * 10) %: \(String(describing: error))")
        }
    }
}
