// Offline copies checked as they are read, and offline add taking only what
// plays — specs/offline.md §Verified reads, §Downloads: a copy altered on
// disk never reaches the decoder; its changed block is fetched again with
// Range + If-Range (or the play stops with one line and the entry is marked
// damaged); verify repairs or removes; a page that is not audio is refused.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play offline copies, verified", .serialized) struct HarmoniaPlayOfflineVerifiedTests {
    typealias Offline = HarmoniaPlayOfflineTests
    /// 186,379 bytes: three 64 KiB blocks.
    static let flac = "flac_s24_stereo_96k.flac"

    /// Inverts `count` bytes of the file at `path` from `offset` (a disk that altered them).
    static func invert(_ path: String, at offset: Int, count: Int) throws {
        let handle = try #require(FileHandle(forUpdatingAtPath: path))
        defer { try? handle.close() }
        try handle.seek(toOffset: UInt64(offset))
        let bytes = try #require(try handle.read(upToCount: count))
        try handle.seek(toOffset: UInt64(offset))
        try handle.write(contentsOf: Data(bytes.map { ~$0 }))
    }

    /// A store holding a complete copy of `url` (checked), and its data file.
    static func storeWithCopy(_ url: String) throws -> (store: String, data: String) {
        let store = Offline.folder("store")
        let added = try Offline.offline(["add", "--store", store, url])
        try #require(added.status == 0, "\(added.stderrText)")
        return (store, try #require(Offline.dataFile(store)))
    }

    @Test("4 KiB altered on disk: the play fetches that block again (Range + If-Range), plays bit-exact, and the copy on disk is whole again")
    func alteredBlockRefetched() throws {
        let root = try Offline.root(with: Self.flac)
        let server = try FaultHTTPServer(root: root)
        let url = server.url(Self.flac)
        let (store, data) = try Self.storeWithCopy(url)
        try Self.invert(data, at: 90_000, count: 4096)
        let before = server.requests.count
        let (result, bytes) = try Offline.playToFile(["--store", store, url])
        let (_, local) = try Offline.playToFile([root + "/" + Self.flac])
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(!local.isEmpty && bytes == local, "the altered samples reached the output")
        let asked = Array(server.requests.dropFirst(before))
        #expect(asked.count == 1 && asked.first?.range == "bytes=65536-", "\(asked.map { $0.range ?? "whole" })")
        #expect(FileManager.default.contents(atPath: data) == FileManager.default.contents(atPath: root + "/" + Self.flac))
        #expect(try Offline.list(store).first?["complete"] as? Bool == true)
    }

    @Test("altered on disk with the server gone: the play stops with one line before the altered samples, the entry is listed damaged; verify with the server back repairs it")
    func alteredWithoutServer() throws {
        let root = try Offline.root(with: Self.flac)
        let server = try FaultHTTPServer(root: root)
        let url = server.url(Self.flac)
        let (store, data) = try Self.storeWithCopy(url)
        try Self.invert(data, at: 150_000, count: 4096)
        server.stop()
        let (result, bytes) = try Offline.playToFile(["--store", store, "--network-timeout", "2", url])
        let (_, local) = try Offline.playToFile([root + "/" + Self.flac])
        #expect(result.status == 1)
        let lines = result.stderrText.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("decodeError") && lines[0].contains("damaged at byte 131072"), "\(result.stderrText)")
        // What was played is the file's own audio, up to where the altered block begins.
        #expect(bytes.count < local.count && local.prefix(bytes.count) == bytes, "\(bytes.count) of \(local.count) bytes")
        let entry = try #require(try Offline.list(store).first)
        #expect(entry["complete"] as? Bool == false && entry["damaged"] as? Bool == true && entry["held"] as? Int == 131_072, "\(entry)")
        // The server back at the same address: verify fetches the one block and the copy is whole.
        let back = try FaultHTTPServer(root: root, port: server.port)
        let verified = try Offline.offline(["verify", "--store", store])
        #expect(verified.status == 0 && verified.stdoutText.contains("repaired"), "\(verified.stdoutText)\(verified.stderrText)")
        #expect(back.requests.map { $0.range ?? "whole" } == ["bytes=131072-"])
        #expect(FileManager.default.contents(atPath: data) == FileManager.default.contents(atPath: root + "/" + Self.flac))
        let listed = try #require(try Offline.list(store).first)
        #expect(listed["complete"] as? Bool == true && listed["damaged"] as? Bool == false)
    }

    @Test("altered on disk while the server has another version: never spliced — the play stops with one line; verify removes the copy (exit 1)")
    func alteredServerChanged() throws {
        let root = try Offline.root(with: Self.flac)
        let server = try FaultHTTPServer(root: root)
        let url = server.url(Self.flac)
        let (store, data) = try Self.storeWithCopy(url)
        try Self.invert(data, at: 70_000, count: 4096)
        // A new version on the server (a new ETag and other bytes).
        try Self.invert(root + "/" + Self.flac, at: 0, count: 186_379)
        let (result, _) = try Offline.playToFile(["--store", store, url])
        #expect(result.status == 1)
        #expect(result.stderrText.split(separator: "\n").count == 1 && result.stderrText.contains("damaged at byte 65536"), "\(result.stderrText)")
        try Self.invert(data, at: 0, count: 16)  // and one more block, to be sure verify looks at every one
        let verified = try Offline.offline(["verify", "--store", store])
        #expect(verified.status == 1 && verified.stderrText.contains("damaged copy removed"), "\(verified.stdoutText)\(verified.stderrText)")
        #expect(try Offline.holdsNothing(store))
    }

    @Test("a copy completed before block hashes were recorded: hashed whole at its first play; altered, it is fetched again, never played")
    func copyWithoutBlockHashes() throws {
        let root = try Offline.root(with: Self.flac)
        let server = try FaultHTTPServer(root: root)
        let url = server.url(Self.flac)
        let (store, data) = try Self.storeWithCopy(url)
        let cleared = try ProcessRunner.run("/usr/bin/sqlite3", [store + "/index.sqlite", "UPDATE entry SET block_hashes = NULL"])
        try #require(cleared.status == 0, "\(cleared.stderrText)")
        try Self.invert(data, at: 10_000, count: 4096)
        let (result, bytes) = try Offline.playToFile(["--store", store, url])
        let (_, local) = try Offline.playToFile([root + "/" + Self.flac])
        #expect(result.status == 0, "\(result.stderrText)")
        #expect(!local.isEmpty && bytes == local)
        #expect(FileManager.default.contents(atPath: data) == FileManager.default.contents(atPath: root + "/" + Self.flac))
        #expect(try Offline.list(store).first?["complete"] as? Bool == true)
    }

    @Test("offline add of a page that is not audio, served as application/octet-stream: exit 1, one line, nothing kept")
    func pageIsNotAudio() throws {
        let root = Offline.folder("root")
        let page = String(repeating: "This is a page of text, not a song. ", count: 261).prefix(9_400)
        try Data(page.utf8).write(to: URL(fileURLWithPath: root + "/song.mp3"))
        let server = try FaultHTTPServer(root: root)
        let store = Offline.folder("store")
        let result = try Offline.offline(["add", "--store", store, server.url("song.mp3")])
        #expect(result.status == 1)
        let lines = result.stderrText.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].contains("unsupported") && lines[0].contains("not audio"), "\(result.stderrText)")
        #expect(try Offline.holdsNothing(store))
    }
}
