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
    /// Whether the tests run under ThreadSanitizer (`make test-tsan` sets
    /// HARMONIA_TSAN): tests whose point is not concurrency may skip it.
    public static var underThreadSanitizer: Bool { ProcessInfo.processInfo.environment["HARMONIA_TSAN"] == "1" }
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

    /// PipeWire's graph-lateness lines in its log so far ("client too slow",
    /// "XRun": `pw.node` at info level, Tests/pipewire-test-server.sh;
    /// rate-limited, so at least one per burst); 0 on PulseAudio. The graph
    /// runs at SCHED_FIFO, above every test and player thread: a late cycle
    /// means the machine itself stalled.
    public static func graphLateCycleLines() -> Int {
        guard isPipeWire, let directory, let log = FileManager.default.contents(atPath: directory + "/pipewire.log") else { return 0 }
        return String(decoding: log, as: UTF8.self).split(separator: "\n")
            .filter { $0.contains("client too slow") || $0.contains("XRun") }.count
    }

    /// Makes `sink` the default and waits (bounded: 5 s) until the server
    /// reports it: on PipeWire the session manager applies a new default on
    /// its own time, and a stream opened before then goes to the old one.
    public static func setDefaultSink(_ sink: String) throws {
        try pactl(["set-default-sink", sink])
        let clock = MonotonicClockAdapter()
        let deadline = clock.now() + 5_000_000_000
        while try pactl(["get-default-sink"]) != sink {
            guard clock.now() < deadline else { throw FixtureError("the default sink is not \(sink) 5 s after set-default-sink") }
            clock.sleep(nanoseconds: 10_000_000)  // polling the server: the condition is its answer
        }
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
/// as float32 — silence included while nothing plays, so frame i of the
/// recording is what the sink played i frames after the recording began. On
/// PulseAudio a `module-pipe-sink` whose FIFO is read on a thread (a null
/// sink's monitor there misses the audio the sink rewinds over when a stream
/// starts or flushes). On PipeWire a null sink's monitor recorded by `parec`
/// (a pipe sink on pipewire-pulse writes nothing while nothing plays, so
/// pauses and gaps would vanish; PipeWire does not rewind), with a 100 ms
/// fragment (`monitorLatencyMilliseconds`).
public final class SinkRecorder: @unchecked Sendable {
    /// parec's fragment on PipeWire. A recorder is a node of the sink's graph,
    /// and the graph runs at the shortest latency any of its nodes asks for:
    /// parec at 20 ms made the cycle 512 frames (pw-top), a quarter of what
    /// the player's 500 ms stream runs at alone (2048, PipeWire's largest
    /// quantum), so the tests watched a graph the player never has, four
    /// times as exposed to a late cycle under load. At 100 ms (4800 frames)
    /// the player's own latency sets the cycle. Nothing is lost by waiting:
    /// pipewire-pulse keeps what parec has not read yet (up to 4 MB), and
    /// parec recorders at 20 and 200 ms agreed frame for frame in 254 of 257
    /// recordings under load (pw-record, which drops a cycle whenever its
    /// non-real-time thread is late, lost some in most): specs/realtime.md
    /// §PipeWire. The cost is delay: frames arrive up to a fragment after
    /// they sound, which `recordingFrame(at:)` accounts for.
    public static let monitorLatencyMilliseconds = 100

    public let sinkName: String
    public let channels: Int
    public let rate: Int
    private let module: String
    private var fifo: String?
    private var monitorRecorder: Process?
    private let recorded = LockedValue(Data())
    private let finished = ConditionLock()
    private let done = LockedValue(false)
    /// Every read: when it returned (monotonic ns) and how many whole frames
    /// the recording then held.
    private let arrivals = LockedValue<[(at: UInt64, frames: Int)]>([])
    /// PipeWire's graph-lateness lines in its log when recording began.
    private let lateCyclesAtStart: Int

    /// Graph cycles PipeWire itself logged as late since this recorder
    /// began ("client too slow", "XRun": `pw.node` at info level,
    /// Tests/pipewire-test-server.sh; rate-limited, so at least one per
    /// burst); 0 on PulseAudio. A late cycle can drop or delay a cycle of
    /// what a monitor records, so a recording made across one proves
    /// nothing about exactness either way.
    public var graphLateCycles: Int { PulseTestServer.graphLateCycleLines() - lateCyclesAtStart }

    /// Loads the sink at `rate`/`channels` (float32le) and starts recording
    /// it; on PipeWire, returns once the first frames (silence) arrive.
    public init(rate: Int, channels: Int, channelMap: String? = nil) throws {
        guard let directory = PulseTestServer.directory else { throw FixtureError("HARMONIA_PULSE_DIR is not set") }
        lateCyclesAtStart = PulseTestServer.graphLateCycleLines()
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
            parec.arguments = ["parec", "--raw", "--latency-msec=\(Self.monitorLatencyMilliseconds)", "--device=\(sinkName).monitor", "--format=float32le",
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
        let recorded = self.recorded, finished = self.finished, done = self.done, arrivals = self.arrivals
        let frameBytes = channels * 4
        Thread {
            if fd >= 0 {
                let clock = MonotonicClockAdapter()
                var buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    let n = read(fd, &buffer, buffer.count)
                    if n <= 0 { break }
                    let arrived = clock.now()
                    let frames = recorded.withLock { data in
                        data.append(contentsOf: buffer[0..<n])
                        return data.count / frameBytes
                    }
                    arrivals.withLock { $0.append((arrived, frames)) }
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

    /// The recording's frame the sink had reached at `instant`
    /// (`MonotonicClockAdapter` time), for instants the recording has since
    /// covered. What had arrived by then is no measure (frames arrive up to
    /// a fragment late, later still under load). But the sink takes frames
    /// from the stream at its rate, a block (a graph cycle) at a time, and no
    /// frame reaches the recorder before the sink has taken it: so a read
    /// that returned at `a` ≥ `instant` holding frames 0..<n puts the sink at
    /// frame n − 1 − (a − instant) × rate or later at `instant`, to within the
    /// block it was taking. The best such bound is kept: later than the truth
    /// by at most that block (PulseAudio's pipe sink writes a block as it
    /// takes it; PipeWire's monitor delivers a cycle after, so there it errs
    /// early), and earlier by no more than the smallest delay with which
    /// frames reached the recorder after `instant`. Frames the recorder lost,
    /// or time it did not record, make the answer earlier, never later. Nil
    /// if no read returned after `instant`.
    public func recordingFrame(at instant: UInt64) -> Int? {
        arrivals.withLock { reads in
            reads.lazy.filter { $0.at >= instant && $0.frames > 0 }
                .map { $0.frames - 1 - Int((Double($0.at - instant) * Double(self.rate) / 1e9).rounded(.up)) }
                .max()
        }
    }

    /// Everything the sink has played so far, as samples (whole frames), while it runs.
    public func recordedSoFar() -> [Float] {
        recorded.withLock { data in
            let bytes = data.count / (channels * 4) * (channels * 4)
            return data.prefix(bytes).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        }
    }

    /// Stops recording, unloads the sink and returns everything it played,
    /// as samples. A monitor records a fragment and 200 ms more first: it
    /// trails the sink by up to a graph cycle, and parec by a fragment.
    public func finish() throws -> [Float] {
        if let monitorRecorder {
            try? waitForFrames(framesRecorded + rate * (Self.monitorLatencyMilliseconds + 200) / 1000, seconds: 5)
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
