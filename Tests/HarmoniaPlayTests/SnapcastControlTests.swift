// harmonia-play snapcast-control as snapserver runs it: a private Debian
// snapserver 0.26 (generated config, free ports on 127.0.0.1) starts the
// bridge through a one-line wrapper script as a stream's control script;
// the player runs with --output null and a control socket. Clients' view:
// snapserver's JSON-RPC on its TCP control port (Server.GetStatus,
// Stream.Control, Stream.SetProperty); the player's own view: its control
// socket (specs/snapcast-control.md). Every wait is for a line or a reply,
// with a deadline; process ends are polled against a deadline.
import Foundation
import HarmoniaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A TCP client of snapserver's JSON-RPC control port (newline-delimited).
fileprivate final class SnapcastRPC: @unchecked Sendable {
    let lines = LineBuffer()
    private let fd: Int32
    private let nextID = LockedValue(100)

    init(port: Int) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            Glibc.close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        // recv, not FileHandle.availableData: that traps on a reset (a killed snapserver).
        Thread { [lines, fd] in
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress!, $0.count, 0) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 { break }
                lines.append(Data(buffer[0..<n]))
            }
            lines.end()
        }.start()
    }

    static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// Sends a request and waits for its response; with how long it took.
    func call(_ method: String, _ params: [String: Any]? = nil, timeout: Double = 10) throws -> (response: [String: Any], seconds: Double) {
        let id = nextID.withLock { $0 += 1; return $0 }
        var request: [String: Any] = ["id": id, "jsonrpc": "2.0", "method": method]
        if let params { request["params"] = params }
        let text = String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self) + "\n"
        let started = Date()
        var bytes = Array(text.utf8)
        _ = bytes.withUnsafeMutableBytes { send(fd, $0.baseAddress!, $0.count, Int32(MSG_NOSIGNAL)) }
        let found = lines.take(timeout: timeout) { Self.object($0)?["id"] as? Int == id }
        let line = try #require(found, "snapserver did not answer \(method) within \(timeout) s")
        return (Self.object(line.line)!, Date().timeIntervalSince(started))
    }

    /// `Stream.Control` on our stream; the response.
    func control(_ command: String, _ params: [String: Any]? = nil) throws -> (response: [String: Any], seconds: Double) {
        var p: [String: Any] = ["id": PrivateSnapserver.streamName, "command": command]
        if let params { p["params"] = params }
        return try call("Stream.Control", p)
    }

    /// Our stream's properties in `Server.GetStatus`.
    func properties() throws -> [String: Any] {
        let status = try call("Server.GetStatus").response
        let streams = ((status["result"] as? [String: Any])?["server"] as? [String: Any])?["streams"] as? [[String: Any]] ?? []
        let stream = try #require(streams.first { $0["id"] as? String == PrivateSnapserver.streamName })
        return stream["properties"] as? [String: Any] ?? [:]
    }

    /// Waits until our stream's properties satisfy `matches` (checked on
    /// GetStatus after each Stream.OnProperties notification); nil at the deadline.
    func waitForProperties(timeout: Double = 10, _ matches: ([String: Any]) -> Bool) throws -> [String: Any]? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        while true {
            let properties = try self.properties()
            if matches(properties) { return properties }
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return nil }
            _ = lines.take(timeout: min(left, 1)) { Self.object($0)?["method"] as? String == "Stream.OnProperties" }
        }
    }

    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
    }
}

/// A snapserver of our own: config, data and ports in a temporary folder;
/// a TCP source (the player's Snapcast output's kind: its listening socket
/// is what the control script inherits) with our wrapper as control script.
fileprivate final class PrivateSnapserver {
    static let streamName = "Harmonia"
    let process: LineProcess
    let controlPort: Int

    struct Ports { let stream, source, control, http: Int }

    init(folder: String, controlScript: String, ports: Ports) throws {
        let config = """
            [server]
            datadir = \(folder)/snapdata
            [http]
            enabled = true
            bind_to_address = 127.0.0.1
            port = \(ports.http)
            doc_root =
            [tcp]
            enabled = true
            bind_to_address = 127.0.0.1
            port = \(ports.control)
            [stream]
            bind_to_address = 127.0.0.1
            port = \(ports.stream)
            source = tcp://127.0.0.1:\(ports.source)/?name=\(Self.streamName)&mode=server&controlscript=\(controlScript)
            [logging]
            sink = stdout
            filter = *:info

            """
        try FileManager.default.createDirectory(atPath: folder + "/snapdata", withIntermediateDirectories: true)
        try config.write(toFile: folder + "/snapserver.conf", atomically: true, encoding: .utf8)
        controlPort = ports.control
        // Started with no signal blocked: a child inherits the test runner's
        // mask, and snapserver with SIGTERM blocked would never stop on it.
        process = try LineProcess("/usr/bin/python3", ["-c", "import os, signal, sys; signal.pthread_sigmask(signal.SIG_SETMASK, set()); os.execv(sys.argv[1], sys.argv[1:])",
                                                       "/usr/bin/snapserver", "-c", folder + "/snapserver.conf"])
        // The TCP acceptor is made before the HTTP one, both before this line.
        let up = process.stdout.take(timeout: 10) { $0.contains("Creating HTTP acceptor") }
        try #require(up != nil, "snapserver did not start: \(process.stdout.all.suffix(10))")
    }

    func client() throws -> SnapcastRPC { try SnapcastRPC(port: controlPort) }

    /// A line the bridge wrote to stderr (snapserver logs each one).
    func bridgeLog(_ text: String, timeout: Double = 10) -> String? {
        process.stdout.take(timeout: timeout) { $0.contains("harmonia-play snapcast-control: ") && $0.contains(text) }?.line
    }

    /// SIGTERM (or another signal); the exit status (nil: it had to be killed).
    @discardableResult
    func stop(_ signo: Int32 = SIGTERM) -> Int32? {
        guard process.process.isRunning else { return process.process.terminationStatus }
        kill(process.process.processIdentifier, signo)
        let status = process.waitForExit(timeout: 5)
        if status == nil { kill(process.process.processIdentifier, SIGKILL) }
        return status
    }
}

@Suite("harmonia-play snapcast-control", .serialized)
struct SnapcastControlTests {
    static let binary = ProcessRunner.productsDirectory + "/harmonia-play"

    /// A free TCP port on 127.0.0.1 (bound, read, released).
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    fileprivate static func ports() -> PrivateSnapserver.Ports {
        PrivateSnapserver.Ports(stream: freePort(), source: freePort(), control: freePort(), http: freePort())
    }

    static func folder() throws -> String {
        let path = NSTemporaryDirectory() + "harmonia-snapctl-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A tagged sine FLAC of `seconds`.
    static func track(_ folder: String, _ name: String, title: String, artist: String, album: String, albumArtist: String,
                      seconds: Int = 30, cover: Bool = false) throws -> String {
        let path = folder + "/" + name
        // With `cover`, an 8×8 PNG embedded as the file's picture.
        let picture = cover ? ["-f", "lavfi", "-i", "color=c=red:s=8x8:d=1", "-map", "0:a", "-map", "1:v", "-frames:v", "1",
                               "-c:v", "png", "-disposition:v", "attached_pic"] : []
        let made = try ProcessRunner.run("/usr/bin/ffmpeg", [
            "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=\(seconds)"] + picture + [
            "-metadata", "TITLE=\(title)", "-metadata", "ARTIST=\(artist)", "-metadata", "ALBUM=\(album)",
            "-metadata", "ALBUMARTIST=\(albumArtist)", path])
        try #require(made.status == 0, "ffmpeg: \(made.stderrText)")
        return path
    }

    /// The one-line wrapper snapserver 0.26 needs (it passes no parameters of
    /// ours); it also notes the bridge's pid (exec keeps it).
    static func wrapper(_ folder: String, socket: String) throws -> String {
        let path = folder + "/harmonia-snapcast-control"
        try """
            #!/bin/sh
            echo $$ > \(folder)/bridge.pid
            exec env HARMONIA_CONTROL=\(socket) \(binary) snapcast-control "$@"

            """.write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o755)
        return path
    }

    static func bridgePID(_ folder: String) throws -> Int32 {
        let text = try String(contentsOfFile: folder + "/bridge.pid", encoding: .utf8)
        return try #require(Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    /// Whether `pid` still runs (a zombie has ended).
    static func running(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        let state = stat[stat.index(close, offsetBy: 2)]
        return state != "Z" && state != "X"
    }

    /// Polls `condition` every 10 ms until it holds or `timeout` passes; the seconds it took, nil at the deadline.
    static func within(_ timeout: Double, _ condition: () -> Bool) -> Double? {
        let started = Date()
        let wake = NSCondition()
        while !condition() {
            if Date().timeIntervalSince(started) > timeout { return nil }
            wake.lock(); _ = wake.wait(until: Date(timeIntervalSinceNow: 0.01)); wake.unlock()
        }
        return Date().timeIntervalSince(started)
    }

    /// The player's `status` through its own control socket.
    static func playerStatus(_ client: UnixLineClient, _ id: Int) throws -> [String: Any] {
        client.write(HarmoniaPlayControlTests.request(id, "status"))
        return try #require(HarmoniaPlayControlTests.result(try HarmoniaPlayControlTests.reply(client.lines, id).object))
    }

    static func metadata(_ properties: [String: Any]) -> [String: Any] { properties["metadata"] as? [String: Any] ?? [:] }
    static func ok(_ response: [String: Any]) -> Bool { response["result"] as? String == "ok" }

    @Test("snapserver shows our metadata and drives the player; the bridge ends with snapserver, which restarts on the same ports")
    func bridgeUnderSnapserver() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let one = try Self.track(folder, "one.flac", title: "Snap One", artist: "Artist One", album: "Album One", albumArtist: "Band One",
                                 cover: true)
        let two = try Self.track(folder, "two.flac", title: "Snap Two", artist: "Artist Two", album: "Album Two", albumArtist: "Band Two")
        let socket = folder + "/control.sock"
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--control", "unix:" + socket, one, two])
        defer { player.process.terminate(); player.waitForExit() }
        #expect(player.stdout.take { $0.hasPrefix("Playing 1/2: ") } != nil)
        let playerClient = try UnixLineClient(path: socket)

        let script = try Self.wrapper(folder, socket: socket)
        let ports = Self.ports()
        var server: PrivateSnapserver? = try PrivateSnapserver(folder: folder, controlScript: script, ports: ports)
        defer { server?.stop() }
        #expect(server!.bridgeLog("connected to the player") != nil)
        let rpc = try server!.client()

        // Our metadata, complete, in Snapcast's types.
        let first = try #require(try rpc.waitForProperties {
            Self.metadata($0)["title"] as? String == "Snap One" && $0["playbackStatus"] as? String == "playing" && Self.metadata($0)["artUrl"] != nil
        })
        let meta = Self.metadata(first)
        // The embedded cover went as artData; snapserver serves it and names it.
        #expect((meta["artUrl"] as? String)?.hasSuffix(".png") == true, "artUrl: \(String(describing: meta["artUrl"]))")
        #expect(meta["artist"] as? [String] == ["Artist One"])
        #expect(meta["album"] as? String == "Album One")
        #expect(meta["albumArtist"] as? [String] == ["Band One"])
        #expect((meta["duration"] as? Double).map { abs($0 - 30) < 0.01 } == true)
        for key in ["canControl", "canPlay", "canPause", "canSeek", "canGoNext"] { #expect(first[key] as? Bool == true, "\(key)") }
        #expect(first["canGoPrevious"] as? Bool == false)
        #expect(first["loopStatus"] as? String == "none")
        #expect(first["volume"] as? Int == 100)

        // The bridge kept none of snapserver's descriptors (its TCP source's
        // listening socket among them): 0, 1, 2 and its connection to the player.
        let bridge = try Self.bridgePID(folder)
        let fds = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(bridge)/fd").compactMap(Int32.init).sorted()
        let links = fds.map { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(bridge)/fd/\($0)")) ?? "?" }
        #expect(fds.count == 4 && Array(fds.prefix(3)) == [0, 1, 2] && links[3].hasPrefix("socket:"), "the bridge's descriptors: \(zip(fds, links).map { "\($0)→\($1)" })")

        var latencies: [Double] = []
        func control(_ command: String, _ params: [String: Any]? = nil) throws {
            let (response, seconds) = try rpc.control(command, params)
            #expect(Self.ok(response), "\(command): \(response)")
            latencies.append(seconds)
        }

        // next: the player moves on; Snapcast shows the next track's tags.
        try control("next")
        #expect(try Self.playerStatus(playerClient, 1)["index"] as? Int == 1)
        let second = try rpc.waitForProperties { Self.metadata($0)["title"] as? String == "Snap Two" }
        #expect(second.map { Self.metadata($0)["artist"] as? [String] } == ["Artist Two"])
        #expect(second.map { Self.metadata($0)["albumArtist"] as? [String] } == ["Band Two"])
        #expect(second?["canGoPrevious"] as? Bool == true)
        #expect(second?["canGoNext"] as? Bool == false)

        // pause / setPosition / seek / play, each acting on the player
        // (its reply comes before the bridge's "ok", so status shows it at once).
        try control("pause")
        #expect(try Self.playerStatus(playerClient, 2)["state"] as? String == "paused")
        #expect(try rpc.waitForProperties { $0["playbackStatus"] as? String == "paused" } != nil)
        try control("setPosition", ["position": 12.5])
        #expect(try Self.playerStatus(playerClient, 3)["position"] as? Double == 12.5)
        #expect(try rpc.waitForProperties { $0["position"] as? Double == 12.5 } != nil)
        try control("seek", ["offset": -2.5])
        #expect(try Self.playerStatus(playerClient, 4)["position"] as? Double == 10)
        try control("play")
        #expect(try Self.playerStatus(playerClient, 5)["state"] as? String == "playing")
        #expect(try rpc.waitForProperties { $0["playbackStatus"] as? String == "playing" } != nil)
        try control("playPause")
        #expect(try Self.playerStatus(playerClient, 6)["state"] as? String == "paused")
        try control("playPause")
        #expect(try Self.playerStatus(playerClient, 7)["state"] as? String == "playing")

        // SetProperty: volume, loop, shuffle.
        #expect(Self.ok(try rpc.call("Stream.SetProperty", ["id": PrivateSnapserver.streamName, "property": "volume", "value": 40]).response))
        #expect(try Self.playerStatus(playerClient, 8)["volume"] as? Double == 40)
        #expect(Self.ok(try rpc.call("Stream.SetProperty", ["id": PrivateSnapserver.streamName, "property": "loopStatus", "value": "playlist"]).response))
        #expect(try Self.playerStatus(playerClient, 9)["repeat"] as? String == "all")
        #expect(Self.ok(try rpc.call("Stream.SetProperty", ["id": PrivateSnapserver.streamName, "property": "shuffle", "value": true]).response))
        #expect(try Self.playerStatus(playerClient, 10)["shuffle"] as? Bool == true)
        #expect(try rpc.waitForProperties { $0["volume"] as? Int == 40 && $0["loopStatus"] as? String == "playlist" && $0["shuffle"] as? Bool == true } != nil)
        // The player's refusal comes back as an error, promptly.
        let refused = try rpc.control("setPosition", ["position": 99])
        #expect(refused.response["error"] != nil, "\(refused.response)")

        // While playing, the position moves on in what snapserver shows (pushed at least once a second).
        let before = try rpc.properties()["position"] as? Double ?? 0
        #expect(try rpc.waitForProperties(timeout: 3) { ($0["position"] as? Double ?? 0) >= before + 0.9 } != nil)

        let sorted = latencies.sorted()
        print("snapcast-control: Stream.Control answered (snapserver → bridge → player → back) in median \(String(format: "%.1f", sorted[sorted.count / 2] * 1000)) ms, max \(String(format: "%.1f", sorted.last! * 1000)) ms over \(sorted.count)")
        #expect(sorted.last! < 1.0)

        // snapserver stops: the bridge ends at once (end of its stdin) …
        #expect(server!.stop() != nil)
        server = nil
        let ended = Self.within(3) { !Self.running(bridge) }
        #expect(ended != nil, "the bridge outlived snapserver")
        print("snapcast-control: the bridge ended \(String(format: "%.0f", (ended ?? 0) * 1000)) ms after snapserver's exit")
        // … and a new snapserver binds the same ports at once and starts a new bridge.
        server = try PrivateSnapserver(folder: folder, controlScript: script, ports: ports)
        #expect(server!.bridgeLog("connected to the player") != nil)
        let again = try server!.client()
        #expect(try again.waitForProperties { Self.metadata($0)["title"] as? String == "Snap Two" } != nil)
        #expect(server!.process.process.isRunning)
        // Killed outright, snapserver tells the bridge nothing: the end of its stdin is enough.
        let secondBridge = try Self.bridgePID(folder)
        #expect(secondBridge != bridge)
        server!.stop(SIGKILL)
        server = nil
        #expect(Self.within(3) { !Self.running(secondBridge) } != nil, "the bridge outlived a killed snapserver")
    }

    @Test("a bridge started before the player waits, then connects once the player exists")
    func bridgeBeforePlayer() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let one = try Self.track(folder, "one.flac", title: "Late One", artist: "A", album: "B", albumArtist: "C")
        let socket = folder + "/control.sock"
        let server = try PrivateSnapserver(folder: folder, controlScript: try Self.wrapper(folder, socket: socket), ports: Self.ports())
        defer { server.stop() }
        #expect(server.bridgeLog("waiting for the player") != nil)
        let rpc = try server.client()
        // Not ready yet: nothing allowed, and snapserver says so itself.
        #expect(try rpc.properties()["canControl"] as? Bool != true)
        #expect(try rpc.control("play").response["error"] != nil)

        let started = Date()
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--control", "unix:" + socket, one])
        defer { player.process.terminate(); player.waitForExit() }
        let seen = try rpc.waitForProperties { Self.metadata($0)["title"] as? String == "Late One" && $0["canControl"] as? Bool == true }
        #expect(seen != nil)
        let seconds = Date().timeIntervalSince(started)
        print("snapcast-control: the player's metadata reached snapserver \(String(format: "%.2f", seconds)) s after the player started (retrying every 0.2 s, then 1 s)")
        #expect(seconds < 5)
        #expect(Self.ok(try rpc.control("pause").response))
    }

    @Test("hostile input on stdin: each line answered or logged, never a crash; stdin's end ends it at once")
    func hostileInput() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // No player at all: answers come from what the bridge knows.
        var environment = ProcessInfo.processInfo.environment
        environment["HARMONIA_CONTROL"] = "unix:" + folder + "/nobody.sock"
        let bridge = try LineProcess(Self.binary, ["snapcast-control", "--stream=x", "--snapcast-port=1780", "--future-option"], environment: environment)
        #expect(bridge.stderr.take { $0.contains("waiting for the player") } != nil)
        func answer(_ id: Int?) -> [String: Any]? {
            bridge.stdout.take(timeout: 5) { line in
                guard let o = SnapcastRPC.object(line) else { return false }
                if let id { return o["id"] as? Int == id }
                return o["id"] is NSNull
            }.flatMap { SnapcastRPC.object($0.line) }
        }
        let junk: [Data] = [
            Data("not json\n".utf8),
            Data([0x7B, 0xFF, 0xFE, 0x0A]),
            Data((String(repeating: "[", count: 50_000) + "\n").utf8),
            Data(("{\"id\":1,\"method\":\"" + String(repeating: "x", count: 200_000) + "\"}\n").utf8),
            Data("[{\"id\":1}]\n".utf8),
        ]
        for line in junk {
            bridge.write(line)
            let reply = try #require(answer(nil), "no error for \(line.prefix(20))")
            #expect(reply["error"] != nil)
        }
        bridge.write("{\"id\":2,\"jsonrpc\":\"2.0\",\"method\":\"Plugin.Stream.Player.Fly\"}\n")
        #expect((answer(2)?["error"] as? [String: Any])?["code"] as? Int == -32601)
        bridge.write("{\"id\":3,\"jsonrpc\":\"2.0\",\"method\":\"Plugin.Stream.Player.Control\",\"params\":{\"command\":\"play\"}}\n")
        #expect(((answer(3)?["error"] as? [String: Any])?["data"] as? String)?.contains("not connected") == true)
        bridge.write("{\"id\":4,\"jsonrpc\":\"2.0\",\"method\":\"Plugin.Stream.Player.GetProperties\"}\n")
        let properties = try #require(answer(4)?["result"] as? [String: Any])
        #expect(properties["canControl"] as? Bool == false)
        #expect(properties["playbackStatus"] as? String == "stopped")
        bridge.write("{\"jsonrpc\":\"2.0\",\"method\":\"Some.Notification\"}\n")
        // Only JSON-RPC on stdout: every line so far is a JSON object.
        #expect(bridge.stdout.all.allSatisfy { SnapcastRPC.object($0)?["jsonrpc"] as? String == "2.0" })
        let started = Date()
        bridge.closeInput()
        #expect(bridge.waitForExit(timeout: 2) == 0)
        print("snapcast-control: exited \(String(format: "%.0f", Date().timeIntervalSince(started) * 1000)) ms after stdin ended")
    }

    @Test("a hostile or silent player: junk and huge lines ignored, an unanswered command answered with an error after 3 s")
    func hostilePlayer() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // A fake player: a listening Unix socket this test answers on by hand.
        let path = folder + "/fake.sock"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            let bytes = Array(path.utf8)
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let bound = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) } }
        try #require(bound == 0 && listen(listener, 4) == 0)
        var environment = ProcessInfo.processInfo.environment
        environment["HARMONIA_CONTROL"] = path
        let bridge = try LineProcess(Self.binary, ["snapcast-control"], environment: environment)
        let connection = accept(listener, nil, nil)
        try #require(connection >= 0)
        defer { close(connection) }
        let fromBridge = LineBuffer()
        Thread {
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress!, $0.count, 0) }
                if n <= 0 { break }
                fromBridge.append(Data(buffer[0..<n]))
            }
            fromBridge.end()
        }.start()
        func toBridge(_ text: String) {
            var bytes = Array(text.utf8)
            var offset = 0
            while offset < bytes.count {
                let n = bytes.withUnsafeMutableBytes { send(connection, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
                if n <= 0 { return }
                offset += n
            }
        }
        let status = try #require(fromBridge.take { $0.contains("\"status\"") }.flatMap { SnapcastRPC.object($0.line) })
        let statusID = try #require(status["message_id"] as? Int)
        // Junk first: not JSON, a 5 MB line, a reply nobody asked for, an event-shaped array.
        toBridge("not json\n" + String(repeating: "x", count: 5 << 20) + "\n{\"message_id\":999999,\"result\":null}\n[1]\n")
        toBridge("{\"message_id\":\(statusID),\"result\":{\"state\":\"paused\",\"position\":1.0,\"count\":1,\"index\":0,\"repeat\":\"off\",\"shuffle\":false,\"volume\":50,\"muted\":false,\"track\":{\"id\":\"X\",\"url\":\"http://radio.example/stream\",\"title\":\"Fake\"}}}\n")
        #expect(bridge.stdout.take { $0.contains("Plugin.Stream.Ready") } != nil)
        #expect(bridge.stderr.take { $0.contains("longer than") } != nil)
        bridge.write("{\"id\":1,\"jsonrpc\":\"2.0\",\"method\":\"Plugin.Stream.Player.GetProperties\"}\n")
        let properties = try #require(bridge.stdout.take { SnapcastRPC.object($0)?["id"] as? Int == 1 }.flatMap { SnapcastRPC.object($0.line) })
        #expect(((properties["result"] as? [String: Any])?["metadata"] as? [String: Any])?["title"] as? String == "Fake")
        // The player never answers this one: snapserver gets an error after 3 s, not silence.
        let started = Date()
        bridge.write("{\"id\":2,\"jsonrpc\":\"2.0\",\"method\":\"Plugin.Stream.Player.Control\",\"params\":{\"command\":\"play\"}}\n")
        #expect(fromBridge.take { $0.contains("\"play\"") } != nil)
        let late = try #require(bridge.stdout.take(timeout: 6) { SnapcastRPC.object($0)?["id"] as? Int == 2 }.flatMap { SnapcastRPC.object($0.line) })
        let waited = Date().timeIntervalSince(started)
        #expect(((late["error"] as? [String: Any])?["data"] as? String)?.contains("did not answer") == true)
        #expect(waited >= 2.9 && waited < 4.5, "answered after \(waited) s")
        bridge.closeInput()
        #expect(bridge.waitForExit(timeout: 2) == 0)
    }
}
