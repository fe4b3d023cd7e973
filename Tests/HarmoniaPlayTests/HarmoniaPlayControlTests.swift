// harmonia-play's machine interface, run as a client runs it: the control
// protocol over stdin and over a Unix socket, and --json events
// (specs/control-protocol.md). Every wait is for a line, with a deadline.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play control protocol")
struct HarmoniaPlayControlTests {
    static let flac = Fixtures.named("flac_s16_stereo_44k.flac").path  // 2 s
    static let wav = Fixtures.named("wav_s16_stereo_44k.wav").path     // 1 s

    /// A JSON object line, or nil.
    static func object(_ line: String) -> [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }

    /// A request line.
    static func request(_ id: Any, _ command: String, _ args: [String: Any]? = nil) -> String {
        var object: [String: Any] = ["message_id": id, "command": command]
        if let args { object["args"] = args }
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self) + "\n"
    }

    /// Waits for the reply to `id` (an Int or a String; NSNull for null).
    static func reply(_ lines: LineBuffer, _ id: Any, sourceLocation: SourceLocation = #_sourceLocation) throws -> (object: [String: Any], position: Int) {
        let found = lines.take { line in
            guard let o = object(line), o["event"] == nil, let got = o["message_id"] else { return false }
            switch id {
            case let i as Int: return (got as? Int) == i
            case let s as String: return (got as? String) == s
            default: return got is NSNull
            }
        }
        let line = try #require(found, "no reply to \(id); lines: \(lines.all.suffix(5))", sourceLocation: sourceLocation)
        return (object(line.line)!, line.position)
    }

    /// Waits for an event named `name` whose data satisfies `matches`.
    static func event(_ lines: LineBuffer, _ name: String, sourceLocation: SourceLocation = #_sourceLocation,
                      where matches: ([String: Any]) -> Bool = { _ in true }) throws -> (data: [String: Any], position: Int) {
        let found = lines.take { line in
            guard let o = object(line), o["event"] as? String == name, let data = o["data"] as? [String: Any] else { return false }
            return matches(data)
        }
        let line = try #require(found, "no \(name) event; lines: \(lines.all.suffix(5))", sourceLocation: sourceLocation)
        return (object(line.line)!["data"] as! [String: Any], line.position)
    }

    static func result(_ reply: [String: Any]) -> [String: Any]? { reply["result"] as? [String: Any] }

    @Test("a session over stdin: status, pause, seek, volume, queue, jump, errors, quit")
    func stdinSession() throws {
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--control", "stdin", Self.flac])
        let out = player.stdout

        player.write(Self.request(1, "status"))
        let status = try #require(Self.result(try Self.reply(out, 1).object))
        #expect(status["index"] as? Int == 0)
        #expect((status["track"] as? [String: Any])?["url"] as? String == Self.flac)
        #expect((status["track"] as? [String: Any])?["title"] as? String == "Harmonia Test Title")
        #expect(status["duration"] as? Double == 2.0)
        #expect(status["volume"] as? Double == 100)

        player.write(Self.request(2, "pause"))
        #expect(Self.result(try Self.reply(out, 2).object)?["state"] as? String == "paused")
        _ = try Self.event(out, "state_changed") { $0["state"] as? String == "paused" }

        // The reply comes first, then the seeked event; the position is the target.
        player.write(Self.request(3, "seek", ["position": 1.25]))
        let seek = try Self.reply(out, 3)
        #expect(Self.result(seek.object)?["position"] as? Double == 1.25)
        let seeked = try Self.event(out, "seeked")
        #expect(seeked.data["position"] as? Double == 1.25)
        #expect(seeked.position > seek.position)
        player.write(Self.request(4, "status"))
        let paused = try #require(Self.result(try Self.reply(out, 4).object))
        #expect(paused["state"] as? String == "paused")
        #expect(paused["position"] as? Double == 1.25)

        player.write(Self.request(5, "volume", ["level": 50]))
        #expect(Self.result(try Self.reply(out, 5).object)?["volume"] as? Double == 50)
        _ = try Self.event(out, "volume_changed") { $0["volume"] as? Double == 50 }

        player.write(Self.request(6, "queue/items"))
        let items = try #require(Self.result(try Self.reply(out, 6).object)?["items"] as? [[String: Any]])
        #expect(items.map { $0["url"] as? String } == [Self.flac])
        #expect(items.first?["id"] is String)

        player.write(Self.request(7, "queue/add", ["uri": Self.wav]))
        #expect(Self.result(try Self.reply(out, 7).object)?["index"] as? Int == 1)
        _ = try Self.event(out, "queue_changed")
        player.write(Self.request(8, "queue/items"))
        let two = try #require(Self.result(try Self.reply(out, 8).object)?["items"] as? [[String: Any]])
        #expect(two.map { $0["url"] as? String } == [Self.flac, Self.wav])

        player.write(Self.request(9, "jump", ["index": 1]))
        #expect(try Self.reply(out, 9).object["result"] is NSNull)
        let started = try Self.event(out, "track_started") { $0["index"] as? Int == 1 }
        #expect((started.data["track"] as? [String: Any])?["url"] as? String == Self.wav)
        player.write(Self.request(10, "status"))
        #expect(Self.result(try Self.reply(out, 10).object)?["index"] as? Int == 1)

        // Failures: malformed JSON, an unknown command, a wrong type, the service's own error.
        player.write("{\"message_id\": 11, \"command\": \n")
        let malformed = try Self.reply(out, NSNull()).object
        #expect(malformed["error_code"] as? String == "invalidRequest")
        #expect(malformed["error"] is String)
        player.write(Self.request(12, "fly"))
        #expect(try Self.reply(out, 12).object["error_code"] as? String == "unknownCommand")
        player.write(Self.request(13, "seek", ["position": "twelve"]))
        #expect(try Self.reply(out, 13).object["error_code"] as? String == "invalidRequest")
        player.write(Self.request(14, "seek", ["position": -1]))
        #expect(try Self.reply(out, 14).object["error_code"] as? String == "invalidArgument")
        player.write(Self.request(15, "jump", ["index": 7]))
        #expect(try Self.reply(out, 15).object["error_code"] as? String == "invalidArgument")

        player.write(Self.request("bye", "quit"))
        #expect(try Self.reply(out, "bye").object["result"] is NSNull)
        #expect(player.waitForExit() == 0)
        #expect(player.stderr.all.isEmpty)
        // Every line on stdout is a reply or an event.
        for line in out.all {
            let o = Self.object(line)
            #expect(o?["event"] != nil || o?["message_id"] != nil, "\(line)")
        }
    }

    @Test("whatever a client sends, each line gets one reply and the player goes on")
    func garbage() throws {
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--control", "stdin", Self.flac])
        let junk: [Data] = [
            Data("not json\n".utf8),
            Data([0xFF, 0xFE, 0x00, 0x01, 0x80, 0x0A]),
            Data((String(repeating: "[", count: 100_000) + "\n").utf8),
            Data(("{\"message_id\": 1, \"command\": \"" + String(repeating: "x", count: 2 << 20) + "\"}\n").utf8),
            Data("[1, 2, 3]\n".utf8),
            Data("{\"message_id\": {\"a\": 1}, \"command\": \"status\"}\n".utf8),
            Data("{\"message_id\": 2, \"command\": 5}\n".utf8),
            Data("{\"message_id\": 3, \"command\": \"seek\", \"args\": {\"position\": NaN}}\n".utf8),
            Data("{\"message_id\": 4, \"command\": \"seek\", \"args\": [1]}\n".utf8),
            Data("{\"message_id\": 5, \"command\": \"volume\", \"args\": {\"level\": 1000}}\n".utf8),
            Data("{\"message_id\": 6, \"command\": \"jump\", \"args\": {\"index\": 1.5}}\n".utf8),
            Data("{\"message_id\": 7, \"command\": \"repeat\", \"args\": {\"mode\": \"forever\"}}\n".utf8),
        ]
        for chunk in junk { player.write(chunk) }
        player.write(Self.request(99, "status"))
        #expect(Self.result(try Self.reply(player.stdout, 99).object)?["index"] as? Int == 0)
        let replies = player.stdout.all.compactMap(Self.object).filter { $0["event"] == nil }
        #expect(replies.count == junk.count + 1)
        let codes = replies.dropLast().map { $0["error_code"] as? String ?? "none" }
        #expect(codes == ["invalidRequest", "invalidRequest", "invalidRequest", "invalidRequest", "invalidRequest",
                          "invalidRequest", "invalidRequest", "invalidRequest", "invalidRequest", "invalidArgument",
                          "invalidRequest", "invalidArgument"])
        player.write(Self.request(100, "quit"))
        _ = try Self.reply(player.stdout, 100)
        #expect(player.waitForExit() == 0)
    }

    @Test("no inputs: queue/add then play; stdin ending while stopped exits 0")
    func emptyStart() throws {
        let player = try LineProcess.harmoniaPlay(["--output", "file:/dev/null", "--control", "stdin"])
        let out = player.stdout
        player.write(Self.request(1, "status"))
        let status = try #require(Self.result(try Self.reply(out, 1).object))
        #expect(status["state"] as? String == "stopped")
        #expect(status["index"] is NSNull)
        player.write(Self.request(2, "play"))
        #expect(try Self.reply(out, 2).object["error_code"] as? String == "invalidArgument")
        player.write(Self.request(3, "queue/add", ["uri": Self.wav]))
        _ = try Self.reply(out, 3)
        player.write(Self.request(4, "play"))
        _ = try Self.reply(out, 4)
        _ = try Self.event(out, "track_started") { $0["index"] as? Int == 0 }
        // The queue's end does not end the player; the end of stdin then does.
        _ = try Self.event(out, "state_changed") { $0["state"] as? String == "stopped" }
        player.write(Self.request(5, "status"))
        #expect(Self.result(try Self.reply(out, 5).object)?["state"] as? String == "stopped")
        player.closeInput()
        #expect(player.waitForExit() == 0)
    }

    @Test("stdin ending while paused exits 0 (nothing could resume it)")
    func endOfInputWhilePaused() throws {
        let player = try LineProcess.harmoniaPlay(["--output", "null", "--control", "stdin", Self.flac])
        player.write(Self.request(1, "pause"))
        _ = try Self.reply(player.stdout, 1)
        player.closeInput()
        #expect(player.waitForExit() == 0)
    }

    @Test("a Unix socket, mode 0600, two clients at once: both get events, each its own replies")
    func unixSocket() throws {
        let path = NSTemporaryDirectory() + "harmonia-play-\(getpid())-\(UUID().uuidString.prefix(6)).sock"
        // A stale socket file is replaced.
        let stale = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8))
        }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(stale, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        close(stale)
        #expect(FileManager.default.fileExists(atPath: path))

        let player = try LineProcess.harmoniaPlay(["--output", "null", "--control", "unix:" + path, Self.flac])
        // The track line is printed from the main loop, after the socket listens.
        #expect(player.stdout.take { $0.hasPrefix("Playing 1/1: ") } != nil)
        var info = stat()
        #expect(lstat(path, &info) == 0)
        #expect(info.st_mode & 0o777 == 0o600)
        #expect(info.st_mode & S_IFMT == S_IFSOCK)

        let a = try UnixLineClient(path: path), b = try UnixLineClient(path: path)
        // A reply proves the player has the client (events go to clients it has).
        a.write(Self.request(1, "status"))
        b.write(Self.request(1, "status"))
        _ = try Self.reply(a.lines, 1)
        _ = try Self.reply(b.lines, 1)

        a.write(Self.request(2, "pause"))
        b.write(Self.request("b", "queue/items"))
        #expect(Self.result(try Self.reply(a.lines, 2).object)?["state"] as? String == "paused")
        #expect(Self.result(try Self.reply(b.lines, "b").object)?["items"] is [Any])
        _ = try Self.event(a.lines, "state_changed") { $0["state"] as? String == "paused" }
        _ = try Self.event(b.lines, "state_changed") { $0["state"] as? String == "paused" }
        // Each got only its own replies.
        let repliesA = a.lines.all.compactMap(Self.object).filter { $0["event"] == nil }
        let repliesB = b.lines.all.compactMap(Self.object).filter { $0["event"] == nil }
        #expect(repliesA.map { "\($0["message_id"]!)" } == ["1", "2"])
        #expect(repliesB.map { "\($0["message_id"]!)" } == ["1", "b"])

        // One client leaving does not disturb the other.
        b.close()
        a.write(Self.request(3, "seek", ["position": 0.5]))
        _ = try Self.reply(a.lines, 3)
        _ = try Self.event(a.lines, "seeked") { $0["position"] as? Double == 0.5 }

        // A second player cannot take over a live socket.
        let second = try ProcessRunner.harmoniaPlay(["--output", "null", "--control", "unix:" + path, Self.flac])
        #expect(second.status == 1)
        #expect(second.stderrText.contains("another player is listening"))
        #expect(second.stdoutText.isEmpty)

        a.write(Self.request(4, "quit"))
        _ = try Self.reply(a.lines, 4)
        #expect(player.waitForExit() == 0)
        #expect(!FileManager.default.fileExists(atPath: path), "the socket file is removed at exit")
    }

    @Test("--json: the events of a short file as JSON lines, nothing else on stdout; exit 0")
    func jsonEvents() throws {
        let result = try ProcessRunner.harmoniaPlay(["--json", "--output", "file:/dev/null", Self.wav])
        #expect(result.status == 0)
        #expect(result.stderrText.isEmpty)
        let lines = result.stdoutText.split(separator: "\n").map(String.init)
        let objects = lines.compactMap(Self.object)
        #expect(objects.count == lines.count, "every line is a JSON object")
        let names = objects.compactMap { $0["event"] as? String }
        #expect(names.count == lines.count)
        #expect(objects.allSatisfy { $0["data"] is [String: Any] })
        let firstState = try #require(names.firstIndex(of: "state_changed"))
        let started = try #require(names.firstIndex(of: "track_started"))
        let ended = try #require(names.firstIndex(of: "track_ended"))
        #expect(firstState < ended && started < ended)
        // The end: queue_ended, then stopped.
        #expect(names.suffix(2) == ["queue_ended", "state_changed"])
        #expect((objects.last?["data"] as? [String: Any])?["state"] as? String == "stopped")
        let track = (objects[started]["data"] as? [String: Any])?["track"] as? [String: Any]
        #expect(track?["url"] as? String == Self.wav)
        #expect(Set(track?.keys.map { $0 } ?? []) == ["id", "url", "title", "artist", "artists", "album", "album_artist", "album_artists", "genres", "duration"])
        #expect((objects[ended]["data"] as? [String: Any])?["reason"] as? String == "finished")
    }
}
