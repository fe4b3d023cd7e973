// NullAudioOutput and FileAudioOutput: specs/realtime.md.
import Foundation
import HarmoniaCore
import HarmoniaTestSupport
import Testing

@Suite("NullAudioOutput")
struct NullAudioOutputTests {
    /// 48 kHz, 480-frame periods: one period is 10 ms of clock time.
    let period: UInt64 = 10_000_000

    private func frames(_ count: Int, channels: Int = 2) -> [Float] {
        (0..<(count * channels)).map { Float($0) }
    }

    @Test("real-time pace: one period of frames per period of clock time, deterministic")
    func paced() throws {
        let clock = ManualClock(start: 1_000_000)
        let output = NullAudioOutput(pace: .realTime(clock), periodFrames: 480, ringFrames: 4096)
        try output.configure(sampleRate: 48000, channels: 2)
        #expect(output.write(frames(1000), frameCount: 1000) == 1000)
        try output.start()
        defer { output.stop() }
        clock.waitForSleepers(1)
        #expect(output.framesPlayed == 0)
        clock.step(by: period)
        #expect(output.framesPlayed == 480)
        clock.step(by: period)
        #expect(output.framesPlayed == 960)
        #expect(output.underrunCount == 0)
        clock.step(by: period)                       // only 40 left: the ring runs dry
        #expect(output.framesPlayed == 1000)
        #expect(output.underrunCount == 1)
    }

    @Test("pause holds the position; resume continues from the next frame; flush drops what is queued")
    func pauseResumeFlush() throws {
        let clock = ManualClock()
        let output = NullAudioOutput(pace: .realTime(clock), periodFrames: 480, ringFrames: 4096)
        try output.configure(sampleRate: 48000, channels: 1)
        #expect(output.write(frames(2000, channels: 1), frameCount: 2000) == 2000)
        try output.start()
        defer { output.stop() }
        clock.waitForSleepers(1)
        clock.step(by: period)
        #expect(output.framesPlayed == 480)
        output.pause()
        let mark = clock.sleepEntryCount
        clock.advance(by: 5 * period)                // paused: nothing plays however long
        #expect(output.framesPlayed == 480)
        output.resume()
        clock.waitForSleepEntry(after: mark)         // the schedule restarts from now
        #expect(output.framesPlayed == 480)
        clock.step(by: period)
        #expect(output.framesPlayed == 960)
        output.flush()                               // 1040 queued frames dropped
        #expect(output.write(frames(100, channels: 1), frameCount: 100) == 100)
        clock.step(by: period)
        #expect(output.framesPlayed == 1060)         // only the 100 new frames played
    }

    @Test("shiftPlayback: a skip drops exactly that many queued frames and counts them as played; a hold plays that many frames of silence and counts none; a flush drops what is not yet applied")
    func shiftPlayback() throws {
        let clock = ManualClock()
        let heard = LockedValue<[Float]>([])
        let output = NullAudioOutput(pace: .realTime(clock), periodFrames: 480, ringFrames: 4096) { samples, count, _ in
            heard.withLock { $0 += Array(UnsafeBufferPointer(start: samples, count: count)) }
        }
        try output.configure(sampleRate: 48000, channels: 1)
        #expect(output.write(frames(3000, channels: 1), frameCount: 3000) == 3000)
        try output.start()
        defer { output.stop() }
        clock.waitForSleepers(1)
        clock.step(by: period)                       // frames 0..<480
        #expect(output.shiftPlayback(byFrames: 100))
        clock.step(by: period)                       // 100 skipped, then 580..<1060
        #expect(output.framesPlayed == 1060)
        #expect(output.shiftPlayback(byFrames: -200))
        clock.step(by: period)                       // 200 silent frames, then 1060..<1340
        #expect(output.framesPlayed == 1340)
        clock.step(by: period)                       // 1340..<1820
        #expect(output.framesPlayed == 1820)
        let expected = (0..<480).map(Float.init) + (580..<1060).map(Float.init) + [Float](repeating: 0, count: 200)
            + (1060..<1820).map(Float.init)
        #expect(heard.withLock { $0 } == expected)
        #expect(output.shiftPlayback(byFrames: -480))
        output.flush()                               // the hold not yet played goes with the queue
        #expect(output.write(frames(480, channels: 1), frameCount: 480) == 480)
        clock.step(by: period)
        #expect(output.framesPlayed == 2300)
        #expect(heard.withLock { $0.suffix(480) } == frames(480, channels: 1))
        #expect(!NullAudioOutput(pace: .manual).shiftPlayback(byFrames: 10))  // manual pace: not done
    }

    @Test("write never blocks: a full ring accepts nothing")
    func fullRing() throws {
        let output = NullAudioOutput(pace: .realTime(ManualClock()), periodFrames: 480, ringFrames: 1024)
        try output.configure(sampleRate: 48000, channels: 2)
        #expect(output.write(frames(4000), frameCount: 4000) == 1024)
        #expect(output.write(frames(1), frameCount: 1) == 0)
    }

    @Test("as fast as possible: write plays at once; not before start, not while paused")
    func fast() throws {
        let output = NullAudioOutput(pace: .asFastAsPossible)
        try output.configure(sampleRate: 44100, channels: 2)
        #expect(output.write(frames(10), frameCount: 10) == 0)
        try output.start()
        #expect(output.write(frames(10), frameCount: 10) == 10)
        output.pause()
        #expect(output.write(frames(10), frameCount: 10) == 0)
        output.resume()
        #expect(output.write(frames(5), frameCount: 5) == 5)
        #expect(output.framesPlayed == 15)
        output.stop()
    }

    @Test("start before configure is invalidState; bad formats are invalidArgument")
    func errors() {
        let output = NullAudioOutput(pace: .asFastAsPossible)
        #expect(throws: CoreError.self) { try output.start() }
        #expect((try? output.configure(sampleRate: 0, channels: 2)) == nil)
        #expect((try? output.configure(sampleRate: 48000, channels: 0)) == nil)
    }
}

@Suite("FileAudioOutput")
struct FileAudioOutputTests {
    private func temporary(_ name: String) -> String {
        NSTemporaryDirectory() + "harmonia-\(getpid())-\(name)"
    }

    @Test("WAV: IEEE float32 with the right header, samples as written, readable by ffmpeg")
    func wav() throws {
        let path = temporary("out.wav")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let output = FileAudioOutput(path: path)
        try output.configure(sampleRate: 44100, channels: 2)
        try output.start()
        let samples: [Float] = (0..<2000).map { sin(Float($0) * 0.01) * 0.5 }
        #expect(output.write(samples, frameCount: 600) == 600)
        #expect(output.write(Array(samples[1200...]), frameCount: 400) == 400)
        output.stop()
        #expect(output.framesPlayed == 1000)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        #expect(data.count == 44 + 2000 * 4)
        #expect(data.prefix(4) == Data("RIFF".utf8))
        #expect(data[20] == 3 && data[22] == 2)                  // IEEE float, 2 channels
        #expect(data.subdata(in: 40..<44) == Data([0x40, 0x1F, 0, 0]))  // 8000 data bytes
        let decoded = try Fixtures.cliReference(path)
        #expect(decoded == samples)
    }

    @Test("paced by a clock: a period of frames reaches the file per period of clock time; a flush drops what was not played")
    func paced() throws {
        let path = temporary("paced.f32")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let clock = ManualClock(start: 1_000_000)
        let period: UInt64 = 1024 * 1_000_000_000 / 48000 + 1   // one 1024-frame period at 48 kHz, rounded up
        let output = FileAudioOutput(path: path, pacedBy: clock)
        try output.configure(sampleRate: 48000, channels: 1)
        let samples: [Float] = (0..<3000).map { Float($0) / 4096 }
        #expect(output.write(samples, frameCount: 3000) == 0)      // not before start, as unpaced
        try output.start()
        output.setVolume(0.5)
        #expect(output.write(samples, frameCount: 3000) == 3000)   // into the ring, not yet the file
        clock.waitForSleepers(1)
        #expect(output.framesPlayed == 0)
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)).isEmpty)
        clock.step(by: period)
        #expect(output.framesPlayed == 1024)
        clock.step(by: period)
        #expect(output.framesPlayed == 2048)
        output.flush()                                              // 952 frames never heard
        clock.step(by: period)
        #expect(output.framesPlayed == 2048)
        output.stop()
        let written = try Data(contentsOf: URL(fileURLWithPath: path))
        let expected = samples[..<2048].map { $0 * 0.5 }
        #expect(written == expected.withUnsafeBytes { Data($0) })
    }

    @Test("raw: float32 little-endian bytes, nothing else; /dev/null works")
    func raw() throws {
        let path = temporary("out.f32")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let output = FileAudioOutput(path: path)
        try output.configure(sampleRate: 48000, channels: 1)
        try output.start()
        let samples: [Float] = [0, 0.25, -0.5, 1]
        #expect(output.write(samples, frameCount: 4) == 4)
        output.stop()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == samples.withUnsafeBytes { Data($0) })

        let null = FileAudioOutput(path: "/dev/null")
        try null.configure(sampleRate: 48000, channels: 2)
        try null.start()
        #expect(null.write(samples, frameCount: 2) == 2)
        null.stop()
    }

    @Test("volume scales what is written; one file keeps one format; a missing folder is notFound")
    func volumeAndErrors() throws {
        let path = temporary("vol.f32")
        defer { try? FileManager.default.removeItem(atPath: path) }
        let output = FileAudioOutput(path: path)
        try output.configure(sampleRate: 48000, channels: 1)
        try output.start()
        output.setVolume(0.5)
        #expect(output.write([0.5, -1], frameCount: 2) == 2)
        output.setVolume(7)                                       // clamped to 1
        #expect(output.write([0.5], frameCount: 1) == 1)
        output.stop()
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == [Float(0.25), -0.5, 0.5].withUnsafeBytes { Data($0) })
        try output.configure(sampleRate: 48000, channels: 1)      // same format: fine, and stopped
        #expect(output.write([0.5], frameCount: 1) == 0)
        #expect(throws: CoreError.self) { try output.configure(sampleRate: 44100, channels: 1) }
        let missing = FileAudioOutput(path: "/nonexistent-folder/x.wav")
        #expect(throws: CoreError.notFound("/nonexistent-folder/x.wav: cannot create the output file (No such file or directory)")) {
            try missing.configure(sampleRate: 48000, channels: 2)
        }
    }
}
