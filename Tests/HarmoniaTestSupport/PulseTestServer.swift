// The private sound server `make test` starts — PulseAudio
// (Tests/pulse-test-server.sh) or PipeWire with pipewire-pulse
// (Tests/pipewire-test-server.sh), chosen by HARMONIA_SOUND_SERVER — and
// recorders that capture exactly what a sink plays.
import Foundation
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

public enum PulseTestServer {
    /// The server's folder; its PulseAudio socket is DIR/native. Set by the Makefile.
    public static var directory: String? { ProcessInfo.processInfo.environment["HARMONIA_PULSE_DIR"] }
    public static var address: String? { directory.map { "unix:\($0)/native" } }
    /// Whether the server is PipeWire through pipewire-pulse (HARMONIA_SOUND_SERVER=pipewire).
    public static var isPipeWire: Bool { ProcessInfo.processInfo.environment["HARMONIA_SOUND_SERVER"] == "pipewire" }
    /// The server's name, for test output.
    public static var name: String { isPipeWire ? "PipeWire" : "PulseAudio" }
    static var script: String {
        Fixtures.repositoryRoot + (isPipeWire ? "/Tests/pipewire-test-server.sh" : "/Tests/pulse-test-server.sh")
    }

    /// Runs the control script: start, stop, restart, kill (the PulseAudio
    /// side: pipewire-pulse on PipeWire).
    @discardableResult
    public static func control(_ action: String) throws -> ProcessResult {
        guard let directory else { throw FixtureError("HARMONIA_PULSE_DIR is not set: run the tests through 'make test'") }
        let result = try ProcessRunner.run("/bin/bash", [script, action, directory])
        guard result.status == 0 else { throw FixtureError("\(script) \(action): \(result.stderrText)") }
        return result
    }

    /// The environment a PulseAudio client of the test server needs.
    public static var clientEnvironment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["PULSE_SERVER"] = address
        return environment
    }

    /// Runs pactl against the test server.
    @discardableResult
    public static func pactl(_ arguments: [String]) throws -> String {
        guard address != nil else { throw FixtureError("HARMONIA_PULSE_DIR is not set") }
        let result = try ProcessRunner.run("/usr/bin/env", ["pactl"] + arguments, environment: clientEnvironment)
        guard result.status == 0 else { throw FixtureError("pactl \(arguments.joined(separator: " ")): \(result.stderrText)") }
        return result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A sink of its own that records exactly what it plays, sample for sample,
/// as float32 — silence included while nothing plays. On PulseAudio a
/// `module-pipe-sink` whose FIFO is read on a thread (a null sink's monitor
/// there misses the audio the sink rewinds over when a stream starts or
/// flushes). On PipeWire a null sink's monitor recorded by `parec` (a pipe
/// sink on pipewire-pulse writes nothing while nothing plays, so pauses and
/// gaps would vanish; PipeWire does not rewind).
public final class SinkRecorder: @unchecked Sendable {
    public let sinkName: String
    public let channels: Int
    public let rate: Int
    private let module: String
    private var fifo: String?
    private var monitorRecorder: Process?
    private let recorded = LockedValue(Data())
    private let finished = ConditionLock()
    private let done = LockedValue(false)

    /// Loads the sink at `rate`/`channels` (float32le) and starts recording
    /// it; on PipeWire, returns once the first frames (silence) arrive.
    public init(rate: Int, channels: Int, channelMap: String? = nil) throws {
        guard let directory = PulseTestServer.directory else { throw FixtureError("HARMONIA_PULSE_DIR is not set") }
        let id = UUID().uuidString.prefix(8).lowercased()
        sinkName = "rec_\(id)"
        self.channels = channels
        self.rate = rate
        let format = ["format=float32le", "rate=\(rate)", "channels=\(channels)"] + (channelMap.map { ["channel_map=\($0)"] } ?? [])
        let fd: Int32
        if PulseTestServer.isPipeWire {
            module = try PulseTestServer.pactl(["load-module", "module-null-sink", "sink_name=\(sinkName)"] + format)
            let parec = Process(), pipe = Pipe()
            parec.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            parec.arguments = ["parec", "--raw", "--latency-msec=20", "--device=\(sinkName).monitor", "--format=float32le",
                               "--rate=\(rate)", "--channels=\(channels)"] + (channelMap.map { ["--channel-map=\($0)"] } ?? [])
            parec.environment = PulseTestServer.clientEnvironment
            parec.standardOutput = pipe
            parec.standardError = FileHandle.nullDevice
            try parec.run()
            monitorRecorder = parec
            fd = dup(pipe.fileHandleForReading.fileDescriptor)
        } else {
            let path = "\(directory)/\(sinkName).fifo"
            fifo = path
            module = try PulseTestServer.pactl(["load-module", "module-pipe-sink", "file=\(path)", "sink_name=\(sinkName)",
                                                "use_system_clock_for_timing=yes"] + format)
            fd = open(path, O_RDONLY)
        }
        let recorded = self.recorded, finished = self.finished, done = self.done
        Thread {
            if fd >= 0 {
                var buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    let n = read(fd, &buffer, buffer.count)
                    if n <= 0 { break }
                    recorded.withLock { $0.append(contentsOf: buffer[0..<n]) }
                }
                close(fd)
            }
            finished.withLock {
                done.withLock { $0 = true }
                finished.broadcast()
            }
        }.start()
        if monitorRecorder != nil { try waitForFrames(1, seconds: 10) }
    }

    /// Waits until at least `frames` have been recorded (device time passes).
    private func waitForFrames(_ frames: Int, seconds: Double) throws {
        let clock = MonotonicClockAdapter()
        let deadline = clock.now() + UInt64(seconds * 1e9)
        while framesRecorded < frames {
            guard clock.now() < deadline, !done.withLock({ $0 }) else {
                throw FixtureError("recording \(sinkName): \(framesRecorded) of \(frames) frames after \(seconds) s")
            }
            clock.sleep(nanoseconds: 5_000_000)
        }
    }

    /// Frames the sink has played so far (silence included), while it runs.
    public var framesRecorded: Int { recorded.withLock { $0.count } / (channels * 4) }

    /// Everything the sink has played so far, as samples (whole frames), while it runs.
    public func recordedSoFar() -> [Float] {
        recorded.withLock { data in
            let bytes = data.count / (channels * 4) * (channels * 4)
            return data.prefix(bytes).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        }
    }

    /// Stops recording, unloads the sink and returns everything it played,
    /// as samples. A monitor records 200 ms more first: it trails the sink
    /// by up to a graph cycle, and parec by a fragment.
    public func finish() throws -> [Float] {
        if let monitorRecorder {
            try? waitForFrames(framesRecorded + rate / 5, seconds: 5)
            // SIGKILL: a child of the test runner may inherit a mask that blocks SIGTERM.
            kill(monitorRecorder.processIdentifier, SIGKILL)
            monitorRecorder.waitUntilExit()
        }
        _ = try? PulseTestServer.pactl(["unload-module", module])
        finished.withLock { while !done.withLock({ $0 }) { finished.wait() } }
        if let fifo { try? FileManager.default.removeItem(atPath: fifo) }
        return recordedSoFar()
    }

    /// Where `reference` starts in `recording` (frames), matching its first
    /// non-silent frame exactly; nil if it is not there.
    public static func offset(of reference: [Float], in recording: [Float], channels: Int) -> Int? {
        guard let firstLoud = stride(from: 0, to: reference.count, by: channels).first(where: { i in
            (0..<channels).contains { reference[i + $0] != 0 }
        }) else { return nil }
        let key = Array(reference[firstLoud..<min(reference.count, firstLoud + 8 * channels)])
        var i = 0
        while i + key.count <= recording.count {
            if recording[i] == key[0], Array(recording[i..<i + key.count]) == key {
                let start = i - firstLoud
                if start >= 0, start % channels == 0 { return start / channels }
            }
            i += channels
        }
        return nil
    }
}
