// The stored playlists' folder as a unit: names, the file format, atomic
// and serialised writes, links that must not let anything out, hostile
// files, and how playlist entries resolve — specs/mpd-protocol.md §Stored playlists.
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaCore
import HarmoniaLibrary
import HarmoniaTestSupport
import Testing
@testable import HarmoniaMPD

@Suite struct StoredPlaylistsTests {
    static let badName = MPDError(.arg, "Bad playlist name")

    /// The file's bytes; nil when it cannot be opened. Read with read(2):
    /// Foundation's `contents(atPath:)` leaks its buffer for an empty file
    /// (LeakSanitizer, `readBytesFromFile`), and an empty playlist is one.
    static func bytes(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = [], chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return n == 0 ? bytes : nil }
            bytes += chunk[0..<n]
        }
    }

    /// Names in the folder, hidden ones included.
    static func names(_ folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    @Test("names: empty, '/', CR, LF, NUL and too long are 'Bad playlist name' for every operation; '.', '..', blanks and UTF-8 are names")
    func names() throws {
        let tree = try TemporaryTree()
        let store = StoredPlaylists(directory: tree.root + "/playlists")
        let longest = String(repeating: "é", count: 125) + "x"  // 251 bytes + ".m3u" = 255
        for name in ["", "a/b", "../x", "/etc/passwd", "a\rb", "a\nb", "a\u{0}b", longest + "x"] {
            #expect(!StoredPlaylists.isValidName(name), "\(name.debugDescription)")
            #expect(throws: Self.badName) { try store.create(name, entries: ["a.flac"]) }
            #expect(throws: Self.badName) { try store.edit(name, createIfMissing: true) { $0.append("a.flac") } }
            #expect(throws: Self.badName) { try store.entries(of: name) }
            #expect(throws: Self.badName) { try store.remove(name) }
            #expect(throws: Self.badName) { try store.rename(name, to: "ok") }
            #expect(!store.exists(name))
        }
        #expect(Self.names(tree.root).isEmpty, "nothing was created for a bad name")
        for name in [".", "..", "a b", "Ünïcödé", longest, "#hash"] {
            try store.create(name, entries: ["loose/hires.flac"])
            #expect(try store.entries(of: name) == ["loose/hires.flac"])
        }
        #expect(Self.names(tree.root + "/playlists") == ["#hash.m3u", "...m3u", "..m3u", "Ünïcödé.m3u", "a b.m3u", longest + ".m3u"]
            .sorted())
        // Listed by name (bytes).
        #expect(try store.list().map(\.name) == ["#hash", ".", "..", "a b", "Ünïcödé", longest])
        try store.create("ok", entries: [])
        #expect(throws: Self.badName) { try store.rename("ok", to: "a/b") }
        #expect(throws: Self.badName) { try store.rename("ok", to: "") }
    }

    @Test("save: NAME.m3u, one entry a line, no #EXTM3U, an empty file for nothing; the folder made on the first write; an existing name refused")
    func fileFormat() throws {
        let tree = try TemporaryTree()
        let folder = tree.root + "/not/yet/there"
        let store = StoredPlaylists(directory: folder)
        #expect(try store.list().isEmpty, "a missing folder has no playlists")
        #expect(throws: MPDError.noSuchPlaylist) { try store.entries(of: "x") }
        #expect(!FileManager.default.fileExists(atPath: folder), "reading creates nothing")
        try store.create("mix", entries: ["Artist/Album/01 Ünïcödé.mp3", "http://example.com/stream.mp3", "loose/a b.flac"])
        #expect(Self.bytes(folder + "/mix.m3u") == Array("Artist/Album/01 Ünïcödé.mp3\nhttp://example.com/stream.mp3\nloose/a b.flac\n".utf8))
        try store.create("empty", entries: [])
        #expect(Self.bytes(folder + "/empty.m3u") == [])
        #expect(throws: MPDError(.exist, "Playlist already exists")) { try store.create("mix", entries: []) }
        #expect(try store.entries(of: "mix").count == 3, "a refused save changes nothing")
        #expect(throws: MPDError(.exist, "Playlist exists already")) { try store.rename("empty", to: "mix") }
        #expect(throws: MPDError.noSuchPlaylist) { try store.rename("gone", to: "new") }
        #expect(throws: MPDError.noSuchPlaylist) { try store.remove("gone") }
        #expect(throws: MPDError.noSuchPlaylist) { try store.edit("gone") { $0.removeAll() } }
        try store.rename("empty", to: "renamed")
        try store.remove("renamed")
        #expect(Self.names(folder) == ["mix.m3u"], "no temporary file is left")
        var mode = stat()
        #expect(stat(folder, &mode) == 0 && mode.st_mode & 0o777 == 0o700)
        let listed = try store.list()
        #expect(listed.map(\.name) == ["mix"])
        #expect(abs(listed[0].modified - Int64(Date().timeIntervalSince1970)) < 600)
    }

    @Test("an edit replaces the whole file or nothing: a refused edit leaves the old file, a leftover temporary file is not a playlist")
    func atomicEdits() throws {
        let tree = try TemporaryTree()
        let folder = tree.root + "/p"
        let store = StoredPlaylists(directory: folder)
        try store.create("a", entries: ["1.flac", "2.flac"])
        let before = Self.bytes(folder + "/a.m3u")
        #expect(throws: MPDError(.arg, "Bad range")) {
            try store.edit("a") { _ throws(MPDError) in throw MPDError(.arg, "Bad range") }
        }
        #expect(Self.bytes(folder + "/a.m3u") == before)
        #expect(throws: MPDError.tooLarge) {
            try store.edit("a") { $0 += Array(repeating: "x.flac", count: StoredPlaylists.maxEntries) }
        }
        #expect(Self.bytes(folder + "/a.m3u") == before)
        // What a kill -9 between the temporary file and the rename leaves.
        try tree.file("p/.harmonia-1-1.tmp", Array("half\n".utf8))
        #expect(try store.list().map(\.name) == ["a"])
        #expect(!FileManager.default.fileExists(atPath: folder + "/.harmonia-1-1.tmp"), "the listing removes what a crash left")
        try store.edit("a") { $0.insert("0.flac", at: 0) }
        #expect(try store.entries(of: "a") == ["0.flac", "1.flac", "2.flac"])
    }

    @Test("edits from many threads never interleave: every append is kept")
    func serialisedEdits() throws {
        let tree = try TemporaryTree()
        let store = StoredPlaylists(directory: tree.root + "/p")
        let failures = LockedValue(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for i in 0..<25 {
                do throws(MPDError) {
                    try store.edit("shared", createIfMissing: true) { $0.append("t\(thread)/\(i).flac") }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        let entries = try store.entries(of: "shared")
        #expect(entries.count == 200)
        #expect(Set(entries).count == 200)
        for thread in 0..<8 {  // each thread's own appends in its order
            #expect(entries.filter { $0.hasPrefix("t\(thread)/") } == (0..<25).map { "t\(thread)/\($0).flac" })
        }
    }

    @Test("two stores on one folder (two servers sharing it) never interleave: flock on the folder")
    func twoStoresOnOneFolder() throws {
        let tree = try TemporaryTree()
        // flock locks belong to an open file description: two stores are as two processes.
        let stores = [StoredPlaylists(directory: tree.root + "/p"), StoredPlaylists(directory: tree.root + "/p")]
        let failures = LockedValue(0)
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for i in 0..<25 {
                do throws(MPDError) {
                    try stores[thread % 2].edit("shared", createIfMissing: true) { $0.append("t\(thread)/\(i).flac") }
                } catch {
                    failures.withLock { $0 += 1 }
                }
            }
        }
        #expect(failures.withLock { $0 } == 0)
        #expect(Set(try stores[0].entries(of: "shared")).count == 200)
    }

    @Test("links in the folder are never followed: not read, not written through, removed as links; the target is untouched")
    func links() throws {
        let tree = try TemporaryTree()
        let outside = try TemporaryTree()
        try outside.file("secret.m3u", Array("/etc/passwd\n".utf8))
        try tree.folder("p")
        try tree.symlink("p/evil.m3u", to: outside.root + "/secret.m3u")
        try tree.symlink("p/dir.m3u", to: outside.root)
        let store = StoredPlaylists(directory: tree.root + "/p")
        #expect(try store.list().isEmpty, "links are not listed")
        #expect(store.exists("evil"))
        #expect(throws: MPDError.noSuchPlaylist) { try store.entries(of: "evil") }
        #expect(throws: MPDError.noSuchPlaylist) { try store.entries(of: "dir") }
        #expect(throws: MPDError.noSuchPlaylist) { try store.edit("evil", createIfMissing: true) { $0.append("x.flac") } }
        #expect(throws: MPDError(.exist, "Playlist already exists")) { try store.create("evil", entries: ["x.flac"]) }
        // A link planted where the next temporary file goes: O_EXCL refuses it.
        try tree.symlink("p/.harmonia-\(getpid())-1.tmp", to: outside.root + "/planted")
        _ = try? store.create("new", entries: ["x.flac"])
        #expect(!FileManager.default.fileExists(atPath: outside.root + "/planted"))
        try store.remove("evil")
        try store.rename("dir", to: "moved")
        #expect(Self.bytes(outside.root + "/secret.m3u") == Array("/etc/passwd\n".utf8))
        #expect(Self.names(outside.root) == ["secret.m3u"])
        #expect(Self.names(tree.root + "/p").contains("moved.m3u"))
    }

    @Test("a hostile file: huge lines, NUL and binary bytes, too many lines, too many bytes — bounded, one clear error at most")
    func hostileFiles() throws {
        let tree = try TemporaryTree()
        var text = Array(String(repeating: "x", count: 100_000).utf8) + [0x0A]
        text += [0x00, 0x01, 0xFF, 0xFE, 0x0A, 0x61, 0x00, 0x62, 0x0A] + Array("#EXTM3U\nok.flac\r\n\n".utf8)
        for i in 0..<20_000 { text += Array("n\(i).flac\n".utf8) }
        try tree.file("p/hostile.m3u", text)
        let store = StoredPlaylists(directory: tree.root + "/p")
        let entries = try store.entries(of: "hostile")
        #expect(entries.count == StoredPlaylists.maxEntries)
        #expect(entries.allSatisfy { $0.utf8.count <= PlaylistParsers.maxLineBytes && !$0.utf8.contains(0) })
        #expect(Array(entries.prefix(2)) == ["ok.flac", "n0.flac"], "the long line and the lines with NUL are skipped")
        #expect(!entries.contains { $0.hasPrefix("#") })
        // Larger than the bound: refused before it is read.
        let big = open(tree.root + "/p/big.m3u", O_WRONLY | O_CREAT, 0o644)
        #expect(big >= 0 && ftruncate(big, off_t(StoredPlaylists.maxFileBytes + 1)) == 0)
        close(big)
        #expect(throws: MPDError.tooLarge) { try store.entries(of: "big") }
        try tree.folder("p/folder.m3u")
        #expect(throws: MPDError.noSuchPlaylist) { try store.entries(of: "folder") }
        #expect(try store.list().map(\.name) == ["big", "hostile"])
    }

    @Test("a music folder playlist's entries: relative to its folder, '..' inside the music folder, outside skipped, URLs kept")
    func entryResolution() throws {
        let root = "/srv/music"
        func resolve(_ entry: String, _ folder: String = "loose") -> String? {
            PlaylistEntries.resolve(entry, folder: folder, root: root)
        }
        #expect(resolve("hires.flac") == "loose/hires.flac")
        #expect(resolve("../Other Artist/Second Album/02 Opus.opus") == "Other Artist/Second Album/02 Opus.opus")
        #expect(resolve("./sub/./a/../b.flac") == "loose/sub/b.flac")
        #expect(resolve("sub//c.flac") == "loose/sub/c.flac")
        #expect(resolve("../../etc/passwd") == nil)
        #expect(resolve("..") == nil)
        #expect(resolve(".") == "loose", "inside; not a song, so never queued")
        #expect(resolve(".", "") == nil)
        #expect(resolve("../x.flac", "") == nil, "a stored playlist's '..' leads out")
        #expect(resolve("/srv/music/loose/untagged.wav") == "loose/untagged.wav")
        #expect(resolve("/srv/musicx/a.flac") == nil)
        #expect(resolve("/etc/passwd") == nil)
        #expect(resolve("/srv/music/../etc/passwd") == nil)
        #expect(resolve("http://example.com/a.mp3") == "http://example.com/a.mp3")
        #expect(resolve("file:///etc/passwd") == nil)
        #expect(PlaylistEntries.kind(of: "loose/mix.m3u") == .m3u)
        #expect(PlaylistEntries.kind(of: "a/B.M3U8") == .m3u)
        #expect(PlaylistEntries.kind(of: "a/list.pls") == .pls)
        #expect(PlaylistEntries.kind(of: "a/sheet.cue") == nil)
        #expect(PlaylistEntries.kind(of: "a.m3u/folder") == nil)
        #expect(PlaylistEntries.parent(of: "loose/mix.m3u") == "loose")
        #expect(PlaylistEntries.parent(of: "top.m3u") == "")

        let m3u = "#EXTM3U\n#EXTINF:1,A - T\nhires.flac\n../Other/x.mp3\n../../etc/passwd\n/srv/music/y.flac\nhttp://h/s\n"
        #expect(PlaylistParsers.m3uEntries(m3u).map { resolve($0.location) } == ["loose/hires.flac", "Other/x.mp3", nil, "y.flac", "http://h/s"])
        let pls = "[playlist]\nFile2=../loose/untagged.wav\nFile1=hires.flac\nFile3=../../../x\nFile99999999999999999999=overflow.flac\nNumberOfEntries=3\n"
        #expect(try PlaylistParsers.plsEntries(pls, playlist: "loose/p.pls").map { resolve($0.location) }
                == ["loose/hires.flac", "loose/untagged.wav", nil])
    }
}
