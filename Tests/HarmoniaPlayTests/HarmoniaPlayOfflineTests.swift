// harmonia-play offline add|list|remove|verify against a real server on
// loopback (Tests/Network/fault_server.py) — specs/offline.md §Downloads,
// §Crashes, §Commands: resuming after kill -9 with a Range for exactly the
// missing bytes, a changed ETag and a 200 for a 206 starting over, short
// bodies kept partial, what is refused, two processes at once, damage found
// by verify, a full disk.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play offline", .serialized) struct HarmoniaPlayOfflineTests {
    static let flac = "flac_s24_stereo_96k.flac"

    /// A fresh folder under the temporary directory.
    static func folder(_ name: String) -> String {
        let path = NSTemporaryDirectory() + "hp-offline-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A server root holding a copy of `fixture` (a test may rewrite it).
    static func root(with fixture: String) throws -> String {
        let root = folder("root")
        try FileManager.default.copyItem(atPath: Fixtures.named(fixture).path, toPath: root + "/" + fixture)
        return root
    }

    static func offline(_ arguments: [String]) throws -> ProcessResult {
        try bounded(["offline"] + arguments)
    }

    /// harmonia-play with `arguments`, killed after 120 s (exit 124): a hang fails the test, not the suite.
    static func bounded(_ arguments: [String]) throws -> ProcessResult {
        try ProcessRunner.run("/usr/bin/timeout", ["120", ProcessRunner.productsDirectory + "/harmonia-play"] + arguments)
    }

    /// `offline list --json` as objects.
    static func list(_ store: String) throws -> [[String: Any]] {
        let result = try offline(["list", "--store", store, "--json"])
        #expect(result.status == 0, "\(result.stderrText)")
        return try #require(JSONSerialization.jsonObject(with: result.stdout) as? [[String: Any]], "\(result.stdoutText)")
    }

    /// The one data file of the store (nil when there is none).
    static func dataFile(_ store: String) -> String? {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: store)) ?? []
        return names.first { $0.hasSuffix(".data") }.map { store + "/" + $0 }
    }

    /// Whether the store lists no entry and holds no data file.
    static func holdsNothing(_ store: String) throws -> Bool {
        try list(store).isEmpty && dataFile(store) == nil
    }

    static func fileSize(_ path: String?) -> Int {
        guard let path, let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return 0 }
        return (attributes[.size] as? Int) ?? 0
    }

    /// Waits (polling every 10 ms, at most `timeout` s) until `condition` holds.
    static func awaitCondition(timeout: Double = 20, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }

    @Test("add, then list --json: key, url, size, complete, pinned, added; the file bit-exact")
    func addAndList() throws {
        let server = try FaultHTTPServer()
        let store = Self.folder("store")
        let url = server.url(Self.flac)
        let result = try Self.offline(["add", "--store", store, url])
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(result.stdoutText.contains("complete"))
        let entries = try Self.list(store)
        let entry = try #require(entries.first)
        #expect(entries.count == 1)
        #expect(entry["key"] as? String == url && entry["url"] as? String == url)
        let size = try Data(contentsOf: URL(fileURLWithPath: Fixtures.named(Self.flac).path)).count
        #expect(entry["size"] as? Int == size && entry["held"] as? Int == size)
        #expect(entry["complete"] as? Bool == true && entry["pinned"] as? Bool == true)
        #expect((entry["added"] as? String)?.hasSuffix("Z") == true)
        #expect((entry["sha256"] as? String)?.count == 64)
        let copy = try #require(Self.dataFile(store))
        #expect(FileManager.default.contentsEqual(atPath: copy, andPath: Fixtures.named(Self.flac).path))
        // Adding it again asks nothing more.
        let before = server.requests.count
        #expect(try Self.offline(["add", "--store", store, url]).status == 0)
        #expect(server.requests.count == before)
        // remove by URL frees the file.
        #expect(try Self.offline(["remove", "--store", store, url]).status == 0)
        #expect(try Self.list(store).isEmpty && Self.dataFile(store) == nil)
        let missing = try Self.offline(["remove", "--store", store, url])
        #expect(missing.status == 1 && missing.stderrText.hasPrefix("harmonia-play: ") && missing.stderrText.contains("notFound"))
    }

    @Test("refused, one line each, nothing complete: 404, text/plain, radio, file:, not a URL")
    func refused() throws {
        let server = try FaultHTTPServer()
        let store = Self.folder("store")
        for url in [server.url("missing.flac"), server.url(Self.flac, "type=text/plain"), server.url("mp3_cbr_stereo_44k.mp3", "icy=8192"),
                    "file://" + Fixtures.named(Self.flac).path, "not a url"] {
            let result = try Self.offline(["add", "--store", store, url])
            #expect(result.status == 1, "\(url)")
            let lines = result.stderrText.split(separator: "\n")
            #expect(lines.count == 1 && lines.first?.hasPrefix("harmonia-play: ") == true, "\(result.stderrText)")
        }
        #expect(try Self.holdsNothing(store))
    }

    @Test("a body shorter than announced is partial, never complete; the next run completes it with a Range")
    func shortBody() throws {
        let server = try FaultHTTPServer()
        let store = Self.folder("store")
        let cut = try Self.offline(["add", "--store", store, "--key", "k", "--network-timeout", "1", server.url(Self.flac, "cutat=50000")])
        #expect(cut.status == 1 && cut.stderrText.contains("partial"), "\(cut.stderrText)")
        let entry = try #require(try Self.list(store).first)
        #expect(entry["complete"] as? Bool == false && entry["held"] as? Int == 50_000)
        let resumed = try Self.offline(["add", "--store", store, "--key", "k", server.url(Self.flac)])
        #expect(resumed.status == 0, "\(resumed.stderrText)")
        let last = try #require(server.requests.last)
        #expect(last.range == "bytes=50000-" && last.ifrange != nil)
        #expect(FileManager.default.contentsEqual(atPath: Self.dataFile(store)!, andPath: Fixtures.named(Self.flac).path))
    }

    @Test("a server lying about the total on resume (a 206 declaring another size): started over, never spliced, never complete")
    func lyingTotal() throws {
        let server = try FaultHTTPServer()
        let store = Self.folder("store")
        _ = try Self.offline(["add", "--store", store, "--key", "k", "--network-timeout", "1", server.url(Self.flac, "cutat=40000")])
        let lie = try Self.offline(["add", "--store", store, "--key", "k", "--network-timeout", "1", server.url(Self.flac, "lietotal=1")])
        #expect(lie.status == 1 && lie.stderrText.split(separator: "\n").count == 1, "\(lie.stderrText)")
        let requests = server.requests.filter { $0.path.contains("lietotal") }
        #expect(requests.first?.range == "bytes=40000-" && requests.dropFirst().first?.range == nil)  // resumed, then from byte 0
        let entry = try #require(try Self.list(store).first)
        #expect(entry["complete"] as? Bool == false && entry["held"] as? Int == 0)
        #expect(Self.fileSize(Self.dataFile(store)) == 0)
    }

    @Test("a server cutting every connection at the same offset: given up within 25 s, partial")
    func cutEveryTime() throws {
        let server = try FaultHTTPServer()
        let store = Self.folder("store")
        let started = Date()
        let result = try Self.offline(["add", "--store", store, server.url(Self.flac, "cutat=30000")])
        #expect(result.status == 1 && Date().timeIntervalSince(started) < 25)
        #expect(try Self.list(store).first?["complete"] as? Bool == false)
    }

    @Test("kill -9 mid-download: the next run asks for exactly the missing bytes, and the copy is bit-exact")
    func killedAndResumed() throws {
        let server = try FaultHTTPServer()
        let store = Self.folder("store")
        let child = try LineProcess.harmoniaPlay(["offline", "add", "--store", store, "--key", "k", server.url(Self.flac, "rate=40000")])
        #expect(Self.awaitCondition { Self.fileSize(Self.dataFile(store)) >= 30_000 })
        kill(child.process.processIdentifier, SIGKILL)
        _ = child.waitForExit()
        let had = Self.fileSize(Self.dataFile(store))
        #expect(had >= 30_000 && had < 186_379)
        #expect(try Self.list(store).first?["complete"] as? Bool == false)
        let resumed = try Self.offline(["add", "--store", store, "--key", "k", server.url(Self.flac)])
        #expect(resumed.status == 0, "\(resumed.stderrText)")
        let last = try #require(server.requests.last)
        #expect(last.range == "bytes=\(had)-", "\(String(describing: last.range)) after \(had) bytes")
        #expect(FileManager.default.contentsEqual(atPath: Self.dataFile(store)!, andPath: Fixtures.named(Self.flac).path))
    }

    @Test("killed after the last byte but before the row said complete: the next run completes it with no request")
    func killedAtTheEnd() throws {
        let server = try FaultHTTPServer()
        let store = Self.folder("store")
        let url = server.url(Self.flac)
        #expect(try Self.offline(["add", "--store", store, url]).status == 0)
        let hash = try #require(try Self.list(store).first?["sha256"] as? String)
        // The index as that kill leaves it (python3's sqlite3, as the fault server needs python3 anyway).
        let edit = try ProcessRunner.run("/usr/bin/python3", ["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
            + "c.execute('UPDATE entry SET complete=0, held=0, content_hash=NULL'); c.commit()", store + "/index.sqlite"])
        #expect(edit.status == 0, "\(edit.stderrText)")
        #expect(try Self.list(store).first?["complete"] as? Bool == false)
        let before = server.requests.count
        #expect(try Self.offline(["add", "--store", store, url]).status == 0)
        #expect(server.requests.count == before)
        let entry = try #require(try Self.list(store).first)
        #expect(entry["complete"] as? Bool == true && entry["sha256"] as? String == hash)
    }

    @Test("the file changed on the server (a new ETag): the download starts over at byte 0, never spliced")
    func changedETag() throws {
        let root = try Self.root(with: Self.flac)
        let server = try FaultHTTPServer(root: root)
        let store = Self.folder("store")
        let cut = try Self.offline(["add", "--store", store, "--key", "k", "--network-timeout", "1", server.url(Self.flac, "cutat=50000")])
        #expect(cut.status == 1)
        // A new version: another file's bytes under the same name (a new mtime and size, so a new ETag).
        let replacement = Fixtures.named("wav_s16_stereo_44k.wav").path
        try FileManager.default.removeItem(atPath: root + "/" + Self.flac)
        try FileManager.default.copyItem(atPath: replacement, toPath: root + "/" + Self.flac)
        let again = try Self.offline(["add", "--store", store, "--key", "k", server.url(Self.flac)])
        #expect(again.status == 0, "\(again.stderrText)")
        let last = try #require(server.requests.last)
        #expect(last.range == "bytes=50000-" && last.ifrange != nil)  // asked to resume; the server said 200
        #expect(FileManager.default.contentsEqual(atPath: Self.dataFile(store)!, andPath: replacement))
        #expect(try Self.list(store).first?["complete"] as? Bool == true)
    }

    @Test("a 200 where a 206 was asked: started over cleanly, the copy whole")
    func wholeForRange() throws {
        let server = try FaultHTTPServer()
        let store = Self.folder("store")
        _ = try Self.offline(["add", "--store", store, "--key", "k", "--network-timeout", "1", server.url(Self.flac, "cutat=40000")])
        let result = try Self.offline(["add", "--store", store, "--key", "k", server.url(Self.flac, "norange=1")])
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(server.requests.last?.range == "bytes=40000-")
        #expect(FileManager.default.contentsEqual(atPath: Self.dataFile(store)!, andPath: Fixtures.named(Self.flac).path))
    }

    @Test("two processes add the same URL at once: both succeed, one complete entry, bit-exact")
    func twoProcesses() throws {
        let server = try FaultHTTPServer()
        let store = Self.folder("store")
        let url = server.url(Self.flac, "rate=400000")
        let first = try LineProcess.harmoniaPlay(["offline", "add", "--store", store, url])
        let second = try LineProcess.harmoniaPlay(["offline", "add", "--store", store, url])
        #expect(first.waitForExit(timeout: 30) == 0, "\(first.stderr.all)")
        #expect(second.waitForExit(timeout: 30) == 0, "\(second.stderr.all)")
        let entries = try Self.list(store)
        #expect(entries.count == 1 && entries.first?["complete"] as? Bool == true)
        #expect(FileManager.default.contentsEqual(atPath: Self.dataFile(store)!, andPath: Fixtures.named(Self.flac).path))
    }

    @Test("two processes create the same new store at once: both open it (the WAL switch is retried while busy), 30 rounds")
    func twoProcessesCreateTheStore() throws {
        // Before the retry, 43 of 120 such processes failed with 'database is locked'.
        for round in 1...30 {
            let store = Self.folder("new") + "/store"
            let first = try LineProcess.harmoniaPlay(["offline", "list", "--store", store])
            let second = try LineProcess.harmoniaPlay(["offline", "list", "--store", store])
            #expect(first.waitForExit(timeout: 30) == 0, "round \(round): \(first.stderr.all)")
            #expect(second.waitForExit(timeout: 30) == 0, "round \(round): \(second.stderr.all)")
        }
    }

    @Test("verify: a truncated copy is named, removed, exit 1; a clean store exits 0")
    func verifyTruncated() throws {
        let server = try FaultHTTPServer()
        let store = Self.folder("store")
        #expect(try Self.offline(["add", "--store", store, "--key", "k", server.url(Self.flac)]).status == 0)
        let clean = try Self.offline(["verify", "--store", store])
        #expect(clean.status == 0 && clean.stdoutText.contains("1 complete, 0 damaged"), "\(clean.stdoutText)\(clean.stderrText)")
        #expect(truncate(Self.dataFile(store)!, 1000) == 0)
        let damaged = try Self.offline(["verify", "--store", store])
        #expect(damaged.status == 1)
        #expect(damaged.stderrText.hasPrefix("harmonia-play: k: "), "\(damaged.stderrText)")
        #expect(try Self.list(store).allSatisfy { $0["complete"] as? Bool != true })
    }

    /// Plays `arguments` into a raw f32 file; returns the run and the samples' bytes.
    static func playToFile(_ arguments: [String]) throws -> (ProcessResult, Data) {
        let path = NSTemporaryDirectory() + "hp-offline-\(getpid())-\(UInt32.random(in: 0...UInt32.max)).f32"
        defer { unlink(path) }
        let result = try bounded(["--output", "file:" + path] + arguments)
        return (result, FileManager.default.contents(atPath: path) ?? Data())
    }

    @Test("play of a complete copy with the server stopped: no request, bit-exact with the local file; a partial one goes to the network")
    func playOffline() throws {
        let server = try FaultHTTPServer()
        let store = Self.folder("store")
        let url = server.url(Self.flac)
        #expect(try Self.offline(["add", "--store", store, url]).status == 0)
        let served = server.requests.count
        server.stop()
        let (result, bytes) = try Self.playToFile(["--store", store, url])
        let (_, local) = try Self.playToFile([Fixtures.named(Self.flac).path])
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(!local.isEmpty && bytes == local)
        // decode too, and with a seek (the copy is seekable): the local file's PCM exactly.
        for start in [[], ["--start-frame", "20000"]] {
            let offline = try ProcessRunner.harmoniaPlay(["decode", "--store", store, "-o", "-"] + start + [url])
            let straight = try ProcessRunner.harmoniaPlay(["decode", "-o", "-"] + start + [Fixtures.named(Self.flac).path])
            #expect(offline.status == 0 && !straight.stdout.isEmpty && offline.stdout == straight.stdout, "\(offline.stderrText)")
        }
        #expect(server.requests.count == served)
        #expect(try Self.list(store).first?["last_played"] is String)
        // A copy cut short on disk is not played from disk: with the server gone, the play fails.
        #expect(truncate(Self.dataFile(store)!, 1000) == 0)
        let (cut, _) = try Self.playToFile(["--store", store, "--network-timeout", "1", url])
        #expect(cut.status == 1)
    }

    @Test("on a terminal: a progress bar (percent, bytes, rate, time left) on stderr; then the one line")
    func progressBar() throws {
        let server = try FaultHTTPServer()
        let store = Self.folder("store")
        let terminal = try PseudoTerminal(ProcessRunner.productsDirectory + "/harmonia-play",
                                          ["offline", "add", "--store", store, server.url(Self.flac, "rate=300000")])
        try terminal.wait(for: "ETA", timeout: 20)
        try terminal.wait(for: "bytes, complete", timeout: 20)
        #expect(try terminal.waitForExit(timeout: 20) == .exited(0))
        let bar = try #require(terminal.output.components(separatedBy: "\r\u{1B}[K").first { $0.contains("ETA") })
        #expect(bar.contains("%") && bar.contains("KB") && bar.contains("/s"), "\(bar.debugDescription)")
    }

    @Test("two processes on one store: a play from disk while an add downloads another URL")
    func playWhileAdding() throws {
        let server = try FaultHTTPServer()
        let store = Self.folder("store")
        let url = server.url("wav_s16_stereo_44k.wav")
        #expect(try Self.offline(["add", "--store", store, url]).status == 0)
        let adding = try LineProcess.harmoniaPlay(["offline", "add", "--store", store, server.url(Self.flac, "rate=100000")])
        #expect(Self.awaitCondition { (try? Self.list(store).count) == 2 })
        let (played, bytes) = try Self.playToFile(["--store", store, url])
        let (_, local) = try Self.playToFile([Fixtures.named("wav_s16_stereo_44k.wav").path])
        #expect(played.status == 0 && !local.isEmpty && bytes == local, "\(played.stderrText)")
        #expect(adding.waitForExit(timeout: 30) == 0, "\(adding.stderr.all)")
        let entries = try Self.list(store)
        #expect(entries.count == 2 && entries.allSatisfy { $0["complete"] as? Bool == true })
    }

    /// Whether this process may mount a tmpfs (root, and a kernel that lets it): the full-disk test needs one.
    static let canMountTmpfs: Bool = {
        let point = folder("tmpfs-probe")
        guard let mounted = try? ProcessRunner.run("/bin/mount", ["-t", "tmpfs", "-o", "size=64k", "tmpfs", point]), mounted.status == 0 else { return false }
        _ = try? ProcessRunner.run("/bin/umount", [point])
        return true
    }()

    @Test("a full disk (a small tmpfs): a one-line error, nothing listed complete",
          .enabled(if: canMountTmpfs, "skipped: mounting a tmpfs failed here (it needs root and a kernel that allows it)"))
    func diskFull() throws {
        let mountPoint = Self.folder("tmpfs")
        let mounted = try ProcessRunner.run("/bin/mount", ["-t", "tmpfs", "-o", "size=160k", "tmpfs", mountPoint])
        try #require(mounted.status == 0, "\(mounted.stderrText)")
        defer { _ = try? ProcessRunner.run("/bin/umount", [mountPoint]) }
        let server = try FaultHTTPServer()
        let result = try Self.offline(["add", "--store", mountPoint + "/store", server.url(Self.flac)])
        #expect(result.status == 1)
        #expect(result.stderrText.split(separator: "\n").count == 1 && result.stderrText.contains("full"), "\(result.stderrText)")
        let listed = try Self.offline(["list", "--store", mountPoint + "/store", "--json"])
        if listed.status == 0, let entries = try? JSONSerialization.jsonObject(with: listed.stdout) as? [[String: Any]] {
            #expect(entries.allSatisfy { $0["complete"] as? Bool != true })
        }
    }
}
