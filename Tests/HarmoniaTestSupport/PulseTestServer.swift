// The private PulseAudio daemon `make test` starts (Tests/pulse-test-server.sh),
// and pipe sinks that record exactly what a sink plays.
import Foundation
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

public enum PulseTestServer {
    /// The daemon's folder; its socket is DIR/native. Set by the Makefile.
    public static var directory: String? { ProcessInfo.processInfo.environment["HARMONIA_PULSE_DIR"] }
    public static var address: String? { directory.map { "unix:\($0)/native" } }
    static var script: String { Fixtures.repositoryRoot + "/Tests/pulse-test-server.sh" }

    /// Runs the control script: start, stop, restart, kill.
    @discardableResult
    public static func control(_ action: String) throws -> ProcessResult {
        guard let directory else { throw FixtureError("HARMONIA_PULSE_DIR is not set: run the tests through 'make test'") }
        let result = try ProcessRunner.run("/bin/bash", [script, action, directory])
        guard result.status == 0 else { throw FixtureError("pulse-test-server.sh \(action): \(result.stderrText)") }
        return result
    }

    /// Runs pactl against the test server.
    @discardableResult
    public static func pactl(_ arguments: [String]) throws -> String {
        guard let address else { throw FixtureError("HARMONIA_PULSE_DIR is not set") }
        var environment = ProcessInfo.processInfo.environment
        environment["PULSE_SERVER"] = address
        let result = try ProcessRunner.run("/usr/bin/env", ["pactl"] + arguments, environment: environment)
        guard result.status == 0 else { throw FixtureError("pactl \(arguments.joined(separator: " ")): \(result.stderrText)") }
        return result.stdoutText.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A `module-pipe-sink` whose FIFO is read on a thread: everything the sink
/// plays, sample for sample, as float32.
public final class PipeSinkRecorder: @unchecked Sendable {
    public let sinkName: String
    public let channels: Int
    private let module: String
    private let fifo: String
    private let recorded = LockedValue(Data())
    private let finished = ConditionLock()
    private let done = LockedValue(false)

    /// Loads a pipe sink at `rate`/`channels` (float32le) and starts reading it.
    public init(rate: Int, channels: Int, channelMap: String? = nil) throws {
        guard let directory = PulseTestServer.directory else { throw FixtureError("HARMONIA_PULSE_DIR is not set") }
        let id = UUID().uuidString.prefix(8).lowercased()
        sinkName = "pipe_\(id)"
        self.channels = channels
        fifo = "\(directory)/\(sinkName).fifo"
        var arguments = ["load-module", "module-pipe-sink", "file=\(fifo)", "sink_name=\(sinkName)",
                         "format=float32le", "rate=\(rate)", "channels=\(channels)", "use_system_clock_for_timing=yes"]
        if let channelMap { arguments.append("channel_map=\(channelMap)") }
        module = try PulseTestServer.pactl(arguments)
        let path = fifo, recorded = self.recorded, finished = self.finished, done = self.done
        Thread {
            let fd = open(path, O_RDONLY)
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

    /// Unloads the sink and returns everything it played, as samples.
    public func finish() throws -> [Float] {
        _ = try? PulseTestServer.pactl(["unload-module", module])
        finished.withLock { while !done.withLock({ $0 }) { finished.wait() } }
        try? FileManager.default.removeItem(atPath: fifo)
        return recorded.withLock { data in data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) } }
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
