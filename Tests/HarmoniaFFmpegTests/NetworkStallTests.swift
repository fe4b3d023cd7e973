// A network source that stalls, through the real FFmpeg decoder and the
// playback service (specs/services.md §Buffering). The loopback server stops
// sending three quarters into the file. Note that FFmpeg's FLAC parser reads
// ahead of the frame it returns, so the stall is placed well after what a
// load decodes before returning.
import Foundation
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaTestSupport
import Testing

@Suite("Network stalls", .serialized) struct NetworkStallTests {
    static let file = "flac_s16_stereo_44k.flac"

    static func stallPoint() throws -> Int {
        let size = try FileManager.default.attributesOfItem(atPath: Fixtures.named(file).path)[.size] as! Int
        return size * 3 / 4
    }

    @Test("a stall: buffering when the output runs dry, then playing on, every frame heard once")
    func stallAndResume() throws {
        let server = try LoopbackHTTPServer(root: Fixtures.root + "/audio")
        defer { server.stop() }
        server.stall(Self.file, afterBytes: try Self.stallPoint())
        // A device's pace (real time), so the output runs dry while the server is silent.
        let output = NullAudioOutput(pace: .realTime(MonotonicClockAdapter()), periodFrames: 512)
        let service = DefaultPlaybackService(decoder: FFmpegDecoderAdapter(), output: output, clock: MonotonicClockAdapter())
        let log = EventLog(service)
        try service.load(url: server.url(Self.file))
        try service.play()
        server.waitUntilStalled()
        #expect(log.wait(forState: .buffering))
        let heardWhenStalled = output.framesPlayed
        #expect(heardWhenStalled > 0 && heardWhenStalled < 88_200)
        #expect(log.events.contains { if case .underrun = $0 { true } else { false } })
        server.release()
        #expect(log.wait(forState: .playing))
        #expect(log.wait(forState: .stopped))
        // Every frame of the file was heard exactly once: none lost in the
        // stall, none repeated after it.
        #expect(output.framesPlayed == 88_200)
        #expect(!log.events.contains { if case .error = $0 { true } else { false } })
    }

    @Test("a stall longer than the network timeout: ioError naming the URL, and the queue goes on")
    func stallTimesOut() throws {
        let server = try LoopbackHTTPServer(root: Fixtures.root + "/audio")
        defer { server.stop() }
        server.stall(Self.file, afterBytes: try Self.stallPoint())
        let service = DefaultPlaybackService(decoder: FFmpegDecoderAdapter(networkTimeout: 1),
                                             output: NullAudioOutput(pace: .asFastAsPossible), clock: MonotonicClockAdapter())
        let log = EventLog(service)
        let url = server.url(Self.file)
        service.enqueue([Track(url: url), Track(url: Fixtures.named("wav_s16_stereo_44k.wav").path)])
        try service.jump(to: 0)
        try service.play()
        #expect(log.wait {
            if case .error(let error, url) = $0 { error.category == .ioError && error.message.contains(url) } else { false }
        })
        #expect(log.wait { if case .trackStarted(1, _) = $0 { true } else { false } })
        #expect(log.wait(forState: .stopped))
        #expect(log.events.contains { if case .trackEnded(0, _, .failed) = $0 { true } else { false } })
    }
}
