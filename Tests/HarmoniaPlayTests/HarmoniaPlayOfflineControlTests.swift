// serve --store and the control protocol's offline/* commands against a real
// server on loopback (Tests/Network/fault_server.py) — specs/offline.md
// §Control protocol, specs/control-protocol.md §Offline: offline/add with its
// events, offline/list, a queue/add of the URL (or of another URL with
// "key", also after a restart) playing with the server stopped, offline/remove, offline_error for
// a 404, a slow download that delays no command. Every wait is for a line
// (a reply or an event), bounded.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("serve --store: offline/* over the control protocol", .serialized) struct HarmoniaPlayOfflineControlTests {
    static let flac = "flac_s16_stereo_44k.flac"

    /// A serve with an empty music folder, a store and a control socket.
    final class Player {
        let folder: String
        let store: String
        private(set) var serve: ServeProcess
        private(set) var control: UnixLineClient
        private var nextID = 0

        init() throws {
            folder = NSTemporaryDirectory() + "hp-offline-control-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
            store = folder + "/store"
            try FileManager.default.createDirectory(atPath: folder + "/music", withIntermediateDirectories: true)
            (serve, control) = try Self.start(folder: folder, store: store)
        }

        private static func start(folder: String, store: String) throws -> (ServeProcess, UnixLineClient) {
            let socket = folder + "/control.sock"
            let serve = try ServeProcess(music: folder + "/music", folder: folder,
                                         extra: ["--control", "unix:" + socket, "--store", store, "--network-timeout", "3"])
            return (serve, try UnixLineClient(path: socket))
        }

        /// Ends serve with SIGTERM (it saves its state) and starts it again on the same folders.
        func restart() throws {
            control.close()
            #expect(serve.stop() == 143, "serve ends on SIGTERM")
            (serve, control) = try Self.start(folder: folder, store: store)
        }

        deinit {
            control.close()
            serve.stop()
            try? FileManager.default.removeItem(atPath: folder)
        }

        /// Sends a request; returns its id.
        @discardableResult
        func send(_ command: String, _ args: [String: Any] = [:]) throws -> Int {
            nextID += 1
            let request: [String: Any] = ["message_id": nextID, "command": command, "args": args]
            control.write(String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self) + "\n")
            return nextID
        }

        /// The reply to request `id` (waited for, at most 20 s) and its line's position.
        func reply(_ id: Int) throws -> (json: [String: Any], position: Int) {
            let found = try #require(control.lines.take(timeout: 20, where: { $0.hasPrefix("{\"message_id\":\(id),") }),
                                     "no reply to request \(id): \(control.lines.all.suffix(10))")
            return (try Self.object(found.line), found.position)
        }

        /// Sends a request and returns its `result` (expecting success).
        func call(_ command: String, _ args: [String: Any] = [:]) throws -> Any? {
            let answer = try reply(try send(command, args)).json
            #expect(answer["error"] == nil, "\(command): \(answer)")
            return answer["result"]
        }

        /// The next event `name` whose data satisfies `matches` (waited for, at most `timeout` s).
        func event(_ name: String, timeout: Double = 20, where matches: ([String: Any]) -> Bool = { _ in true })
            throws -> (data: [String: Any], position: Int) {
            let taken = control.lines.take(timeout: timeout, where: { line in
                guard line.hasPrefix("{\"event\":\"\(name)\""), let json = try? Self.object(line) else { return false }
                return matches(json["data"] as? [String: Any] ?? [:])
            })
            let found = try #require(taken, "no \(name) event: \(control.lines.all.suffix(10))")
            return (try Self.object(found.line)["data"] as? [String: Any] ?? [:], found.position)
        }

        /// The queue's entries (`queue/items`).
        func queue() throws -> [[String: Any]] {
            try #require((try call("queue/items") as? [String: Any])?["items"] as? [[String: Any]])
        }

        /// `offline/list`'s entries.
        func entries() throws -> [[String: Any]] {
            try #require((try call("offline/list") as? [String: Any])?["entries"] as? [[String: Any]])
        }

        /// Queues `uri` (with `key`), plays it, and waits until it has played to its end without an error.
        func playToEnd(_ uri: String, key: String? = nil) throws {
            var args: [String: Any] = ["uri": uri]
            if let key { args["key"] = key }
            let added = try #require(try call("queue/add", args) as? [String: Any])
            #expect((added["track"] as? [String: Any])?["offline"] as? Bool == true, "\(added)")
            _ = try call("jump", ["index": added["index"] as? Int ?? 0])
            _ = try call("play")
            let ended = try event("track_ended", where: { ($0["track"] as? [String: Any])?["url"] as? String == uri })
            #expect(ended.data["reason"] as? String == "finished", "\(ended.data)")
            #expect(!control.lines.all.contains { $0.hasPrefix("{\"event\":\"error\"") }, "\(control.lines.all)")
        }

        static func object(_ line: String) throws -> [String: Any] {
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
    }

    @Test("offline/add: progress, done; offline/list; queue/add of the URL plays from disk with the server stopped; offline/remove")
    func addPlayRemove() throws {
        let server = try FaultHTTPServer()
        let player = try Player()
        let url = server.url(Self.flac)
        let size = try #require(try FileManager.default.attributesOfItem(atPath: Fixtures.named(Self.flac).path)[.size] as? Int)

        let queued = try #require(try player.call("offline/add", ["url": url]) as? [String: Any])
        #expect((queued["queued"] as? [[String: Any]])?.first?["key"] as? String == url)
        let progress = try player.event("offline_progress", where: { $0["key"] as? String == url })
        #expect(progress.data["total"] as? Int == size && progress.data["rate"] != nil && progress.data["bytes"] != nil)
        let done = try player.event("offline_done", where: { $0["key"] as? String == url })
        #expect(done.data["size"] as? Int == size && done.data["url"] as? String == url)
        #expect(progress.position < done.position)

        let entries = try player.entries()
        #expect(entries.count == 1)
        #expect(entries.first?["key"] as? String == url && entries.first?["complete"] as? Bool == true
                && entries.first?["size"] as? Int == size && entries.first?["pinned"] as? Bool == true)

        server.stop()
        let before = server.requests.count
        try player.playToEnd(url)
        #expect(server.requests.count == before)
        #expect(try player.queue().first?["offline"] as? Bool == true)
        _ = try player.call("jump", ["index": 0])  // a current track again (the queue had ended)
        #expect(((try player.call("status") as? [String: Any])?["track"] as? [String: Any])?["offline"] as? Bool == true)

        let removed = try #require(try player.call("offline/remove", ["url": url]) as? [String: Any])
        #expect(removed["removed"] as? [String] == [url])
        _ = try player.event("offline_removed", where: { $0["keys"] as? [String] == [url] })
        #expect(try player.entries().isEmpty)
        #expect(try player.queue().first?["offline"] as? Bool == false)
        let again = try player.reply(try player.send("offline/remove", ["key": url])).json
        #expect(again["error_code"] as? String == "notFound", "\(again)")
    }

    @Test("queue/add with \"key\": another URL (a signed one) plays from the entry the key names, the server stopped")
    func explicitKey() throws {
        let server = try FaultHTTPServer()
        let player = try Player()
        _ = try player.call("offline/add", ["url": server.url(Self.flac, "sig=first"), "key": "album/track-1"])
        _ = try player.event("offline_done", where: { $0["key"] as? String == "album/track-1" })
        server.stop()
        try player.playToEnd(server.url(Self.flac, "sig=second"), key: "album/track-1")
        let bad = try player.reply(try player.send("queue/add", ["uri": server.url(Self.flac), "key": ""])).json
        #expect(bad["error_code"] as? String == "invalidArgument", "\(bad)")
    }

    @Test("a queue entry added with \"key\" keeps it across a restart: saved in the state file, and played from that entry, the server stopped")
    func keyAcrossRestart() throws {
        let server = try FaultHTTPServer()
        let player = try Player()
        _ = try player.call("offline/add", ["url": server.url(Self.flac, "sig=first"), "key": "album/track-1"])
        _ = try player.event("offline_done", where: { $0["key"] as? String == "album/track-1" })
        let signed = server.url(Self.flac, "sig=second")
        _ = try player.call("queue/add", ["uri": signed, "key": "album/track-1"])
        server.stop()
        try player.restart()

        let saved = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: player.folder + "/state.json")))
                                 as? [String: Any])
        let entries = try #require(saved["queue"] as? [[String: Any]])
        #expect(entries.count == 1 && entries.first?["uri"] as? String == signed && entries.first?["key"] as? String == "album/track-1",
                "\(saved)")
        let queue = try player.queue()
        #expect(queue.count == 1 && queue.first?["url"] as? String == signed && queue.first?["offline"] as? Bool == true, "\(queue)")
        let requests = server.requests.count
        _ = try player.call("jump", ["index": 0])
        _ = try player.call("play")
        let ended = try player.event("track_ended", where: { ($0["track"] as? [String: Any])?["url"] as? String == signed })
        #expect(ended.data["reason"] as? String == "finished", "\(ended.data)")
        #expect(!player.control.lines.all.contains { $0.hasPrefix("{\"event\":\"error\"") }, "\(player.control.lines.all)")
        #expect(server.requests.count == requests, "no request to the server")
    }

    @Test("offline_error: a 404 is one categorised line; nothing listed")
    func notFound() throws {
        let server = try FaultHTTPServer()
        let player = try Player()
        let url = server.url("missing.flac")
        _ = try player.call("offline/add", ["url": url])
        let error = try player.event("offline_error", where: { $0["url"] as? String == url })
        #expect(error.data["category"] as? String == "notFound", "\(error.data)")
        #expect((error.data["message"] as? String)?.contains("\n") == false)
        #expect(try player.entries().isEmpty)
        // Refused before anything is queued: a file: URL.
        let refused = try player.reply(try player.send("offline/add", ["url": "file:///etc/hostname"])).json
        #expect(refused["error_code"] as? String == "invalidArgument", "\(refused)")
    }

    @Test("a slow download delays no command; offline/remove cancels it (offline_error, offline_removed)")
    func slowDownload() throws {
        let server = try FaultHTTPServer()
        let player = try Player()
        // 186 kB at 20 kB/s: about 9 s, far longer than any reply below.
        let url = server.url("flac_s24_stereo_96k.flac", "rate=20000")
        _ = try player.call("offline/add", ["url": url, "key": "slow"])
        _ = try player.event("offline_progress", where: { $0["key"] as? String == "slow" })
        let status = try player.reply(try player.send("status"))
        #expect(status.json["result"] != nil)
        let removed = try #require(try player.call("offline/remove", ["key": "slow"]) as? [String: Any])
        #expect(removed["removed"] as? [String] == ["slow"])
        let cancelled = try player.event("offline_error", where: { $0["key"] as? String == "slow" })
        #expect(cancelled.data["category"] as? String == "invalidState", "\(cancelled.data)")
        #expect(status.position < cancelled.position)
        #expect(!player.control.lines.all.contains { $0.hasPrefix("{\"event\":\"offline_done\"") })
        #expect(try player.entries().isEmpty)
    }
}
