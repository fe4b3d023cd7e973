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
    /// What one run saw: underrun events before the scan began and while it
    /// ran, and the late graph cycles PipeWire logged meanwhile.
    struct Run: CustomStringConvertible {
        var underrunsBeforeScan = 0
        var underrunsDuringScan = 0
        var graphLateCycles = 0
        var scanSeconds = 0.0
        var underruns: Int { underrunsBeforeScan + underrunsDuringScan }
        var description: String {
            "\(underrunsBeforeScan) underrun(s) before the scan, \(underrunsDuringScan) during its \(String(format: "%.2f", scanSeconds)) s; "
                + "\(graphLateCycles) late graph cycle(s) logged by \(PulseTestServer.name)"
        }
    }

    /// A scan that starves playback does so on every run. A single underrun
    /// in one run can come from outside the process on a shared 2-core
    /// machine (in one CI run: one underrun, not reproduced in dozens of
    /// runs here), so a run with one is reported and followed by two more,
    /// and both must be clean. What is judged is the scan's time: an
    /// underrun before it (a stream's first second on a PipeWire just
    /// started: 1 in 2 of 3 runs of one CI run, none in 9 runs here) is
    /// reported, and is the other tests' to judge; the scan starts once
    /// a second has been heard. The 1,200 files are linked before playback
    /// starts, so the test's own burst of file system work does not fall in
    /// either window.
    @Test("a 1,200-file scan on 2 cores during playback: no underrun, playback goes on")
    func scanWhilePlaying() throws {
        let first = try run()
        print("[scan while playing] run 1: \(first)")
        if first.underrunsDuringScan == 0 { return }
        for attempt in 2...3 {
            let again = try run()
            print("[scan while playing] run \(attempt): \(again)")
            #expect(again.underrunsDuringScan == 0, "run \(attempt) after an underrun in run 1: \(again)")
        }
    }

    private func run() throws -> Run {
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
        defer { events.close() }
        let client = try server.client()
        // 1,200 new files (links to one short fixture), found by MPD's
        // update once playback runs (serve does not watch the folder).
        let source = Fixtures.named("flac_s16_stereo_44k.flac").path
        for folder in 0..<60 {
            try FileManager.default.createDirectory(atPath: music + "/album \(folder)", withIntermediateDirectories: true)
            for track in 0..<20 { try FileManager.default.linkItem(atPath: source, toPath: music + "/album \(folder)/\(track).flac") }
        }
        _ = try client.command("add \"long/tone.flac\"")
        _ = try client.command("play")
        #expect(events.lines.take(timeout: 20) { $0.contains("\"state\":\"playing\"") } != nil)
        // The stream's first second (a new stream's start on a PipeWire just
        // started can underrun) is before the scan: a position event at 1 s.
        let settled = events.lines.take(timeout: 20) { line in
            guard line.contains("\"event\":\"position\""),
                  let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let data = object["data"] as? [String: Any], let position = data["position"] as? Double else { return false }
            return position >= 1
        }
        #expect(settled != nil, "no position event at 1 s or later")
        func underruns() -> Int { events.lines.all.filter { $0.contains("\"event\":\"underrun\"") }.count }
        var result = Run()
        result.underrunsBeforeScan = underruns()
        let lateAtStart = PulseTestServer.graphLateCycleLines()
        let started = Date()
        #expect(try client.command("update").first?.hasPrefix("updating_db: ") == true)
        try server.waitForLibrary(songs: 1201)
        result.scanSeconds = Date().timeIntervalSince(started)
        let status = try client.fields("status")
        #expect(status["state"] == "play", "\(status)")
        result.underrunsDuringScan = underruns() - result.underrunsBeforeScan
        result.graphLateCycles = PulseTestServer.graphLateCycleLines() - lateAtStart
        return result
    }
}
}
