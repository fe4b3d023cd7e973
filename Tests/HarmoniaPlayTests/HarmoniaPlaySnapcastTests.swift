// harmonia-play --output snapcast:// against Debian's real snapserver 0.26,
// recording exactly what it serves (Tests/Snapcast/snapcast_recorder.py) and
// what a real snapclient room plays. specs/snapcast.md §Verification
import Foundation
import HarmoniaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite(.serialized, .enabled(if: SnapcastTestServer.available, "needs snapserver and snapclient (make deps)"))
struct HarmoniaPlaySnapcastTests {
    /// A 48 kHz 16-bit stereo WAV of `seconds` × the 5.1 fixture's front
    /// pair (the chirp), made by the ffmpeg command line into `folder`.
    static func wav48k(in folder: String, name: String, repeats: Int = 1, trim: (Int, Int)? = nil) throws -> String {
        let path = folder + "/" + name
        var arguments = ["-nostdin", "-v", "error", "-y", "-stream_loop", String(repeats - 1),
                         "-i", Fixtures.root + "/audio/flac_s16_51_48k.flac", "-af",
                         "pan=stereo|c0=c0|c1=c1" + (trim.map { ",atrim=start_sample=\($0.0):end_sample=\($0.1)" } ?? ""),
                         "-c:a", "pcm_s16le", path]
        if repeats == 1 { arguments.removeSubrange(4...5) }
        let result = try ProcessRunner.run("/usr/bin/env", ["ffmpeg"] + arguments)
        guard result.status == 0 else { throw FixtureError("ffmpeg: \(result.stderrText)") }
        return path
    }

    /// What the ffmpeg command line decodes `path` to, s16 interleaved stereo.
    static func cliS16(_ path: String) throws -> [Int16] {
        let result = try ProcessRunner.run("/usr/bin/env", ["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-f", "s16le", "-"])
        guard result.status == 0 else { throw FixtureError("ffmpeg: \(result.stderrText)") }
        return result.stdout.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// The first and last frames that are not silent.
    static func audibleSpan(_ samples: [Int16]) -> (first: Int, last: Int)? {
        let frames = samples.count / 2
        guard let first = (0..<frames).first(where: { samples[2 * $0] != 0 || samples[2 * $0 + 1] != 0 }),
              let last = (0..<frames).reversed().first(where: { samples[2 * $0] != 0 || samples[2 * $0 + 1] != 0 }) else { return nil }
        return (first, last)
    }

    /// Where `reference` sits in `recording` (aligned on the first audible
    /// frame), and whether it is there sample for sample with silence around.
    static func findExact(_ reference: [Int16], in recording: [Int16]) -> (offset: Int, exact: Bool, mismatches: Int) {
        guard let ref = audibleSpan(reference), let rec = audibleSpan(recording) else { return (-1, false, -1) }
        let offset = rec.first - ref.first
        guard offset >= 0, offset * 2 + reference.count <= recording.count else { return (offset, false, -1) }
        var mismatches = 0
        for i in 0..<reference.count where recording[offset * 2 + i] != reference[i] { mismatches += 1 }
        let outside = recording[..<(offset * 2)].allSatisfy { $0 == 0 }
            && recording[(offset * 2 + reference.count)...].allSatisfy { $0 == 0 }
        return (offset, mismatches == 0 && outside, mismatches)
    }

    static func folder() throws -> String {
        let folder = NSTemporaryDirectory() + "harmonia-snapcast-test-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        return folder
    }

    static func monotonic() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    @Test("a 48 kHz 16-bit file arrives bit-exact; two real snapclient rooms play it")
    func bitExact() throws {
        let server = try SnapcastTestServer()
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let wav = try Self.wav48k(in: folder, name: "chirp48.wav")
        let reference = try Self.cliS16(wav)
        let recorder = try server.recorder()
        let rooms = [try server.room(), try server.room()]
        let player = try LineProcess.harmoniaPlay(["--quiet", "--output", server.outputURL, wav])
        #expect(player.waitForExit(timeout: 20) == 0, "\(player.stderr.all)")
        let roomFramesAtEnd = rooms.map(\.frames)
        // What follows the end on the wire: a quarter second of silence.
        let served = recorder.samples().count / 2
        recorder.waitForServed(frames: served + 12000, timeout: 5)
        let found = Self.findExact(reference, in: recorder.samples())
        #expect(found.exact, "served: offset \(found.offset), \(found.mismatches) samples differ")
        // The room plays a buffer later; its own sync may insert or drop a frame,
        // so look for ten 10 ms stretches of the file, each exact somewhere.
        for (index, room) in rooms.enumerated() {
            room.waitForPlayed(frames: roomFramesAtEnd[index] + 96000, timeout: 10)
            let played = room.samples
            var stretches = 0
            for k in 0..<10 {
                let start = 2 * (2000 + k * 4500)
                let window = Array(reference[start..<(start + 960)])
                let limit = played.count - window.count
                var i = 0
                while i <= limit {
                    if played[i] == window[0] && played[i + 1] == window[1] && Array(played[i..<(i + window.count)]) == window { stretches += 1; break }
                    i += 2
                }
            }
            #expect(stretches >= 8, "room \(index + 1) played \(stretches) of 10 stretches exactly (\(played.count / 2) frames)")
            print("snapcast bit-exact: served offset \(found.offset) frames, exact \(found.exact); room \(index + 1): \(stretches)/10 stretches exact")
        }
    }

    @Test("two queued tracks join with no gap and no overlap")
    func gaplessJoin() throws {
        let server = try SnapcastTestServer()
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let whole = try Self.wav48k(in: folder, name: "whole.wav")
        let first = try Self.wav48k(in: folder, name: "part1.wav", trim: (0, 30011))
        let second = try Self.wav48k(in: folder, name: "part2.wav", trim: (30011, 48000))
        let reference = try Self.cliS16(whole)
        #expect(try Self.cliS16(first).count + Self.cliS16(second).count == reference.count)
        let recorder = try server.recorder()
        let player = try LineProcess.harmoniaPlay(["--quiet", "--output", server.outputURL, first, second])
        #expect(player.waitForExit(timeout: 20) == 0, "\(player.stderr.all)")
        recorder.waitForServed(frames: recorder.samples().count / 2 + 12000, timeout: 5)
        let found = Self.findExact(reference, in: recorder.samples())
        #expect(found.exact, "served: offset \(found.offset), \(found.mismatches) samples differ from the unsplit file")
    }

    /// Where `window` first sits in `samples` at or after frame `from`, by frame.
    static func find(_ window: ArraySlice<Int16>, in samples: [Int16], from: Int = 0) -> Int? {
        let w = Array(window)
        var i = from * 2
        while i + w.count <= samples.count {
            if samples[i] == w[0] && samples[i + 1] == w[1] && Array(samples[i..<(i + w.count)]) == w { return i / 2 }
            i += 2
        }
        return nil
    }

    /// A 44.1 kHz stereo WAV, audible in every frame (an offset sine), made by the ffmpeg command line.
    static func wav44k(in folder: String, name: String, seconds: Double) throws -> String {
        let path = folder + "/" + name
        let result = try ProcessRunner.run("/usr/bin/env", [
            "ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i",
            "aevalsrc=0.25+0.5*sin(2*PI*440*t)|0.25+0.5*sin(2*PI*660*t):s=44100:d=\(seconds)", "-c:a", "pcm_s16le", path])
        guard result.status == 0 else { throw FixtureError("ffmpeg: \(result.stderrText)") }
        return path
    }

    @Test("48 → 44.1 → 48 kHz: the conversion starts at the next track's first frame; both joins within 480 frames, each track exact")
    func mixedRateJoins() throws {
        let server = try SnapcastTestServer()
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let first = try Self.wav48k(in: folder, name: "a48.wav", trim: (0, 30011))
        let middle = try Self.wav44k(in: folder, name: "b44.wav", seconds: 2)
        let last = try Self.wav48k(in: folder, name: "c48.wav", trim: (30011, 48000))
        let a = try Self.cliS16(first), c = try Self.cliS16(last)
        // The middle track alone, as served: what it must be in the queue too.
        let alone = try server.recorder()
        let soloPlayer = try LineProcess.harmoniaPlay(["--quiet", "--output", server.outputURL, middle])
        #expect(soloPlayer.waitForExit(timeout: 20) == 0, "\(soloPlayer.stderr.all)")
        alone.waitForServed(frames: alone.samples().count / 2 + 12000, timeout: 5)
        let soloRecording = alone.samples()
        let solo = try #require(Self.audibleSpan(soloRecording))
        let b = Array(soloRecording[(solo.first * 2)..<((solo.last + 1) * 2)])
        #expect(abs(b.count / 2 - 96000) <= 480, "the 2 s track alone: \(b.count / 2) frames served for 96000")

        let recorder = try server.recorder()
        let player = try LineProcess.harmoniaPlay(["--quiet", "--output", server.outputURL, first, middle, last])
        #expect(player.waitForExit(timeout: 30) == 0, "\(player.stderr.all)")
        recorder.waitForServed(frames: recorder.samples().count / 2 + 12000, timeout: 5)
        let recording = recorder.samples()
        let aStart = try #require(Self.find(a[0..<960], in: recording), "the first track was not served")
        #expect(Array(recording[(aStart * 2)..<min(recording.count, aStart * 2 + a.count)]) == a, "the first track, exact")
        let aEnd = aStart + a.count / 2
        let bStart = try #require(Self.find(b[0..<960], in: recording, from: aEnd), "the middle track was not served as it is alone")
        #expect(Array(recording[(bStart * 2)..<min(recording.count, bStart * 2 + b.count)]) == b, "the middle track, as served alone")
        let bEnd = bStart + b.count / 2
        let cStart = try #require(Self.find(c[0..<960], in: recording, from: bEnd), "the last track was not served")
        #expect(Array(recording[(cStart * 2)..<min(recording.count, cStart * 2 + c.count)]) == c, "the last track, exact")
        print("snapcast mixed rates: 48 → 44.1 kHz join \(bStart - aEnd) frames, 44.1 → 48 kHz join \(cStart - bEnd) frames")
        #expect(bStart - aEnd <= 480 && bStart >= aEnd, "48 → 44.1 kHz: \(bStart - aEnd) frames between the tracks")
        #expect(cStart - bEnd <= 480 && cStart >= bEnd, "44.1 → 48 kHz: \(cStart - bEnd) frames between the tracks")
    }

    @Test("serve: an MPD client plays a 48 → 44.1 → 48 kHz queue into two snapclient rooms, joined within 480 frames")
    func serveMixedRateQueue() throws {
        let server = try SnapcastTestServer()
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let music = folder + "/music"
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        let first = try Self.wav48k(in: music, name: "1-a48.wav", trim: (0, 30011))
        // The 44.1 kHz track's converted content is checked in `mixedRateJoins`; here its joins.
        _ = try Self.wav44k(in: music, name: "2-b44.wav", seconds: 1)
        let last = try Self.wav48k(in: music, name: "3-c48.wav", trim: (30011, 48000))
        let a = try Self.cliS16(first), c = try Self.cliS16(last)
        let recorder = try server.recorder()
        let rooms = [try server.room(), try server.room()]
        let serve = try ServeProcess(music: music, folder: folder, extra: ["--output", server.outputURL])
        defer { _ = serve.stop() }
        try serve.waitForLibrary(songs: 3)
        let client = try serve.client()
        for name in ["1-a48.wav", "2-b44.wav", "3-c48.wav"] { _ = try client.command("add \"\(name)\"") }
        _ = try client.command("play")
        // Until the queue's end (each idle answers when the player changes; bounded).
        for _ in 0..<20 where try client.fields("status")["state"] != "stop" { _ = try client.command("idle player") }
        #expect(try client.fields("status")["state"] == "stop")
        let roomFramesAtEnd = rooms.map(\.frames)
        recorder.waitForServed(frames: recorder.samples().count / 2 + 12000, timeout: 5)
        let recording = recorder.samples()
        let aStart = try #require(Self.find(a[0..<960], in: recording), "the first track was not served")
        #expect(Array(recording[(aStart * 2)..<min(recording.count, aStart * 2 + a.count)]) == a, "the first track, exact")
        let aEnd = aStart + a.count / 2
        let cStart = try #require(Self.find(c[0..<960], in: recording, from: aEnd), "the last track was not served")
        #expect(Array(recording[(cStart * 2)..<min(recording.count, cStart * 2 + c.count)]) == c, "the last track, exact")
        // Between them, the 1 s 44.1 kHz track: 48,000 frames at 48 kHz, audible from the first join to the second.
        let between = Array(recording[(aEnd * 2)..<(cStart * 2)])
        let span = try #require(Self.audibleSpan(between), "nothing served between the 48 kHz tracks")
        let gapBefore = span.first, gapAfter = between.count / 2 - 1 - span.last
        print("snapcast serve mixed rates: \(between.count / 2) frames between the 48 kHz tracks (48000 expected); "
            + "silence \(gapBefore) frames before the 44.1 kHz track, \(gapAfter) after")
        #expect(abs(between.count / 2 - 48000) <= 480 && gapBefore <= 480 && gapAfter <= 480,
                "joins: \(gapBefore) and \(gapAfter) frames of silence, \(between.count / 2) frames between")
        // Both rooms play the last track (a stretch of it exact somewhere in what each played).
        for (index, room) in rooms.enumerated() {
            room.waitForPlayed(frames: roomFramesAtEnd[index] + 96000, timeout: 10)
            let found = Self.find(c[4800..<5760], in: room.samples) != nil
            #expect(found, "room \(index + 1) played the last track")
        }
    }

    @Test("a 44.1 kHz file arrives at 48 kHz with the right length")
    func resampled() throws {
        let server = try SnapcastTestServer()
        let recorder = try server.recorder()
        let fixture = Fixtures.named("wav_s16_stereo_44k.wav")
        let player = try LineProcess.harmoniaPlay(["--quiet", "--output", server.outputURL, fixture.path])
        #expect(player.waitForExit(timeout: 20) == 0, "\(player.stderr.all)")
        recorder.waitForServed(frames: recorder.samples().count / 2 + 12000, timeout: 5)
        let span = try #require(Self.audibleSpan(recorder.samples()))
        let length = span.last - span.first + 1
        let expected = Int(fixture.frames) * 48000 / 44100
        #expect(abs(length - expected) <= 480, "\(length) frames served for \(expected)")
        print("snapcast resampled: \(length) frames served for \(expected) expected")
    }

    @Test("the reported position follows what the rooms hear, within 1.5 s (measured against what is served)")
    func positionFollowsServed() throws {
        let server = try SnapcastTestServer()
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let wav = try Self.wav48k(in: folder, name: "long.wav", repeats: 4)
        let recorder = try server.recorder()
        let player = try LineProcess.harmoniaPlay(["--json", "--tick", "100", "--output", server.outputURL, wav])
        var samples: [(time: Double, seconds: Double)] = []
        while let line = player.stdout.take(timeout: 20, where: { $0.contains("\"event\":\"position\"") || $0.contains("queue_ended") })?.line {
            let now = Self.monotonic()
            if line.contains("queue_ended") { break }
            guard let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let data = json["data"] as? [String: Any], let seconds = data["position"] as? Double else { continue }
            samples.append((now, seconds))
        }
        #expect(player.waitForExit(timeout: 10) == 0)
        let recording = recorder.samples()
        let chunks = recorder.chunks
        let firstAudible = try #require(Self.audibleSpan(recording)).first
        let firstReference = try #require(Self.audibleSpan(try Self.cliS16(wav))).first
        let buffer = Double(recorder.bufferMilliseconds) / 1000
        // The source frame the rooms hear at `time`: served chunk i plays from
        // its timestamp + buffer.
        func heardSeconds(at time: Double) -> Double? {
            guard let chunk = chunks.last(where: { $0.timestamp + buffer <= time }) else { return nil }
            let streamFrame = Double(chunk.offset / 4) + (time - chunk.timestamp - buffer) * 48000
            return (streamFrame - Double(firstAudible - firstReference)) / 48000
        }
        var errors: [Double] = []
        for sample in samples where sample.seconds > 0.2 && sample.seconds < 3.8 {
            if let heard = heardSeconds(at: sample.time) { errors.append(sample.seconds - heard) }
        }
        #expect(errors.count >= 20, "\(errors.count) positions compared")
        let sorted = errors.sorted()
        let worst = sorted.map(abs).max() ?? .infinity
        #expect(worst < 1.5, "position − heard: \(sorted)")
        if !sorted.isEmpty {
            print(String(format: "snapcast position − heard: median %.1f ms, min %.1f, max %.1f (%d samples)",
                         sorted[sorted.count / 2] * 1000, sorted.first! * 1000, sorted.last! * 1000, sorted.count))
        }
    }

    @Test("snapserver restarted mid-track: said within a second, audio again within 5 s; SIGTERM exits 143 within 2 s")
    func serverRestart() throws {
        let server = try SnapcastTestServer()
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let wav = try Self.wav48k(in: folder, name: "long.wav", repeats: 12)
        let recorder = try server.recorder(reconnect: true)
        let player = try LineProcess.harmoniaPlay(["--json", "--output", server.outputURL, wav])
        // Audio is served.
        #expect(player.stdout.take(timeout: 20, where: { $0.contains("\"state\":\"playing\"") }) != nil)
        recorder.waitForServed(frames: 48000 * 2, timeout: 10)
        let stoppedAt = Self.monotonic()
        server.stop()
        let said = player.stderr.take(timeout: 5, where: { $0.contains("lost the connection to snapserver") })
        let saidAfter = Self.monotonic() - stoppedAt
        #expect(said != nil, "stderr: \(player.stderr.all)")
        #expect(saidAfter < 1, "said after \(saidAfter) s")
        #expect(player.stdout.take(timeout: 2, where: { $0.contains("\"event\":\"error\"") }) != nil)
        #expect(player.stdout.take(timeout: 2, where: { $0.contains("\"state\":\"buffering\"") }) != nil)
        #expect(player.process.isRunning)
        try server.start()
        let restartedAt = Self.monotonic()
        // Audible chunks after the reconnection: the recorder says
        // 'disconnected', then records the new server's chunks.
        _ = recorder.process.stdout.take(timeout: 5, where: { $0.hasPrefix("disconnected") })
        var audioAfter: Double?
        let deadline = restartedAt + 10
        while audioAfter == nil, Self.monotonic() < deadline {
            guard let line = recorder.process.stdout.take(timeout: deadline - Self.monotonic(), where: { $0.hasPrefix("chunk ") })?.line else { break }
            let fields = line.split(separator: " ")
            guard let offset = Int(fields[4]), let bytes = Int(fields[3]), let arrived = Double(fields[5]), arrived > restartedAt else { continue }
            let samples = recorder.samples()
            let start = offset / 2, end = min(samples.count, (offset + bytes) / 2)
            if start < end, samples[start..<end].contains(where: { $0 != 0 }) { audioAfter = arrived - restartedAt }
        }
        #expect(audioAfter != nil && audioAfter! < 5, "audio again after \(audioAfter.map { "\($0) s" } ?? "never")")
        #expect(player.stdout.take(timeout: 5, where: { $0.contains("\"state\":\"playing\"") }) != nil, "playing again")
        let termAt = Self.monotonic()
        kill(player.process.processIdentifier, SIGTERM)
        let status = player.waitForExit(timeout: 5)
        let exitAfter = Self.monotonic() - termAt
        #expect(status == 143)
        #expect(exitAfter < 2, "exit after \(exitAfter) s")
        print(String(format: "snapcast restart: said after %.0f ms; audio again %.2f s after snapserver restarted; SIGTERM → %@ in %.0f ms",
                     saidAfter * 1000, audioAfter ?? -1, status.map { String($0) } ?? "nil", exitAfter * 1000))
    }
}
