// Tags with several values through `serve`, from outside: the MPD protocol
// line for line as real MPD 0.23 on the same files, and the JSON protocol's
// arrays (specs/library.md §Value lists, specs/control-protocol.md §Library).
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play serve: value lists", .serialized)
struct HarmoniaPlayServeTagListTests {
    static let python = "/usr/bin/python3"  // Debian's, with mutagen (python3-mutagen)
    static let available = ["/usr/bin/mpd", python].allSatisfy { FileManager.default.isExecutableFile(atPath: $0) }
    static let harness = Fixtures.repositoryRoot + "/Tests/MPD/mpd_diff.py"

    /// Tests/MPD/multi_value_tree.py's tree in a new folder; its song count.
    static func music(mp4Lists: Bool = false) throws -> (root: String, music: String, songs: Int) {
        let root = NSTemporaryDirectory() + "hp-lists-\(getpid())-\(UUID().uuidString.prefix(8))"
        let music = root + "/music"
        let made = try ProcessRunner.run(python, [Fixtures.repositoryRoot + "/Tests/MPD/multi_value_tree.py", music]
                                            + (mp4Lists ? ["--mp4-lists"] : []))
        guard made.status == 0 else { throw ServeTestError.didNotStart(made.stderrText) }
        return (root, music, made.stdoutText.split(separator: "\n").count)
    }

    @Test("lsinfo, find, search, list, count and groups answer as MPD 0.23 on files with several artists, genres, composers, performers and MusicBrainz ids", .enabled(if: available))
    func differential() throws {
        let (root, music, songs) = try Self.music()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let server = try ServeProcess(music: music, folder: root)
        defer { _ = server.stop() }
        try server.waitForLibrary(songs: songs)
        let result = try ProcessRunner.run(Self.python, [Self.harness, "against", "--port", String(server.port),
                                                         "--script", Fixtures.repositoryRoot + "/Tests/MPD/session_multivalue.txt",
                                                         "--music", music, "--tag-order", "--decoder-facts", "mp3,opus"])
        #expect(result.status == 0, "\(result.stdoutText.suffix(4000))\n\(result.stderrText.suffix(2000))")
        #expect(result.stdoutText.contains("equal:"))
    }

    @Test("an MP4 item's every value, a line each (MPD 0.23 shows the first); the JSON protocol's arrays", .enabled(if: available))
    func mp4AndJSON() throws {
        let (root, music, songs) = try Self.music(mp4Lists: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let socket = root + "/control.sock"
        let server = try ServeProcess(music: music, folder: root, extra: ["--control", "unix:" + socket])
        defer { _ = server.stop() }
        try server.waitForLibrary(songs: songs)
        let client = try server.client()
        let duet = try client.command("find file \"Multi/08 Duet.m4a\"")
        #expect(duet.filter { $0.hasPrefix("Artist: ") } == ["Artist: Björk", "Artist: Ólafur Arnalds"])
        #expect(duet.filter { $0.hasPrefix("Genre: ") } == ["Genre: Electronic", "Genre: Ambient"])
        #expect(duet.filter { $0.hasPrefix("MUSICBRAINZ_ARTISTID: ") }.count == 2)

        let control = try UnixLineClient(path: socket)
        control.write(#"{"message_id":1,"command":"library/search","args":{"query":"ólafur"}}"# + "\n")
        let answer = try #require(control.lines.take(where: { $0.contains("\"message_id\":1") })?.line)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(answer.utf8)) as? [String: Any])
        let found = try #require((json["result"] as? [String: Any])?["songs"] as? [[String: Any]])
        let together = try #require(found.first { $0["uri"] as? String == "Multi/01 Together.flac" }, "\(answer)")
        #expect(together["artists"] as? [String] == ["Björk", "Ólafur Arnalds"])
        #expect(together["artist"] as? String == "Björk; Ólafur Arnalds")
        #expect(together["genres"] as? [String] == ["Electronic", "Ambient"])
        #expect(found.map { $0["uri"] as? String ?? "" }.sorted()
                == ["Multi/01 Together.flac", "Multi/04 ID3v2.4.mp3", "Multi/05 ID3v2.3.mp3", "Multi/06 APE.wv", "Multi/08 Duet.m4a"])

        // A queued duet carries both artists in the queue (queue/items).
        #expect(try client.command("add \"Multi/01 Together.flac\"") == [])
        control.write(#"{"message_id":2,"command":"queue/items"}"# + "\n")
        let status = try #require(control.lines.take(where: { $0.contains("\"message_id\":2") })?.line)
        #expect(status.contains(#""artists":["Björk","Ólafur Arnalds"]"#), "\(status)")
    }
}
