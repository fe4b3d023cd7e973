// A private snapserver for a test (Debian's 0.26): its own folder and
// generated config, every port free and on loopback, the 'pcm' codec so its
// Wire Chunks are the PCM it serves; and the clients that record what it
// serves: Tests/Snapcast/snapcast_recorder.py (the binary protocol, exact)
// and real snapclient rooms (`--player file:filename=stdout`).
// specs/snapcast.md §Verification
import Foundation
#if canImport(Glibc)
import Glibc
#endif

public final class SnapcastTestServer: @unchecked Sendable {
    public let folder: String
    /// The TCP source's port (server mode): what the player connects to.
    public let sourcePort: UInt16
    /// The stream port clients connect to, the JSON-RPC TCP port and HTTP.
    public let streamPort: UInt16
    public let controlPort: UInt16
    public let httpPort: UInt16
    public let bufferMilliseconds: Int
    // Only touched by the test's thread.
    public private(set) var process: LineProcess?

    /// Whether Debian's snapserver and snapclient are installed (`make deps`).
    public static var available: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/snapserver")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/snapclient")
    }

    /// Writes the config and starts snapserver; returns once its stream port accepts.
    public init(bufferMilliseconds: Int = 1000) throws {
        folder = NSTemporaryDirectory() + "harmonia-snapserver-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let ports = try Self.freePorts(4)
        (sourcePort, streamPort, controlPort, httpPort) = (ports[0], ports[1], ports[2], ports[3])
        self.bufferMilliseconds = bufferMilliseconds
        let config = """
            [server]
            datadir = \(folder)
            [http]
            enabled = true
            bind_to_address = 127.0.0.1
            port = \(httpPort)
            doc_root =
            [tcp]
            enabled = true
            bind_to_address = 127.0.0.1
            port = \(controlPort)
            [stream]
            bind_to_address = 127.0.0.1
            port = \(streamPort)
            source = tcp://127.0.0.1:\(sourcePort)/?name=harmonia&mode=server&sampleformat=48000:16:2
            codec = pcm
            buffer = \(bufferMilliseconds)
            [logging]
            sink = stderr
            filter = *:info

            """
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        try start()
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(atPath: folder)
    }

    public var configPath: String { folder + "/snapserver.conf" }

    /// The player's `--output` for this server.
    public var outputURL: String { "snapcast://127.0.0.1:\(sourcePort)/?buffer=\(bufferMilliseconds)" }

    /// Starts snapserver (again, after `stop`), waiting until it serves.
    public func start(timeout: Double = 10) throws {
        let process = try LineProcess("/usr/bin/python3", Self.withSignals(["/usr/bin/snapserver", "-c", configPath]))
        self.process = process
        let deadline = Date(timeIntervalSinceNow: timeout)
        while !Self.accepts(port: streamPort) {
            guard Date() < deadline, process.process.isRunning else {
                throw FixtureError("snapserver did not start: " + process.stderr.all.joined(separator: "\n"))
            }
            // Bounded: the next connect attempt; snapserver announces nothing on stdout.
            _ = process.stderr.lines(after: process.stderr.all.count, timeout: 0.05)
        }
    }

    /// Stops snapserver (SIGTERM, then SIGKILL after 5 s). Idempotent.
    public func stop() {
        guard let process, process.process.isRunning else { self.process = nil; return }
        process.process.terminate()
        if process.waitForExit(timeout: 5) == nil { kill(process.process.processIdentifier, SIGKILL) }
        self.process = nil
    }

    /// A recorder of what the server serves, connected and told the codec
    /// (so it records every chunk from then on).
    public func recorder(reconnect: Bool = false) throws -> SnapcastRecorder {
        try SnapcastRecorder(port: streamPort, folder: folder, reconnect: reconnect)
    }

    /// A real room: snapclient writing what it plays to its stdout (s16le).
    public func room() throws -> SnapclientRoom {
        try SnapclientRoom(port: streamPort, folder: folder)
    }

    /// Runs `command` with every signal unblocked and SIGPIPE at its default:
    /// a child inherits the spawning thread's mask, and the test runner's
    /// threads block most signals, so SIGTERM would not reach it otherwise.
    static func withSignals(_ command: [String]) -> [String] {
        ["-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, []); "
            + "signal.signal(signal.SIGPIPE, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])"] + command
    }

    /// `count` distinct ports free on 127.0.0.1 now.
    static func freePorts(_ count: Int) throws -> [UInt16] {
        var sockets: [Int32] = []
        defer { sockets.forEach { close($0) } }
        var ports: [UInt16] = []
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard fd >= 0, bound == 0 else { throw FixtureError("no free port") }
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            _ = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
            sockets.append(fd)
            ports.append(UInt16(bigEndian: address.sin_port))
        }
        return ports
    }

    /// Whether something accepts TCP connections on 127.0.0.1:`port`.
    static func accepts(port: UInt16) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        } == 0
    }
}

/// One served Wire Chunk: its timestamp (snapserver's steady clock, which
/// is CLOCK_MONOTONIC on Linux), where it is in the recording, and when it
/// arrived (CLOCK_MONOTONIC).
public struct ServedChunk: Sendable {
    public let timestamp: Double
    public let bytes: Int
    public let offset: Int
    public let arrived: Double
}

/// Tests/Snapcast/snapcast_recorder.py on a server: exactly what it serves.
public final class SnapcastRecorder: @unchecked Sendable {
    public let process: LineProcess
    public let path: String
    /// The server's `bufferMs`.
    public let bufferMilliseconds: Int

    init(port: UInt16, folder: String, reconnect: Bool) throws {
        path = folder + "/recorded-\(UUID().uuidString).s16"
        _ = FileManager.default.createFile(atPath: path, contents: nil)
        process = try LineProcess("/usr/bin/python3", [Fixtures.repositoryRoot + "/Tests/Snapcast/snapcast_recorder.py",
                                                       "127.0.0.1", String(port), path] + (reconnect ? ["--reconnect"] : []))
        guard let settings = process.stdout.take(timeout: 10, where: { $0.hasPrefix("settings ") })?.line,
              process.stdout.take(timeout: 10, where: { $0.hasPrefix("codec pcm 48000 16 2") }) != nil,
              let json = try? JSONSerialization.jsonObject(with: Data(settings.dropFirst(9).utf8)) as? [String: Any],
              let buffer = json["bufferMs"] as? Int else {
            throw FixtureError("the recorder did not connect: " + (process.stdout.all + process.stderr.all).joined(separator: "\n"))
        }
        bufferMilliseconds = buffer
    }

    deinit { stop() }

    public func stop() {
        if process.process.isRunning { process.process.terminate(); process.waitForExit(timeout: 5) }
    }

    /// Every chunk so far.
    public var chunks: [ServedChunk] {
        process.stdout.all.compactMap { line in
            let fields = line.split(separator: " ")
            guard fields.count == 6, fields[0] == "chunk", let sec = Double(fields[1]), let usec = Double(fields[2]),
                  let bytes = Int(fields[3]), let offset = Int(fields[4]), let arrived = Double(fields[5]) else { return nil }
            return ServedChunk(timestamp: sec + usec / 1e6, bytes: bytes, offset: offset, arrived: arrived)
        }
    }

    /// The recording so far: s16 interleaved stereo, as served.
    public func samples() -> [Int16] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// Waits (on the recorder's lines, bounded) until at least `frames`
    /// stereo frames have been served.
    @discardableResult
    public func waitForServed(frames: Int, timeout: Double = 20) -> Bool {
        process.stdout.take(timeout: timeout) { line in
            let fields = line.split(separator: " ")
            guard fields.count == 6, fields[0] == "chunk", let bytes = Int(fields[3]), let offset = Int(fields[4]) else { return false }
            return (offset + bytes) / 4 >= frames
        } != nil
    }
}

/// A real Snapcast room: `snapclient --player file:filename=stdout`, its
/// s16le stereo output collected from stdout.
public final class SnapclientRoom: @unchecked Sendable {
    public let process = Process()
    private let output = Collected()

    /// What the room wrote; the reading thread holds it (never the room).
    private final class Collected: @unchecked Sendable {
        let condition = NSCondition()
        // Guarded by `condition`.
        var data = Data()
        var finished = false
    }

    init(port: UInt16, folder: String) throws {
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = SnapcastTestServer.withSignals(["/usr/bin/snapclient", "-h", "127.0.0.1", "-p", String(port),
                                                            "--player", "file:filename=stdout",
                                                            "--hostID", "room-\(UUID().uuidString.prefix(8))", "--logsink", "null"])
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let handle = out.fileHandleForReading
        let thread = Thread { [output] in
            while true {
                let data = handle.availableData
                output.condition.lock()
                defer { output.condition.broadcast(); output.condition.unlock() }
                if data.isEmpty { output.finished = true; return }
                output.data.append(data)
            }
        }
        thread.start()
    }

    deinit { stop() }

    /// What the room played so far, s16 interleaved stereo.
    public var samples: [Int16] {
        output.condition.lock()
        defer { output.condition.unlock() }
        return output.data.withUnsafeBytes { Array($0.bindMemory(to: Int16.self)) }
    }

    /// Stereo frames played so far.
    public var frames: Int {
        output.condition.lock()
        defer { output.condition.unlock() }
        return output.data.count / 4
    }

    /// Waits until the room has played `frames` stereo frames in all (at
    /// most `timeout` seconds); whether it has.
    @discardableResult
    public func waitForPlayed(frames: Int, timeout: Double = 20) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        output.condition.lock()
        defer { output.condition.unlock() }
        while output.data.count / 4 < frames && !output.finished && output.condition.wait(until: deadline) {}
        return output.data.count / 4 >= frames
    }

    /// SIGTERM, then SIGKILL if it has not ended within 5 s (its output is
    /// read to the end meanwhile, so it is never blocked writing).
    public func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = Date(timeIntervalSinceNow: 5)
        output.condition.lock()
        while !output.finished && output.condition.wait(until: deadline) {}
        output.condition.unlock()
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}
