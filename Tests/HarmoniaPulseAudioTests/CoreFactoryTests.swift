// CoreFactory wires the real adapters: a file played through a factory-made
// service equals the decoder's own decode; through PulseAudio it plays and
// its heard position advances.
import Foundation
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaLinux
import HarmoniaPulseAudio
import HarmoniaTestSupport
import Testing

extension PulseAudioTests {
@Suite("CoreFactory")
struct CoreFactoryTests {
    @Test("file output: the default decoder and tag reader, the whole file, exact")
    func fileOutput() throws {
        let fixture = Fixtures.named("flac_s16_stereo_44k.flac")
        let path = NSTemporaryDirectory() + "harmonia-factory-\(UUID().uuidString).f32"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let service = CoreFactory(output: .file(path: path), logger: NoopLoggerAdapter()).makePlaybackService()
        let log = EventLog(service)
        try service.load(url: fixture.path)
        #expect(service.currentTrack?.title != nil || service.currentTrack?.duration != nil)
        try service.play()
        #expect(log.wait(forState: .stopped))
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let played = data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let reference = try Fixtures.cliReference(fixture.path)
        #expect(played.count == reference.count)
        #expect(zip(played, reference).allSatisfy { abs($0 - $1) <= 1e-6 })
    }

    @Test("PulseAudio output: plays, the heard position advances, stop releases")
    func pulseOutput() throws {
        let fixture = Fixtures.named("flac_s16_stereo_44k.flac")
        var options = PulseAudioOutputAdapter.Options()
        options.server = PulseTestServer.address
        let service = CoreFactory(output: .pulseAudio(options), configuration: PlaybackConfiguration(positionInterval: 0.05),
                                  logger: NoopLoggerAdapter()).makePlaybackService()
        let log = EventLog(service)
        try service.load(url: fixture.path)
        try service.play()
        #expect(log.wait { if case .position(let seconds, _) = $0 { seconds >= 0.2 } else { false } })
        #expect(service.currentTime() >= 0.2)
        #expect(service.state == .playing)
        service.stop()
        #expect(service.currentTime() == 0)
    }

    @Test("the tag reader service builds tracks from the real tags")
    func tagReaderService() throws {
        let fixture = Fixtures.named("flac_s16_stereo_44k.flac")
        let tracks = CoreFactory(output: .null, logger: NoopLoggerAdapter()).makeTagReaderService()
        let track = try tracks.track(for: fixture.path)
        let tags = try FFmpegTagReaderAdapter().read(url: fixture.path)
        #expect(track.title == tags.title && track.artist == tags.artist && track.album == tags.album)
        #expect(track.duration == tags.duration)
        #expect(throws: CoreError.self) { try tracks.track(for: "/nonexistent/file.flac") }
    }
}
}
