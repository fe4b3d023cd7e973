// A library scan must not disturb playback (issue 22): `harmonia-play serve`
// plays through the private sound server while it scans 1,200 files.
import Foundation
import HarmoniaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

extension PulseAudioTests {
@Suite("serve: scanning while playing")
struct ServeScanPlaybackTests {
    @Test("a 1,200-file scan on 2 cores during playback: no underrun, playback goes on")
    func scanWhilePlaying() throws {
        let dir = NSTemporaryDirectory() + "hp-scanplay-\(getpid())-\(UUID().uuidString.prefix(8))"
        let music = dir + "/music"
        try FileManager.default.createDirectory(atPath: music + "/long", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // 30 s of a tone: longer than the scan takes.
        let made = try ProcessRunner.run("/usr/bin/ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=30",
                                                             "-ac", "2", music + "/long/tone.flac"])
        #expect(made.status == 0, "\(made.stderrText)")
        let socket = dir + "/control.sock"
        let server = try ServeProcess(music: music, folder: dir, extra: ["--output", "pulse", "--control", "unix:" + socket],
                                      environment: PulseTestServer.clientEnvironment)
        defer { server.stop() }
        try server.waitForLibrary(songs: 1)
        let events = try UnixLineClient(path: socket)
        let client = try server.client()
        _ = try client.command("add \"long/tone.flac\"")
        _ = try client.command("play")
        #expect(events.lines.take(timeout: 20) { $0.contains("\"state\":\"playing\"") } != nil)

        // 1,200 new files (links to one short fixture), then MPD's update.
        let source = Fixtures.named("flac_s16_stereo_44k.flac").path
        for folder in 0..<60 {
            try FileManager.default.createDirectory(atPath: music + "/album \(folder)", withIntermediateDirectories: true)
            for track in 0..<20 { try FileManager.default.linkItem(atPath: source, toPath: music + "/album \(folder)/\(track).flac") }
        }
        #expect(try client.command("update").first?.hasPrefix("updating_db: ") == true)
        try server.waitForLibrary(songs: 1201)
        let status = try client.fields("status")
        #expect(status["state"] == "play", "\(status)")
        let underruns = events.lines.all.filter { $0.contains("\"event\":\"underrun\"") }
        #expect(underruns.isEmpty, "\(underruns.count) underruns during the scan on \(PulseTestServer.name)")
        events.close()
    }
}
}
