// The stream cache and keys for signed URLs, with the real harmonia-play
// against Tests/Network/fault_server.py on loopback — specs/offline.md
// §Cache, §Keys, §Partial playback, §Crashes: a replay makes no request; the
// cache stays under its size and evicts the least recently played first;
// signed URLs find one entry; a cut stream keeps its partial and a replay
// fetches only the rest; radio is never cached; kill -9 leaves the index true.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play stream cache", .serialized) struct HarmoniaPlayCacheTests {
    typealias Offline = HarmoniaPlayOfflineTests
    static let flac = "flac_s16_stereo_44k.flac"
    static let flacSize = 57_533

    /// Plays `url` through the cache of `store` into a raw f32 file (`--cache` first, so a test's own wins).
    static func play(_ store: String, _ arguments: [String]) throws -> (ProcessResult, Data) {
        try Offline.playToFile(["--store", store] + (arguments.contains("--cache") ? [] : ["--cache", "10M"]) + arguments)
    }

    /// The PCM of the local fixture `name`.
    static func localPCM(_ name: String) throws -> Data {
        let (result, bytes) = try Offline.playToFile([Fixtures.named(name).path])
        #expect(result.status == 0 && !bytes.isEmpty)
        return bytes
    }

    /// Bytes of every data file in `store`.
    static func storedBytes(_ store: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []
        return names.filter { $0.hasSuffix(".data") }.reduce(0) { $0 + Offline.fileSize(store + "/" + $1) }
    }

    @Test("a streamed URL is kept (unpinned, complete); the second play makes no request and is bit-exact; offline add pins it")
    func replayWithoutRequest() throws {
        let server = try FaultHTTPServer()
        let store = Offline.folder("cache")
        let url = server.url(Self.flac)
        let (first, firstPCM) = try Self.play(store, [url])
        #expect(first.status == 0, "\(first.stderrText)")
        let entry = try #require(try Offline.list(store).first)
        #expect(entry["key"] as? String == url && entry["complete"] as? Bool == true && entry["pinned"] as? Bool == false)
        #expect(entry["size"] as? Int == Self.flacSize)
        let served = server.requests.count
        #expect(served == 1)
        let (second, secondPCM) = try Self.play(store, [url])
        #expect(second.status == 0, "\(second.stderrText)")
        #expect(server.requests.count == served, "the replay asked the server: \(server.requests.suffix(2))")
        let local = try Self.localPCM(Self.flac)
        #expect(firstPCM == local && secondPCM == local)
        // offline add of a cached URL pins it, with no request.
        #expect(try Offline.offline(["add", "--store", store, url]).status == 0)
        #expect(try Offline.list(store).first?["pinned"] as? Bool == true && server.requests.count == served)
        // --cache off: nothing is kept, a complete entry still plays from disk.
        let other = Offline.folder("cache-off")
        #expect(try Self.play(other, ["--cache", "off", url]).0.status == 0)
        #expect(try Offline.list(other).isEmpty)
    }

    @Test("20 plays under --cache 200K: never past the size, least recently played evicted first, offline copies kept")
    func evictsLeastRecentlyPlayed() throws {
        let server = try FaultHTTPServer()
        let store = Offline.folder("cache")
        let pinned = server.url("wav_s16_stereo_44k.wav")
        #expect(try Offline.offline(["add", "--store", store, pinned]).status == 0)
        let limit = 200 * 1024  // three entries of 57,533 bytes fit, four do not
        let wavBytes = Offline.fileSize(Offline.dataFile(store))
        func url(_ n: Int) -> String { server.url(Self.flac, "n=\(n)") }
        func keys() throws -> Set<String> {
            Set(try Offline.list(store).filter { $0["pinned"] as? Bool == false }.compactMap { $0["key"] as? String })
        }
        // 1, 2, 3; 1 again (from disk: now the most recent); 4 evicts 2, the least recently played.
        for n in [1, 2, 3, 1, 4] {
            let (result, _) = try Self.play(store, ["--cache", "200K", url(n)])
            #expect(result.status == 0, "\(result.stderrText)")
            #expect(Self.storedBytes(store) - wavBytes <= limit)
        }
        #expect(try keys() == [url(1), url(3), url(4)])
        for n in 5...20 {
            let (result, _) = try Self.play(store, ["--cache", "200K", url(n)])
            #expect(result.status == 0, "\(result.stderrText)")
            #expect(Self.storedBytes(store) - wavBytes <= limit, "after play \(n)")
        }
        #expect(try keys() == [url(18), url(19), url(20)])
        #expect(try Offline.list(store).contains { $0["key"] as? String == pinned && $0["complete"] as? Bool == true })
        // One entry larger than the whole cache is played, not kept.
        let (large, _) = try Self.play(store, ["--cache", "50K", server.url(Self.flac, "n=big")])
        #expect(large.status == 0, "\(large.stderrText)")
        #expect(try !keys().contains(server.url(Self.flac, "n=big")))
    }

    @Test("signed URLs: --cache-key-drop leaves the changing parameters out, so a new signature finds the entry; --key names it outright")
    func signedURLs() throws {
        let server = try FaultHTTPServer()
        let store = Offline.folder("cache")
        let drop = ["--cache-key-drop", "Expires", "--cache-key-drop", "X-Amz-*"]
        let (first, _) = try Self.play(store, drop + [server.url(Self.flac, "id=7&Expires=100&X-Amz-Signature=aa")])
        #expect(first.status == 0, "\(first.stderrText)")
        #expect(try Offline.list(store).first?["key"] as? String == server.url(Self.flac, "id=7"))
        let served = server.requests.count
        let (second, _) = try Self.play(store, drop + [server.url(Self.flac, "id=7&X-Amz-Signature=bb&Expires=200")])
        #expect(second.status == 0 && server.requests.count == served, "\(second.stderrText)")
        // --key: two tokens, one entry named "album/1".
        #expect(try Self.play(store, ["--key", "album/1", server.url("mp3_cbr_stereo_44k.mp3", "token=x")]).0.status == 0)
        let named = server.requests.count
        #expect(try Self.play(store, ["--key", "album/1", server.url("mp3_cbr_stereo_44k.mp3", "token=y")]).0.status == 0)
        #expect(server.requests.count == named)
        #expect(try Offline.list(store).contains { $0["key"] as? String == "album/1" })
    }

    /// Drops the `cutat` fault from the cache key, so a cut play and a whole one share an entry.
    static let dropCut = ["--cache-key-drop", "cutat"]

    /// Plays `flac` from `server` cut at byte 30,000 into the cache of `store` (it fails, exit 1): a partial entry.
    /// - Returns: what the cut play produced.
    static func cutPlay(_ server: FaultHTTPServer, _ store: String) throws -> Data {
        let (cut, pcm) = try play(store, dropCut + ["--network-timeout", "1", server.url(flac, "cutat=30000")])
        #expect(cut.status == 1)
        return pcm
    }

    @Test("a stream cut mid-way keeps its partial; the replay reads it from disk and asks (Range, If-Range) only for the rest")
    func partialThenRest() throws {
        let server = try FaultHTTPServer()
        let store = Offline.folder("cache")
        let drop = Self.dropCut
        _ = try Self.cutPlay(server, store)
        let partial = try #require(try Offline.list(store).first)
        #expect(partial["complete"] as? Bool == false && partial["held"] as? Int == 30_000 && partial["size"] as? Int == Self.flacSize)
        let before = server.requests.count
        let (replay, pcm) = try Self.play(store, drop + [server.url(Self.flac)])
        #expect(replay.status == 0, "\(replay.stderrText)")
        let asked = server.requests.dropFirst(before)
        #expect(asked.count == 1 && asked.first?.range == "bytes=30000-" && asked.first?.ifrange != nil, "\(Array(asked))")
        #expect(pcm == (try Self.localPCM(Self.flac)))
        #expect(try Offline.list(store).first?["complete"] as? Bool == true)
        #expect(FileManager.default.contentsEqual(atPath: Offline.dataFile(store)!, andPath: Fixtures.named(Self.flac).path))
    }

    @Test("with no network, a partial entry plays the bytes it holds, then fails in one line at their end; nothing spliced")
    func partialWithoutNetwork() throws {
        let server = try FaultHTTPServer()
        let store = Offline.folder("cache")
        let drop = Self.dropCut
        let cutPCM = try Self.cutPlay(server, store)
        #expect(try Offline.list(store).first?["held"] as? Int == 30_000)
        let url = server.url(Self.flac)
        server.stop()  // the same URL now refuses every connection
        let (offline, pcm) = try Self.play(store, drop + ["--network-timeout", "1", url])
        #expect(offline.status == 1)
        #expect(offline.stderrText.split(separator: "\n").count == 1, "\(offline.stderrText)")
        let local = try Self.localPCM(Self.flac)
        // What the held bytes decode to: as much as the cut play gave, the file's own samples.
        #expect(!pcm.isEmpty && pcm.count >= cutPCM.count && pcm == local.prefix(pcm.count), "\(pcm.count) of \(local.count) bytes; cut play \(cutPCM.count)")
        #expect(try Offline.list(store).first?["held"] as? Int == 30_000)
    }

    @Test("the file changed on the server between two plays (new ETag): the partial is started over from byte 0, never spliced")
    func changedBetweenPlays() throws {
        let root = try Offline.root(with: Self.flac)
        let server = try FaultHTTPServer(root: root)
        let store = Offline.folder("cache")
        let drop = Self.dropCut
        _ = try Self.cutPlay(server, store)
        #expect(try Offline.list(store).first?["held"] as? Int == 30_000)
        // Another version under the same name: another size and time, so another ETag.
        let other = "flac_s24_stereo_96k.flac"
        try FileManager.default.removeItem(atPath: root + "/" + Self.flac)
        try FileManager.default.copyItem(atPath: Fixtures.named(other).path, toPath: root + "/" + Self.flac)
        let (replay, pcm) = try Self.play(store, drop + [server.url(Self.flac)])
        #expect(replay.status == 0, "\(replay.stderrText)")
        #expect(pcm == (try Self.localPCM(other)))
        #expect(FileManager.default.contentsEqual(atPath: Offline.dataFile(store)!, andPath: Fixtures.named(other).path))
        #expect(try Offline.list(store).first?["size"] as? Int == 186_379)
    }

    @Test("the file changed on the server while it played: the read fails, the decoder never gets bytes of two versions, the entry holds one")
    func changedWhilePlaying() throws {
        let root = try Offline.root(with: Self.flac)
        let server = try FaultHTTPServer(root: root)
        let store = Offline.folder("cache")
        let output = Offline.folder("out") + "/pcm.f32"
        // The first response stops at byte 30,000 and hangs; the reconnect (after the 3 s stall timeout) meets another file.
        let player = try LineProcess.harmoniaPlay(["--store", store, "--cache", "10M", "--output", "file:" + output, "--quiet",
                                                   server.url(Self.flac, "stall=30000")])
        #expect(Offline.awaitCondition { Offline.fileSize(output) > 0 })  // the decoder has read bytes of the first version
        let other = "flac_s24_stereo_96k.flac"
        try FileManager.default.removeItem(atPath: root + "/" + Self.flac)
        try FileManager.default.copyItem(atPath: Fixtures.named(other).path, toPath: root + "/" + Self.flac)
        #expect(player.waitForExit(timeout: 30) == 1)
        #expect(player.stderr.all.joined().contains("changed on the server while it played"), "\(player.stderr.all)")
        let copy = try Data(contentsOf: URL(fileURLWithPath: try #require(Offline.dataFile(store))))
        let new = try Data(contentsOf: URL(fileURLWithPath: Fixtures.named(other).path))
        #expect(copy == new.prefix(copy.count), "the entry holds \(copy.count) bytes that are not the new version's")
        #expect(try Offline.list(store).first.map { $0["complete"] as? Bool == false || $0["size"] as? Int == new.count } == true)
    }

    @Test("a seek far ahead of the download reads that part from the network directly (not stored); the samples are the file's")
    func farSeek() throws {
        let directory = Offline.folder("long")
        let file = directory + "/long.flac"
        let made = try ProcessRunner.run("/usr/bin/ffmpeg", ["-loglevel", "error", "-f", "lavfi", "-i", "anoisesrc=r=44100:d=60:a=0.3:seed=7",
                                                             "-ac", "2", "-c:a", "flac", file])
        try #require(made.status == 0, "\(made.stderrText)")
        let server = try FaultHTTPServer(root: directory)
        let store = Offline.folder("cache")
        // 2 MB/s: the decoder's seek to 50 s lands megabytes beyond what has arrived.
        let (result, pcm) = try Self.play(store, ["--start", "50", server.url("long.flac", "rate=2000000")])
        #expect(result.status == 0, "\(result.stderrText)")
        let (_, local) = try Offline.playToFile(["--start", "50", file])
        #expect(!local.isEmpty && pcm == local)
        let far = server.requests.filter { ($0.range.flatMap { Int64($0.dropFirst(6).prefix { $0 != "-" }) } ?? 0) > 1 << 20 }
        #expect(!far.isEmpty && far.allSatisfy { $0.ifrange == nil }, "\(server.requests)")
        // What the entry holds is the file's own prefix, whatever the far reads fetched.
        let copy = try Data(contentsOf: URL(fileURLWithPath: try #require(Offline.dataFile(store))))
        let original = try Data(contentsOf: URL(fileURLWithPath: file))
        #expect(copy == original.prefix(copy.count))
    }

    @Test("a play that ends while its stream is still being kept exits cleanly (no signal at exit), and the entry holds the file's prefix")
    func exitWhileKeeping() throws {
        let directory = Offline.folder("long")
        let file = directory + "/long.flac"
        let made = try ProcessRunner.run("/usr/bin/ffmpeg", ["-loglevel", "error", "-f", "lavfi", "-i", "anoisesrc=r=44100:d=60:a=0.3:seed=9",
                                                             "-ac", "2", "-c:a", "flac", file])
        try #require(made.status == 0, "\(made.stderrText)")
        let original = try Data(contentsOf: URL(fileURLWithPath: file))
        let server = try FaultHTTPServer(root: directory)
        // The last second is played (read far ahead, from the network) long before the
        // 10 MB download ends: the process exits while the download thread writes and hashes.
        // Before the fix, OpenSSL's exit-time cleanup freed the locks that thread was using (SIGSEGV).
        for round in 1...6 {
            let store = Offline.folder("cache")
            let (result, pcm) = try Self.play(store, ["--start", "59", server.url("long.flac", "rate=20000000")])
            #expect(result.status == 0, "round \(round): exit \(result.status); \(result.stderrText)")
            #expect(!pcm.isEmpty)
            let entry = try #require(try Offline.list(store).first, "round \(round)")
            let copy = try Data(contentsOf: URL(fileURLWithPath: try #require(Offline.dataFile(store))))
            #expect(copy == original.prefix(copy.count), "round \(round)")
            #expect(entry["complete"] as? Bool == true || (entry["held"] as? Int).map { $0 <= copy.count } == true, "round \(round): \(entry)")
        }
    }

    @Test("a process exits while another of its threads is in libcrypto: no crash (OpenSSL's exit-time cleanup is off), 20 of 20")
    func exitsWhileLibcryptoIsInUse() throws {
        let server = try FaultHTTPServer()
        let store = Offline.folder("probe")
        #expect(try Offline.offline(["add", "--store", store, server.url(Self.flac)]).status == 0)
        // Before the fix, 13 of 20 runs died (SIGSEGV in CRYPTO_THREAD_read_lock, or EVP_DigestInit_ex failing).
        let probe = ProcessRunner.productsDirectory + "/harmonia-exit-probe"
        for run in 1...20 {
            let result = try ProcessRunner.run(probe, [store])
            #expect(result.status == 0, "run \(run): status \(result.status); \(result.stderrText.prefix(300))")
        }
    }

    @Test("radio is never cached: ICY answers and bodies with no length leave nothing in the store")
    func radioNotCached() throws {
        let server = try FaultHTTPServer()
        let store = Offline.folder("cache")
        for query in ["icy=16000", "chunked=1"] {
            let (result, _) = try Self.play(store, ["--network-timeout", "2", server.url("mp3_cbr_stereo_44k.mp3", query)])
            #expect(result.status == 0, "\(query): \(result.stderrText)")
        }
        #expect(try Offline.holdsNothing(store))
    }

    @Test("kill -9 during a cached play: nothing listed complete that is not, held bytes are the file's; the next play completes it")
    func killedWhilePlaying() throws {
        let server = try FaultHTTPServer()
        let store = Offline.folder("cache")
        let fixture = "flac_s24_stereo_96k.flac"
        let drop = ["--cache-key-drop", "rate"]
        let child = try LineProcess.harmoniaPlay(["--store", store, "--cache", "10M", "--output", "null", "--quiet"] + drop
                                                 + [server.url(fixture, "rate=40000")])
        #expect(Offline.awaitCondition { Offline.fileSize(Offline.dataFile(store)) >= 30_000 })
        kill(child.process.processIdentifier, SIGKILL)
        _ = child.waitForExit()
        let entry = try #require(try Offline.list(store).first)
        let onDisk = Offline.fileSize(Offline.dataFile(store))
        #expect(entry["complete"] as? Bool == false)
        let held = try #require(entry["held"] as? Int)
        #expect(held <= onDisk && onDisk < 186_379)
        let original = try Data(contentsOf: URL(fileURLWithPath: Fixtures.named(fixture).path))
        let copy = try Data(contentsOf: URL(fileURLWithPath: Offline.dataFile(store)!))
        #expect(copy == original.prefix(copy.count))
        #expect(try Offline.offline(["verify", "--store", store]).status == 0)
        let before = server.requests.count
        let (replay, _) = try Self.play(store, drop + [server.url(fixture)])
        #expect(replay.status == 0, "\(replay.stderrText)")
        #expect(server.requests.dropFirst(before).first?.range == "bytes=\(onDisk)-")
        #expect(try Offline.list(store).first?["complete"] as? Bool == true)
        #expect(FileManager.default.contentsEqual(atPath: Offline.dataFile(store)!, andPath: Fixtures.named(fixture).path))
    }

    @Test("a link that expires while it is cached: link_expired, renew, the entry completed from the fresh link at the same byte")
    func renewWhileCaching() throws {
        let server = try FaultHTTPServer()
        let store = Offline.folder("cache")
        let mp3 = "mp3_cbr_stereo_44k.mp3"
        let path = NSTemporaryDirectory() + "hp-cache-renew-\(getpid()).f32"
        defer { unlink(path) }
        let url = server.url(mp3, "stall=12000&expire=1")
        let player = try LineProcess.harmoniaPlay(["--store", store, "--cache", "10M", "--output", "file:" + path, "--control", "stdin", url])
        let expired = player.stdout.take(timeout: 30) { $0.contains(#""event":"link_expired""#) }
        #expect(expired?.line.contains(#""status":403"#) == true, "\(String(describing: expired))")
        let request: [String: Any] = ["message_id": 1, "command": "renew", "args": ["url": url, "new_url": server.url(mp3, "fresh=1")]]
        player.write(String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self) + "\n")
        #expect(player.stdout.take(timeout: 30) { $0.contains(#""event":"track_ended""#) && $0.contains("finished") } != nil)
        player.write(#"{"message_id":2,"command":"quit"}"# + "\n")
        #expect(player.waitForExit() == 0)
        #expect(FileManager.default.contents(atPath: path) == (try Self.localPCM(mp3)))
        #expect(server.requests.last?.path.contains("fresh=1") == true && server.requests.last?.range == "bytes=12000-")
        let entry = try #require(try Offline.list(store).first)
        #expect(entry["key"] as? String == url && entry["complete"] as? Bool == true)
        #expect(FileManager.default.contentsEqual(atPath: Offline.dataFile(store)!, andPath: Fixtures.named(mp3).path))
    }

    @Test("serve --cache: a URL an MPD client queues is kept as it plays, signed parameters dropped from its key")
    func serveCaches() throws {
        let server = try FaultHTTPServer()
        let store = Offline.folder("cache")
        let music = Offline.folder("music")
        let serve = try ServeProcess(music: music, folder: Offline.folder("serve"),
                                     extra: ["--store", store, "--cache", "10M", "--cache-key-drop", "sig"])
        defer { _ = serve.stop() }
        let client = try serve.client()
        #expect(try client.command("add \"\(server.url(Self.flac, "sig=abc"))\"") == [])
        #expect(try client.command("play") == [])
        #expect(Offline.awaitCondition { (try? Offline.list(store).first?["complete"] as? Bool) == true })
        let entry = try #require(try Offline.list(store).first)
        #expect(entry["key"] as? String == server.url(Self.flac) && entry["pinned"] as? Bool == false)
        #expect(FileManager.default.contentsEqual(atPath: Offline.dataFile(store)!, andPath: Fixtures.named(Self.flac).path))
    }
}
