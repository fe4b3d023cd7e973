// PulseAudioOutputAdapter against a real sound server — PulseAudio, and
// PipeWire through pipewire-pulse: specs/realtime.md §PulseAudioOutputAdapter.
// `make test` starts a private server of each kind in turn; a recording
// sink records exactly what the sink played, compared with the decode.
import Foundation
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaPulseAudio
import HarmoniaTestSupport
import Testing

/// Decodes a fixture completely.
func decodeAll(_ name: String) throws -> (samples: [Float], info: StreamInfo) {
    let decoder = FFmpegDecoderAdapter()
    let handle = try decoder.open(url: Fixtures.named(name).path)
    defer { decoder.close(handle) }
    let info = try decoder.info(handle)
    var samples = [Float](repeating: 0, count: Int(info.totalFrames!) * info.channels)
    let frames = try samples.withUnsafeMutableBufferPointer { try decoder.read(handle, into: $0.baseAddress!, maxFrames: Int(info.totalFrames!)) }
    #expect(frames == Int(info.totalFrames!))
    return (samples, info)
}

func pulseOptions(device: String? = nil, latency: Double = 0.05) -> PulseAudioOutputAdapter.Options {
    PulseAudioOutputAdapter.Options(latency: latency, device: device, server: PulseTestServer.address, ringFrames: 1 << 18)
}

/// Every test that talks to the private server, one at a time: one of them
/// kills and restarts the server, another switches its default sink.
@Suite("PulseAudio", .serialized, .enabled(if: PulseTestServer.directory != nil, "needs the private PulseAudio server 'make test' starts"))
struct PulseAudioTests {}

extension PulseAudioTests {
@Suite("PulseAudioOutputAdapter")
struct PulseAudioOutputAdapterTests {
    @Test("no server reachable: ioError saying how to start one or choose another output")
    func noServer() {
        let output = PulseAudioOutputAdapter(options: .init(server: "unix:/nonexistent/harmonia/native"))
        do {
            try output.configure(sampleRate: 44100, channels: 2)
            Issue.record("configure succeeded without a server")
        } catch {
            #expect(error.category == .ioError)
            #expect(error.message.contains("pulseaudio --start"))
            #expect(error.message.contains("--output null"))
        }
    }

    @Test("an unknown sink name is notFound")
    func unknownSink() {
        let output = PulseAudioOutputAdapter(options: pulseOptions(device: "no_such_sink"))
        #expect(throws: CoreError.self) { try output.configure(sampleRate: 44100, channels: 2) }
        do { try output.configure(sampleRate: 44100, channels: 2) } catch { #expect(error.category == .notFound) }
    }

    /// Plays `name` through a recording sink at its own rate and checks the sink
    /// played exactly the decoded samples.
    func playsBitExact(_ name: String, channelMap: String? = nil) throws {
        let (samples, info) = try decodeAll(name)
        let recorder = try SinkRecorder(rate: Int(info.sampleRate), channels: info.channels, channelMap: channelMap)
        let output = PulseAudioOutputAdapter(options: pulseOptions(device: recorder.sinkName))
        try output.configure(sampleRate: info.sampleRate, channels: info.channels)
        let frames = samples.count / info.channels
        #expect(output.write(samples, frameCount: frames) == frames)   // the ring holds it all
        try output.start()
        output.drain()
        let played = output.framesPlayed
        output.stop()
        let recording = try recorder.finish()
        if let dump = ProcessInfo.processInfo.environment["HARMONIA_DUMP"] {
            try recording.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: dump + "/\(name).rec")) }
            try samples.withUnsafeBytes { try Data($0).write(to: URL(fileURLWithPath: dump + "/\(name).src")) }
        }
        let loud = recording.lazy.filter { $0 != 0 }.count
        print("[\(name)] played \(played) of \(frames) frames; recorded \(recording.count / info.channels) frames, \(loud) non-zero samples; underruns \(output.underrunCount)")
        #expect(played >= Int64(frames) - 1)
        let offset = SinkRecorder.offset(of: samples, in: recording, channels: info.channels)
        #expect(offset != nil, "the decoded samples must appear in the recording")
        guard let offset else { return }
        let start = offset * info.channels
        #expect(start + samples.count <= recording.count)
        let exact = start + samples.count <= recording.count && recording[start..<(start + samples.count)].elementsEqual(samples)
        #expect(exact, "the sink must play exactly the decoded samples")
    }

    @Test("stereo at 44.1 kHz: the sink plays exactly the decoded samples")
    func stereoBitExact() throws {
        try playsBitExact("flac_s16_stereo_44k.flac")
    }

    @Test("a rate and channel change between tracks: the same output opens a new stream; both tracks exact")
    func formatChange() throws {
        let (stereo, stereoInfo) = try decodeAll("wav_s16_stereo_44k.wav")
        let (surround, surroundInfo) = try decodeAll("flac_s16_51_48k.flac")
        let first = try SinkRecorder(rate: 44100, channels: 2)
        let second = try SinkRecorder(rate: 48000, channels: 6,
                                          channelMap: "front-left,front-right,front-center,lfe,rear-left,rear-right")
        defer { _ = try? PulseTestServer.pactl(["set-default-sink", "harmonia_null"]) }
        // One output on the default sink; each track's stream lands on the
        // sink that is the default when it opens, so each is recorded alone.
        let output = PulseAudioOutputAdapter(options: pulseOptions())
        try PulseTestServer.pactl(["set-default-sink", first.sinkName])
        try output.configure(sampleRate: stereoInfo.sampleRate, channels: 2)
        #expect(output.write(stereo, frameCount: stereo.count / 2) == stereo.count / 2)
        try output.start()
        output.drain()
        #expect(output.framesPlayed == Int64(stereo.count / 2))
        try PulseTestServer.pactl(["set-default-sink", second.sinkName])
        try output.configure(sampleRate: surroundInfo.sampleRate, channels: 6)   // a new stream, new format
        #expect(output.framesPlayed == 0)
        #expect(output.write(surround, frameCount: surround.count / 6) == surround.count / 6)
        try output.start()
        output.drain()
        #expect(output.framesPlayed == Int64(surround.count / 6))
        output.stop()
        let a = try first.finish(), b = try second.finish()
        let offsetA = SinkRecorder.offset(of: stereo, in: a, channels: 2)
        let offsetB = SinkRecorder.offset(of: surround, in: b, channels: 6)
        #expect(offsetA.map { a[($0 * 2)...].starts(with: stereo) } == true, "the first track, exact")
        #expect(offsetB.map { b[($0 * 6)...].starts(with: surround) } == true, "the second track, exact")
        #expect(output.underrunCount == 0)
    }

    @Test("5.1 at 48 kHz: every channel where it belongs, bit-exact")
    func surroundBitExact() throws {
        try playsBitExact("flac_s16_51_48k.flac", channelMap: "front-left,front-right,front-center,lfe,rear-left,rear-right")
    }
}
}

@Suite("PulseAudioOutputAdapter: PipeWire's graph delay from node.latency")
struct PulseGraphDelayTests {
    @Test("one graph cycle, capped at PipeWire's default largest quantum; anything malformed is 0")
    func parsing() {
        #expect(PulseAudioOutputAdapter.graphDelay(nodeLatency: "600/48000", sampleRate: 48000) == 600)
        #expect(PulseAudioOutputAdapter.graphDelay(nodeLatency: "1024/48000", sampleRate: 44100) == 941)
        #expect(PulseAudioOutputAdapter.graphDelay(nodeLatency: "8192/48000", sampleRate: 48000) == 2048)
        for bad in [nil, "", "x", "600", "600/0", "-5/48000", "1e400/48000", "nan/48000", "600/48000/1", "600/10"] {
            #expect(PulseAudioOutputAdapter.graphDelay(nodeLatency: bad, sampleRate: 48000) == 0, "\(bad ?? "nil")")
        }
        #expect(PulseAudioOutputAdapter.graphDelay(nodeLatency: "600/48000", sampleRate: 0) == 0)
    }
}
