// harmonia-play's play history and its reporting to ListenBrainz, against the
// tests' stand-in (Tests/Network/listenbrainz_standin.py) on loopback
// — specs/listens.md §Tests: a listen recorded and delivered with its tags
// and MBIDs, under 30 s never, --no-history, an outage delivering the
// backlog once with the original listened_at, 429 honoured, 401 stopping
// with one line, kill -9 after recording and during a submit, the token
// never in argv or output.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play listens", .serialized) struct HarmoniaPlayListensTests {
    static let token = "tok-\(UInt32.random(in: 100_000...999_999))-secret"
    static let recordingMBID = "8f3471b5-7e6a-48da-86a9-c1c07a0f47ae"
    static let releaseMBID = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    static let artistMBID = "11111111-2222-4333-8444-555555555555"

    /// A fresh folder under the temporary directory.
    static func folder() -> String {
        let path = NSTemporaryDirectory() + "hp-listens-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A 40 s tagged FLAC (8 kHz mono: it decodes in a moment), made once.
    static let song: String = {
        let path = NSTemporaryDirectory() + "hp-listens-song-\(getpid()).flac"
        _ = try? ProcessRunner.run("/usr/bin/ffmpeg", [
            "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=40:sample_rate=8000",
            "-metadata", "TITLE=Heard Song", "-metadata", "ARTIST=The Testers", "-metadata", "ALBUM=Loopback",
            "-metadata", "TRACKNUMBER=4", "-metadata", "MUSICBRAINZ_TRACKID=\(recordingMBID)",
            "-metadata", "MUSICBRAINZ_ALBUMID=\(releaseMBID)", "-metadata", "MUSICBRAINZ_ARTISTID=\(artistMBID)", path])
        return path
    }()

    /// The token in a file of `folder`.
    static func tokenFile(_ folder: String, _ token: String = token) -> String {
        let path = folder + "/token"
        _ = FileManager.default.createFile(atPath: path, contents: Data((token + "\n").utf8))
        return path
    }

    /// The environment of every run: a private XDG_DATA_HOME, no token, no desktop bus.
    static func environment(_ folder: String, extra: [String: String] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_DATA_HOME"] = folder + "/data"
        environment["HARMONIA_LISTENBRAINZ_TOKEN"] = nil
        environment["DBUS_SESSION_BUS_ADDRESS"] = nil
        return environment.merging(extra) { $1 }
    }

    static func run(_ arguments: [String], _ folder: String, extra: [String: String] = [:]) throws -> ProcessResult {
        let result = try ProcessRunner.run(ProcessRunner.productsDirectory + "/harmonia-play", arguments,
                                           environment: environment(folder, extra: extra))
        #expect(!result.stdoutText.contains(token) && !result.stderrText.contains(token), "the token was printed")
        return result
    }

    /// `play` of `inputs` to a file output, with the listens options.
    static func play(_ folder: String, _ inputs: [String], url: String?, token: Bool = true, more: [String] = []) throws -> ProcessResult {
        var arguments = ["play", "--output", "file:\(folder)/out.f32", "--quiet", "--no-mpris", "--listens-db", folder + "/listens.sqlite"]
        if let url { arguments += ["--listenbrainz-url", url] }
        if token { arguments += ["--listenbrainz-token-file", tokenFile(folder)] }
        return try run(arguments + more + inputs, folder)
    }

    /// A loopback port where a stand-in listened and no longer does: connections are refused.
    static func downPort(_ folder: String) throws -> Int {
        let standIn = try ListenBrainzStandIn(token: token, folder: folder)
        standIn.stop()
        return standIn.port
    }

    /// `play` of the song with a control channel on stdin, started and left running.
    static func controlledPlayer(_ folder: String, url: String) throws -> LineProcess {
        try LineProcess.harmoniaPlay(["play", "--control", "stdin", "--output", "file:\(folder)/out.f32", "--no-mpris",
                                      "--listens-db", folder + "/listens.sqlite", "--listenbrainz-url", url,
                                      "--listenbrainz-token-file", tokenFile(folder), song],
                                     environment: environment(folder))
    }

    static func history(_ folder: String) throws -> [[String: Any]] {
        let result = try run(["history", "--json", "--listens-db", folder + "/listens.sqlite"], folder)
        #expect(result.status == 0, "\(result.stderrText)")
        return (try? JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]]) ?? []
    }

    static func submit(_ folder: String, url: String) throws -> ProcessResult {
        try run(["listens", "submit", "--listens-db", folder + "/listens.sqlite", "--listenbrainz-url", url,
                 "--listenbrainz-token-file", tokenFile(folder)], folder)
    }

    /// Waits (polling every 20 ms, at most `timeout` s) until `condition` holds.
    static func awaitCondition(timeout: Double = 20, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return true }
            usleep(20_000)
        }
        return try condition()
    }

    @Test("play records the listen heard, then delivers it as single with its tags and MBIDs; playing_now first; no path leaves")
    func recordAndDeliver() throws {
        let folder = Self.folder()
        let standIn = try ListenBrainzStandIn(token: Self.token, folder: folder)
        let before = Int64(Date().timeIntervalSince1970)
        let result = try Self.play(folder, [Self.song], url: standIn.url)
        let after = Int64(Date().timeIntervalSince1970) + 1
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stderrText.isEmpty, "\(result.stderrText)")
        let history = try Self.history(folder)
        #expect(history.count == 1)
        let row = try #require(history.first)
        #expect(row["title"] as? String == "Heard Song" && row["artist"] as? String == "The Testers" && row["album"] as? String == "Loopback")
        #expect(row["state"] as? String == "delivered" && row["source"] as? String == Self.song)
        #expect((row["seconds_heard"] as? Double).map { abs($0 - 40) < 0.01 } == true)
        let listenedAt = try #require(row["listened_at"] as? Int64 ?? (row["listened_at"] as? Int).map(Int64.init))
        #expect(listenedAt >= before && listenedAt <= after)

        let requests = standIn.requests
        // Two requests; which goes first depends on when the outbox's thread wakes (a fast file output).
        #expect(requests.compactMap { $0["listen_type"] as? String }.sorted() == ["playing_now", "single"])
        #expect(!requests.contains { ($0["body"] as? String)?.contains(Self.song) == true || ($0["body"] as? String)?.contains("/tmp") == true })
        let accepted = standIn.accepted
        #expect(accepted.count == 1)
        let listen = try #require(accepted.first?["listen"] as? [String: Any])
        #expect(listen["listened_at"] as? Int64 == listenedAt || (listen["listened_at"] as? Int).map(Int64.init) == listenedAt)
        let meta = try #require(listen["track_metadata"] as? [String: Any])
        #expect(meta["track_name"] as? String == "Heard Song" && meta["artist_name"] as? String == "The Testers" && meta["release_name"] as? String == "Loopback")
        let info = try #require(meta["additional_info"] as? [String: Any])
        #expect(info["duration_ms"] as? Int == 40_000 && info["tracknumber"] as? Int == 4)
        #expect(info["recording_mbid"] as? String == Self.recordingMBID && info["release_mbid"] as? String == Self.releaseMBID)
        #expect(info["artist_mbids"] as? [String] == [Self.artistMBID])
        #expect(info["media_player"] as? String == "harmonia-play" && info["submission_client"] as? String == "harmonia-play")
    }

    @Test("a track under 30 s never counts; --no-history records and sends nothing; no token: recorded, nothing sent")
    func nothingCounted() throws {
        let folder = Self.folder()
        let standIn = try ListenBrainzStandIn(token: Self.token, folder: folder)
        let short = Fixtures.named("flac_s16_stereo_44k.flac").path
        #expect(try Self.play(folder, [short], url: standIn.url).status == 0)
        #expect(try Self.history(folder).isEmpty)
        #expect(standIn.requests.map { $0["listen_type"] as? String } == ["playing_now"])
        let noHistory = Self.folder()
        #expect(try Self.play(noHistory, [Self.song], url: standIn.url, more: ["--no-history"]).status == 0)
        #expect(!FileManager.default.fileExists(atPath: noHistory + "/listens.sqlite"))
        #expect(standIn.requests.count == 1)
        #expect(try Self.play(folder, [Self.song], url: standIn.url, token: false).status == 0)
        #expect(try Self.history(folder).first?["state"] as? String == "pending")
        #expect(standIn.requests.count == 1)
    }

    @Test("an outage: play exits 0 at once, listens kept; submit fails with one line; back up, the backlog goes once as an import with its listened_at; again, nothing")
    func outage() throws {
        let folder = Self.folder()
        let port = try Self.downPort(folder)
        let url = "http://127.0.0.1:\(port)"
        for _ in 0..<3 {
            let started = Date()
            let result = try Self.play(folder, [Self.song], url: url)
            #expect(result.status == 0, "\(result.stderrText)")
            #expect(Date().timeIntervalSince(started) < 10)
        }
        let pending = try Self.history(folder)
        #expect(pending.count == 3 && pending.allSatisfy { $0["state"] as? String == "pending" })
        let down = try Self.submit(folder, url: url)
        #expect(down.status == 1 && down.stderrText.split(separator: "\n").count == 1, "\(down.stderrText)")

        let back = try ListenBrainzStandIn(token: Self.token, folder: folder, port: port)
        let up = try Self.submit(folder, url: back.url)
        #expect(up.status == 0, "\(up.stderrText)")
        #expect(up.stdoutText.contains("3 delivered, 0 left"))
        #expect(back.requests.map { $0["listen_type"] as? String } == ["import"])
        let sent = back.accepted.compactMap { ($0["listen"] as? [String: Any])?["listened_at"] as? Int }.sorted()
        let recorded = pending.compactMap { $0["listened_at"] as? Int }.sorted()
        #expect(sent == recorded && sent.count == 3)
        #expect(try Self.history(folder).allSatisfy { $0["state"] as? String == "delivered" })
        let again = try Self.submit(folder, url: back.url)
        #expect(again.status == 0 && again.stdoutText.contains("0 delivered, 0 left"))
        #expect(back.requests.count == 1)
    }

    @Test("429 with X-RateLimit-Reset-In: no request before it passed, then delivered")
    func throttled() throws {
        let folder = Self.folder()
        let standIn = try ListenBrainzStandIn(token: Self.token, folder: folder)
        #expect(try Self.play(folder, [Self.song], url: standIn.url, token: false).status == 0)
        standIn.command("status 429 1 X-RateLimit-Reset-In=2")
        let result = try Self.submit(folder, url: standIn.url)
        #expect(result.status == 0, "\(result.stderrText)")
        let requests = standIn.requests
        #expect(requests.map { "\($0["status"] ?? "")" } == ["429", "200"])
        let gap = (requests[1]["time"] as? Double ?? 0) - (requests[0]["time"] as? Double ?? 0)
        #expect(gap >= 2, "the second request came \(gap) s after the 429")
        #expect(standIn.accepted.count == 1)
    }

    @Test("a refused token: play exits 0 with exactly one line naming the token; the listen kept; the token in no output")
    func refusedToken() throws {
        let folder = Self.folder()
        let standIn = try ListenBrainzStandIn(token: "another-token", folder: folder)
        let result = try Self.play(folder, [Self.song], url: standIn.url)
        #expect(result.status == 0)
        let lines = result.stderrText.split(separator: "\n")
        #expect(lines.count == 1 && lines.first?.contains("token") == true, "\(result.stderrText)")
        #expect(standIn.requests.count == 1)  // the first refusal stops it
        #expect(try Self.history(folder).first?["state"] as? String == "pending")
        // The environment's token is used, and never shown either.
        let env = try Self.run(["listens", "submit", "--listens-db", folder + "/listens.sqlite", "--listenbrainz-url", standIn.url],
                               folder, extra: ["HARMONIA_LISTENBRAINZ_TOKEN": "another-token"])
        #expect(env.status == 0 && !env.stderrText.contains("another-token") && !env.stdoutText.contains("another-token"))
        #expect(try Self.history(folder).first?["state"] as? String == "delivered")
    }

    @Test("listens submit checks its options as play does: an empty --listens-db and a non-http URL are usage errors (exit 2)")
    func submitOptions() throws {
        let folder = Self.folder()
        let empty = try Self.run(["listens", "submit", "--listens-db", ""], folder)
        #expect(empty.status == 2 && empty.stderrText.contains("--listens-db needs a file name"), "\(empty.stderrText)")
        let ftp = try Self.run(["listens", "submit", "--listens-db", folder + "/listens.sqlite", "--listenbrainz-url", "ftp://x"], folder)
        #expect(ftp.status == 2 && ftp.stderrText.contains("--listenbrainz-url must be an http(s) URL"), "\(ftp.stderrText)")
    }

    @Test("kill -9 after the listen was recorded, before delivery: the next submit delivers it, once")
    func killedBeforeDelivery() throws {
        let folder = Self.folder()
        let standIn = try ListenBrainzStandIn(token: Self.token, folder: folder)
        standIn.command("hang 1")
        let player = try LineProcess.harmoniaPlay(["play", "--output", "file:\(folder)/out.f32", "--quiet", "--no-mpris",
                                                   "--listens-db", folder + "/listens.sqlite", "--listenbrainz-url", standIn.url,
                                                   "--listenbrainz-token-file", Self.tokenFile(folder), Self.song],
                                                  environment: Self.environment(folder))
        // The playing_now hangs; the listen is recorded meanwhile.
        #expect(Self.awaitCondition { standIn.requests.count == 1 && ((try? Self.history(folder))?.count ?? 0) == 1 })
        kill(player.process.processIdentifier, SIGKILL)
        player.waitForExit()
        #expect(try Self.history(folder).first?["state"] as? String == "pending")
        let result = try Self.submit(folder, url: standIn.url)
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(standIn.accepted.count == 1)
    }

    @Test("kill -9 during a submit: unanswered, sent again identically; the service keeps it once (its dedup on listened_at + track)")
    func killedDuringSubmit() throws {
        let folder = Self.folder()
        let standIn = try ListenBrainzStandIn(token: Self.token, folder: folder)
        #expect(try Self.play(folder, [Self.song], url: standIn.url, token: false).status == 0)
        for fault in ["hang 1", "drop 1"] {
            standIn.command(fault)
            let requestsBefore = standIn.requests.count
            let submit = try LineProcess.harmoniaPlay(["listens", "submit", "--listens-db", folder + "/listens.sqlite",
                                                       "--listenbrainz-url", standIn.url, "--listenbrainz-token-file", Self.tokenFile(folder)],
                                                      environment: Self.environment(folder))
            #expect(Self.awaitCondition { standIn.requests.count == requestsBefore + 1 })
            #expect(try Self.history(folder).first?["state"] as? String == "sending")
            kill(submit.process.processIdentifier, SIGKILL)
            submit.waitForExit()
        }
        let result = try Self.submit(folder, url: standIn.url)
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(try Self.history(folder).first?["state"] as? String == "delivered")
        // hang: never recorded; drop: recorded, its answer lost; then the last submit: the same listen again.
        let bodies = standIn.accepted.compactMap { entry in
            (entry["listen"] as? [String: Any]).flatMap { try? JSONSerialization.data(withJSONObject: $0, options: .sortedKeys) }
        }
        #expect(bodies.count == 2 && Set(bodies).count == 1)
        #expect(standIn.stored.count == 1)
    }

    @Test("the control protocol: a listen event when the listen counts; status and quit answered at once while the server never answers")
    func controlProtocol() throws {
        let folder = Self.folder()
        let standIn = try ListenBrainzStandIn(token: Self.token, folder: folder)
        standIn.command("hang 10")
        let player = try Self.controlledPlayer(folder, url: standIn.url)
        let listen = try #require(player.stdout.take(timeout: 20) { $0.contains(#""event":"listen""#) }?.line)
        let event = try #require(try JSONSerialization.jsonObject(with: Data(listen.utf8)) as? [String: Any])
        let data = try #require(event["data"] as? [String: Any])
        #expect(data["title"] as? String == "Heard Song" && data["artist"] as? String == "The Testers")
        #expect((data["listened_at"] as? Int ?? 0) > 1_700_000_000 && (data["seconds_heard"] as? Double).map { abs($0 - 40) < 0.01 } == true)
        #expect(Self.awaitCondition { standIn.requests.count >= 1 })  // the playing_now hangs
        player.write(#"{"message_id":9,"command":"listens/recent","args":{"limit":5}}"# + "\n")
        let recent = try #require(player.stdout.take(timeout: 10) { $0.contains(#""message_id":9"#) }?.line)
        #expect(recent.contains(#""title":"Heard Song""#) && recent.contains(#""state":"pending""#), "\(recent)")
        let asked = Date()
        player.write(#"{"message_id":1,"command":"status"}"# + "\n")
        #expect(player.stdout.take(timeout: 10) { $0.contains(#""message_id":1"#) } != nil)
        let statusSeconds = Date().timeIntervalSince(asked)
        #expect(statusSeconds < 1, "status took \(statusSeconds) s")
        let quitAt = Date()
        player.write(#"{"message_id":2,"command":"quit"}"# + "\n")
        #expect(player.waitForExit(timeout: 10) == 0)
        let quitSeconds = Date().timeIntervalSince(quitAt)
        #expect(quitSeconds < 3.5, "quit took \(quitSeconds) s (at most 2 s of reporting at exit)")
        #expect(!player.stdout.all.joined().contains(Self.token) && !player.stderr.all.joined().contains(Self.token))
        #expect(try Self.history(folder).first?["state"] as? String == "pending")
    }

    @Test("serve, driven by an MPD client, in real time: playing_now, then a single once half the 30.5 s track was heard, not before")
    func serveWithMPDClient() throws {
        let folder = Self.folder()
        let music = folder + "/music"
        try FileManager.default.createDirectory(atPath: music, withIntermediateDirectories: true)
        let made = try ProcessRunner.run("/usr/bin/ffmpeg", [
            "-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=330:duration=30.5:sample_rate=8000",
            "-metadata", "TITLE=Served Song", "-metadata", "ARTIST=The Servers", music + "/served.flac"])
        #expect(made.status == 0, "\(made.stderrText)")
        let standIn = try ListenBrainzStandIn(token: Self.token, folder: folder)
        let serve = try ServeProcess(music: music, folder: folder,
                                     extra: ["--listens-db", folder + "/listens.sqlite", "--listenbrainz-url", standIn.url,
                                             "--listenbrainz-token-file", Self.tokenFile(folder)],
                                     environment: Self.environment(folder))
        try serve.waitForLibrary(songs: 1)
        let client = try serve.client()
        _ = try client.command("add served.flac")
        _ = try client.command("play")
        let started = Date()
        #expect(Self.awaitCondition(timeout: 10) { standIn.requests.contains { $0["listen_type"] as? String == "playing_now" } })
        #expect(Self.awaitCondition(timeout: 40) { standIn.requests.contains { $0["listen_type"] as? String == "single" } })
        let counted = Date().timeIntervalSince(started)
        // 15.25 s must be heard first; position reports come every second under serve.
        #expect(counted >= 15 && counted < 20, "the listen went out \(counted) s after play")
        serve.stop()
        let row = try #require(try Self.history(folder).first)
        let heard = row["seconds_heard"] as? Double ?? 0
        #expect(heard >= 15.25 && heard < 17, "heard \(heard) s")
        #expect(row["state"] as? String == "delivered" && row["title"] as? String == "Served Song")
        #expect(standIn.accepted.count == 1)
    }

    @Test("an outage while the player runs: retried with back-off in the background, delivered once with its listened_at when the server is back")
    func outageWhilePlaying() throws {
        let folder = Self.folder()
        let port = try Self.downPort(folder)
        let player = try Self.controlledPlayer(folder, url: "http://127.0.0.1:\(port)")
        #expect(player.stdout.take(timeout: 20) { $0.contains(#""event":"listen""#) } != nil)
        // Down: the listen waits, pending, with the reason.
        #expect(Self.awaitCondition { ((try? Self.history(folder))?.first?["attempts"] as? Int ?? 0) >= 2 })
        let recorded = try #require(try Self.history(folder).first)
        #expect(recorded["state"] as? String == "pending" && (recorded["error"] as? String)?.isEmpty == false)
        let back = try ListenBrainzStandIn(token: Self.token, folder: folder, port: port)
        #expect(Self.awaitCondition(timeout: 30) { back.accepted.count == 1 })
        #expect(Self.awaitCondition { (try? Self.history(folder))?.first?["state"] as? String == "delivered" })
        let sent = (back.accepted.first?["listen"] as? [String: Any])?["listened_at"] as? Int
        #expect(sent != nil && sent == recorded["listened_at"] as? Int)
        player.write(#"{"message_id":1,"command":"quit"}"# + "\n")
        #expect(player.waitForExit(timeout: 10) == 0)
        #expect(back.accepted.count == 1 && back.requests.filter { $0["listen_type"] as? String != "playing_now" }.count == 1)
    }

    @Test("a refused token is not tried again until the token file changes; then the kept listen is delivered, one stderr line in all")
    func tokenReplaced() throws {
        let folder = Self.folder()
        let fresh = "fresh-\(UInt32.random(in: 100_000...999_999))-token"
        let standIn = try ListenBrainzStandIn(token: fresh, folder: folder)
        let player = try Self.controlledPlayer(folder, url: standIn.url)
        #expect(player.stderr.take(timeout: 20) { $0.contains("token") } != nil)
        #expect(Self.awaitCondition { ((try? Self.history(folder))?.first?["state"] as? String) == "pending" })
        let refused = standIn.requests.count
        _ = Self.tokenFile(folder, fresh)
        #expect(Self.awaitCondition(timeout: 20) { standIn.accepted.count == 1 })
        #expect(refused == 1)  // the playing_now's 401 stopped everything until the token changed
        player.write(#"{"message_id":1,"command":"quit"}"# + "\n")
        #expect(player.waitForExit(timeout: 10) == 0)
        #expect(player.stderr.all.count == 1, "\(player.stderr.all)")
        #expect(!player.stderr.all.joined().contains(fresh) && !player.stdout.all.joined().contains(fresh))
        #expect(try Self.history(folder).first?["state"] as? String == "delivered")
    }
}
