// The offline store's index against its folder — specs/offline.md §Index, §Crashes, §Keys
import Foundation
@testable import HarmoniaOfflineStore
import HarmoniaTestSupport
import Testing

@Suite("Offline store") struct OfflineStoreTests {
    static func folder() -> String {
        let path = NSTemporaryDirectory() + "harmonia-offline-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("SHA-256: the FIPS 180-4 vectors, fed whole and in pieces")
    func sha256() {
        #expect(SHA256.hex(of: "") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hex(of: "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let long = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
        #expect(SHA256.hex(of: long) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        var pieces = SHA256()
        for byte in Array(long.utf8) { pieces.update([byte]) }
        #expect(pieces.finalizeHex() == SHA256.hex(of: long))
        var million = SHA256()
        let block = [UInt8](repeating: 0x61, count: 1000)
        for _ in 0..<1000 { million.update(block) }
        #expect(million.finalizeHex() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}

/// The index reconciled with the folder after simulated crashes.
@Suite("Offline store: crashes and damage") struct OfflineStoreCrashTests {
    /// A store at a new folder with one complete entry `key` holding `bytes`.
    static func storeWithEntry(_ key: String, _ bytes: [UInt8]) throws -> (OfflineStore, OfflineEntry) {
        let store = try OfflineStore(directory: OfflineStoreTests.folder())
        let entry = try store.entryCreating(key: key, url: "http://127.0.0.1/x")
        _ = FileManager.default.createFile(atPath: store.path(of: entry), contents: Data(bytes))
        try store.recordStart(key: key, url: "http://127.0.0.1/x", held: 0, size: Int64(bytes.count), etag: "\"e\"",
                              lastModified: nil, contentLength: Int64(bytes.count))
        try store.recordComplete(key: key, size: Int64(bytes.count), hash: SHA256.hex(of: String(decoding: bytes, as: UTF8.self)),
                                 blocks: nil)
        return (store, try #require(try store.entry(key: key)))
    }

    static let bytes = Array("the audio of a test entry, whole".utf8)

    @Test("a complete row whose file is missing is dropped on open, and verify names it")
    func rowWithoutFile() throws {
        let (store, entry) = try Self.storeWithEntry("a", Self.bytes)
        #expect(entry.complete)
        unlink(store.path(of: entry))
        let reopened = try OfflineStore(directory: store.directory)
        #expect(try reopened.entries().isEmpty)
        #expect(try reopened.verify().map(\.entry.key) == ["a"])
    }

    @Test("a partial row whose file is missing is kept, holding nothing (a download just starting looks so)")
    func partialRowWithoutFile() throws {
        let store = try OfflineStore(directory: OfflineStoreTests.folder())
        _ = try store.entryCreating(key: "p", url: "http://127.0.0.1/p")
        try store.recordStart(key: "p", url: "http://127.0.0.1/p", held: 300, size: 1000, etag: "\"e\"", lastModified: nil, contentLength: 1000)
        let reopened = try OfflineStore(directory: store.directory)
        let entry = try #require(try reopened.entry(key: "p"))
        #expect(!entry.complete && entry.held == 0)
    }

    @Test("a complete row whose file is short becomes partial at the file's length")
    func shortFile() throws {
        let (store, entry) = try Self.storeWithEntry("b", Self.bytes)
        #expect(truncate(store.path(of: entry), 10) == 0)
        let reopened = try OfflineStore(directory: store.directory)
        let found = try #require(try reopened.entry(key: "b"))
        #expect(!found.complete && found.held == 10 && found.size == Int64(Self.bytes.count))
    }

    @Test("a data file no row names is removed; other files are left alone")
    func fileWithoutRow() throws {
        let (store, _) = try Self.storeWithEntry("c", Self.bytes)
        let orphan = store.directory + "/" + offlineFileName(forKey: "never added")
        let notes = store.directory + "/notes.txt"
        _ = FileManager.default.createFile(atPath: orphan, contents: Data([1, 2, 3]))
        _ = FileManager.default.createFile(atPath: notes, contents: Data([1]))
        _ = try OfflineStore(directory: store.directory)
        #expect(!FileManager.default.fileExists(atPath: orphan))
        #expect(FileManager.default.fileExists(atPath: notes))
        #expect(try store.entry(key: "c")?.complete == true)
    }

    @Test("a partial row claiming more than its file holds is lowered to the file")
    func partialHeldAboveFile() throws {
        let store = try OfflineStore(directory: OfflineStoreTests.folder())
        let entry = try store.entryCreating(key: "d", url: "http://127.0.0.1/d")
        _ = FileManager.default.createFile(atPath: store.path(of: entry), contents: Data(repeating: 7, count: 100))
        try store.recordStart(key: "d", url: "http://127.0.0.1/d", held: 500, size: 1000, etag: "\"e\"", lastModified: nil, contentLength: 1000)
        try store.reconcile()
        #expect(try store.entry(key: "d")?.held == 100)
    }

    @Test("verify: a byte changed behind our back (same size) is found and removed")
    func verifyAltered() throws {
        let (store, entry) = try Self.storeWithEntry("e", Self.bytes)
        #expect(try store.verify().isEmpty)
        var altered = Self.bytes
        altered[5] ^= 0xFF
        _ = FileManager.default.createFile(atPath: store.path(of: entry), contents: Data(altered))
        let damaged = try store.verify()
        #expect(damaged.map(\.entry.key) == ["e"])
        #expect(damaged.first?.problem.contains("content changed") == true)
        #expect(try store.entries().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: store.path(of: entry)))
    }

    @Test("keys never reach a path: a key of '../', '/' and NUL names a hex file inside the folder")
    func hostileKeys() throws {
        let store = try OfflineStore(directory: OfflineStoreTests.folder())
        for key in ["../../../etc/passwd", "/absolute", "a\u{0}b", String(repeating: "x", count: 5000)] {
            let entry = try store.entryCreating(key: key, url: "http://127.0.0.1/")
            #expect(isOfflineFileName(entry.fileName))
            #expect(store.path(of: entry) == store.directory + "/" + entry.fileName)
        }
        #expect(try store.entries().count == 4)
    }

    @Test("numbers a hand put in the index are checked: held above size, complete without size, times no date holds (a negative size the schema refuses)")
    func hostileRows() throws {
        let store = try OfflineStore(directory: OfflineStoreTests.folder())
        _ = try store.entryCreating(key: "f", url: "http://127.0.0.1/f")
        try store.recordStart(key: "f", url: "http://127.0.0.1/f", held: 900, size: 100, etag: nil, lastModified: nil, contentLength: nil)
        var entry = try #require(try store.entry(key: "f"))
        #expect(entry.held == 100 && !entry.complete)
        let edit = try ProcessRunner.run("/usr/bin/python3", ["-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); "
            + "c.execute(\"UPDATE entry SET added=9e999, last_played=-9e300, size=NULL, complete=1\"); c.commit()", store.indexFile])
        #expect(edit.status == 0, "\(edit.stderrText)")
        entry = try #require(try store.entry(key: "f"))
        #expect(entry.added == 0 && entry.lastPlayed == nil && entry.size == nil && !entry.complete)
    }
}

/// The stream cache's eviction against the index — specs/offline.md §Cache.
@Suite("Offline store: cache eviction") struct OfflineCacheEvictionTests {
    /// A complete cached (or pinned) entry `key` of `size` bytes, played at `played`.
    static func add(_ store: OfflineStore, _ key: String, size: Int, pinned: Bool = false, played: Double) throws {
        let entry = try store.entryCreating(key: key, url: "http://127.0.0.1/" + key, pinned: pinned)
        _ = FileManager.default.createFile(atPath: store.path(of: entry), contents: Data(count: size))
        try store.recordStart(key: key, url: entry.url, held: 0, size: Int64(size), etag: "\"e\"", lastModified: nil, contentLength: Int64(size))
        try store.recordComplete(key: key, size: Int64(size), hash: "x", blocks: nil)
        try store.run("UPDATE entry SET last_played = ? WHERE key = ?", [.real(played), .text(key)])
    }

    @Test("least recently played first; pinned and playing entries stay; too large evicts nothing")
    func evictionOrder() throws {
        let store = try OfflineStore(directory: OfflineStoreTests.folder())
        try Self.add(store, "old", size: 100, played: 1)
        try Self.add(store, "playing", size: 100, played: 0)
        try Self.add(store, "recent", size: 100, played: 3)
        try Self.add(store, "middle", size: 100, played: 2)
        try Self.add(store, "pinned", size: 1000, pinned: true, played: 0)
        #expect(try store.cachedBytes() == 400)
        // 400 cached + 250 new under 450: two go, the least recently played ("playing" is kept).
        #expect(try store.makeRoom(for: "new", total: 250, limit: 450, keeping: ["playing"]))
        #expect(Set(try store.entries().map(\.key)) == ["playing", "recent", "pinned"])
        // Larger than the limit, or than what must stay allows: nothing is evicted.
        #expect(try !store.makeRoom(for: "huge", total: 451, limit: 450, keeping: []))
        #expect(try !store.makeRoom(for: "big", total: 350, limit: 450, keeping: ["playing", "recent"]))
        #expect(try store.entries().count == 3)
        #expect(try store.makeRoom(for: "big", total: 350, limit: 450, keeping: ["playing"]))
        #expect(Set(try store.entries().map(\.key)) == ["playing", "pinned"])
    }
}
