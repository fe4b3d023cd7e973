// The service through the real FileAudioOutput: pause, resume and seek at
// whatever moment the test thread gets to them, and the file must still hold
// the exact counter (no frame lost or repeated; the seek's jump exact).
import Foundation
import HarmoniaCore
import HarmoniaTestSupport
import Testing

@Suite("PlaybackService through FileAudioOutput") struct FileOutputServiceTests {
    static func readFloats(_ path: String) throws -> [Float] {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        return data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    }

    @Test("pause and play at arbitrary moments lose and repeat no frame")
    func pauseResume() throws {
        let path = NSTemporaryDirectory() + "harmonia-service-pause-\(UUID().uuidString).f32"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let frames: Int64 = 400_000
        let service = DefaultPlaybackService(decoder: CounterDecoder(["a": .init(frames: frames, channels: 1)]),
                                             output: FileAudioOutput(path: path), clock: MonotonicClockAdapter())
        let log = EventLog(service)
        try service.load(url: "a")
        try service.play()
        for _ in 0..<20 {
            try service.pause()
            try service.play()
        }
        #expect(log.wait(forState: .stopped))
        let samples = try Self.readFloats(path)
        #expect(samples.count == Int(frames))
        #expect(samples.first == 0 && samples.last == Float(frames - 1))
        #expect(isCounting(samples[...]))
    }

    @Test("a seek through the file output: the file jumps from the frame heard to the sought frame, exactly")
    func seek() throws {
        let path = NSTemporaryDirectory() + "harmonia-service-seek-\(UUID().uuidString).f32"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let service = DefaultPlaybackService(decoder: CounterDecoder(["a": .init(frames: 100_000, channels: 1)]),
                                             output: FileAudioOutput(path: path), clock: MonotonicClockAdapter())
        let log = EventLog(service)
        try service.load(url: "a")
        // Paused: the load's prefill waits in the service; nothing is in the file yet.
        try service.seek(to: 1)
        try service.play()
        #expect(log.wait(forState: .stopped))
        let samples = try Self.readFloats(path)
        #expect(samples.count == 100_000 - 44_100)
        #expect(samples.first == 44_100)
        #expect(isCounting(samples[...]))
    }
}
