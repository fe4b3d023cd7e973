// harmonia-play serve, driven from outside as users drive it: the same
// sessions as real MPD, mpc and python-mpd2, security, signals, a killed
// scan, state after SIGKILL, paced file output (specs/mpd-protocol.md,
// specs/application.md).
import Foundation
import HarmoniaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("harmonia-play serve", .serialized)
struct HarmoniaPlayServeTests {
    static let python = "/usr/bin/python3"  // Debian's, with python-mpd2 (python3-mpd)
    static let harness = Fixtures.repositoryRoot + "/Tests/MPD/mpd_diff.py"
    /// The harness's tree: 6 songs with ffmpeg-written tags and fixed times.
    static let musicSongs = 6

    static func folder(_ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "hp-serve-\(name)-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The differential harness's music tree in a new folder.
    static func music() throws -> String {
        let dir = try folder("music") + "/music"
        let made = try ProcessRunner.run(python, [harness, "make-music", dir])
        guard made.status == 0 else { throw ServeTestError.didNotStart(made.stderrText) }
        return dir
    }

    @Test("the same sessions answer as MPD 0.23 does: the player's (status, playback, the queue, ids, versions, idle), the database's (browse, find, search, list, count, covers, paths) and the stored playlists' (save, load, edits, names, errors)",
          arguments: ["session_player.txt", "session_database.txt", "session_playlists.txt"])
    func differential(_ session: String) throws {
        let music = try Self.music(), dir = try Self.folder("diff")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ServeProcess(music: music, folder: dir)
        defer { _ = server.stop() }
        try server.waitForLibrary(songs: Self.musicSongs)
        // Normalised as the harness says (ids, versions, times), and the MP3 and
        // Opus songs' decoder facts: MPD's own decoders count the encoders' padding.
        let result = try ProcessRunner.run(Self.python, [Self.harness, "against", "--port", String(server.port),
                                                         "--script", Fixtures.repositoryRoot + "/Tests/MPD/" + session,
                                                         "--music", music, "--tag-order", "--decoder-facts", "mp3,opus"])
        #expect(result.status == 0, "\(result.stdoutText.suffix(4000))\n\(result.stderrText.suffix(2000))")
        #expect(result.stdoutText.contains("equal:"))
    }

    @Test("mpc and python-mpd2 drive it: add, play, pause, volume, modes, idle")
    func realClients() throws {
        let music = try Self.music(), dir = try Self.folder("clients")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ServeProcess(music: music, folder: dir)
        defer { _ = server.stop() }
        try server.waitForLibrary(songs: Self.musicSongs)
        func mpc(_ arguments: String...) throws -> String {
            let result = try ProcessRunner.run("/usr/bin/mpc", ["-h", "127.0.0.1", "-p", String(server.port)] + arguments)
            #expect(result.status == 0, "mpc \(arguments): \(result.stderrText)")
            return result.stdoutText
        }
        _ = try mpc("add", "Other Artist")
        #expect(try mpc("playlist") == "Other Artist - Ünïcödé Title\nOther Artist - Opus Track\n")
        #expect(try mpc("play").contains("[playing] #1/2"))
        #expect(try mpc("pause").contains("[paused]"))
        #expect(try mpc("volume", "30").contains("volume: 30%"))
        let modes = try mpc("repeat", "on")
        #expect(modes.contains("repeat: on") && modes.contains("random: off"))
        #expect(try mpc("current", "-f", "%artist% / %album% / %title%") == "Other Artist / Second Album / Ünïcödé Title\n")
        #expect(try mpc("stop").contains("volume: 30%"))

        let script = Fixtures.repositoryRoot + "/Tests/MPD/clients_python_mpd2.py"
        let python = try ProcessRunner.run(Self.python, [script, String(server.port)])
        #expect(python.status == 0, "\(python.stdoutText)\n\(python.stderrText)")
    }

    @Test("stored playlists: kept in --playlist-dir as MPD writes them; every change wakes idle clients with stored_playlist; a music folder playlist's hostile entries are skipped")
    func storedPlaylists() throws {
        let help = try ProcessRunner.harmoniaPlay(["serve", "--help"])
        #expect(help.stdoutText.contains("--playlist-dir"))
        let music = try Self.music(), dir = try Self.folder("playlists")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let outside = try Self.folder("outside")
        defer { try? FileManager.default.removeItem(atPath: outside) }
        // A music folder playlist written by someone hostile, and one that is a link out.
        var evil = Array("hires.flac\n../../../../etc/passwd\n/etc/passwd\nfile:///etc/passwd\n".utf8)
        evil += Array(String(repeating: "y", count: 100_000).utf8) + [0x0A, 0x00, 0xFF, 0x0A]
        evil += Array("../Other Artist/Second Album/02 Opus.opus\nhttp://example.com/s.mp3\n".utf8)
        try Data(evil).write(to: URL(fileURLWithPath: music + "/loose/evil.m3u"))
        try Data("/etc/passwd\n".utf8).write(to: URL(fileURLWithPath: outside + "/out.m3u"))
        try FileManager.default.createSymbolicLink(atPath: music + "/loose/out.m3u", withDestinationPath: outside + "/out.m3u")

        let server = try ServeProcess(music: music, folder: dir)
        defer { _ = server.stop() }
        try server.waitForLibrary(songs: Self.musicSongs)
        let a = try server.client(), b = try server.client()
        #expect(try a.command("listplaylist loose/evil.m3u") == [
            "file: loose/hires.flac", "file: Other Artist/Second Album/02 Opus.opus", "file: http://example.com/s.mp3",
        ])
        #expect(try a.command("listplaylist loose/out.m3u") == ["ACK [50@0] {listplaylist} No such playlist"])
        #expect(try a.command("load loose/evil.m3u") == [])
        #expect(try a.fields("status")["playlistlength"] == "3")

        // A idles; B changes the stored playlists; A hears of each change.
        for change in ["save mine", "playlistadd mine loose/untagged.wav", "playlistmove mine 0 3", "playlistdelete mine 1",
                       "playlistclear mine", "rename mine yours", "save mine", "rm yours"] {
            a.sendRaw("idle stored_playlist\n")
            #expect(try b.command(change) == [], "\(change)")
            #expect(try a.command("noidle") == ["changed: stored_playlist"], "\(change): the idle client was not told")
        }
        // Files as MPD writes them: NAME.m3u, library paths and URLs, one a line.
        let saved = FileManager.default.contents(atPath: dir + "/playlists/mine.m3u").map { String(decoding: $0, as: UTF8.self) }
        #expect(saved == "loose/hires.flac\nOther Artist/Second Album/02 Opus.opus\nhttp://example.com/s.mp3\n")
        #expect(try b.command("listplaylists").first == "playlist: mine")
        #expect(!FileManager.default.fileExists(atPath: dir + "/playlists/yours.m3u"))
        #expect(try b.command("save \"a\rb\"") == ["ACK [2@0] {save} Bad playlist name"])
    }

    @Test("kill -9 while a client edits a stored playlist: the file is a whole version, at least as new as the last answer; the server starts again on it")
    func storedPlaylistAfterKill() throws {
        let music = try Self.music(), dir = try Self.folder("playlist-kill")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try ServeProcess(music: music, folder: dir)
        try first.waitForLibrary(songs: Self.musicSongs)
        let client = try first.client()
        // 400 edits in flight; each `ping` answered means one more edit was (the pings queue behind them).
        client.sendRaw(String(repeating: "playlistadd big loose/hires.flac\n", count: 400))
        let answered = 50
        for _ in 0..<answered { #expect(try client.command("ping") == []) }
        #expect(first.stop(SIGKILL) != nil)

        let bytes = FileManager.default.contents(atPath: dir + "/playlists/big.m3u").map { Array($0) } ?? []
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(bytes.last == 0x0A, "the file ends with a whole line")
        #expect(lines.dropLast().allSatisfy { $0 == "loose/hires.flac" }, "no torn line")
        #expect(lines.count - 1 >= answered && lines.count - 1 <= 400, "\(lines.count - 1) entries")

        let second = try ServeProcess(music: music, folder: dir)
        defer { _ = second.stop() }
        let again = try second.client()
        #expect(try again.command("listplaylists").first == "playlist: big")
        #expect(try again.command("listplaylist big").count == lines.count - 1)
    }

    @Test("security: beyond loopback needs --password; the password gates every command; paths stay in the music folder")
    func security() throws {
        let music = try Self.music(), dir = try Self.folder("security")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let open = try ProcessRunner.harmoniaPlay(["serve", "--music-dir", music, "--database", dir + "/db", "--state", "off",
                                                   "--output", "null", "--mpd-listen", "0.0.0.0:0"])
        #expect(open.status == 2)
        #expect(open.stderrText.contains("--password"))

        // A folder outside the music directory, reached through a link inside it.
        let outside = try Self.folder("outside")
        defer { try? FileManager.default.removeItem(atPath: outside) }
        try FileManager.default.copyItem(atPath: music + "/loose/hires.flac", toPath: outside + "/secret.flac")
        try FileManager.default.createSymbolicLink(atPath: music + "/escape", withDestinationPath: outside)

        let server = try ServeProcess(music: music, folder: dir, extra: ["--password", "s3cret"])
        defer { _ = server.stop() }
        let client = try server.client()  // no password yet
        #expect(try client.command("status") == ["ACK [4@0] {status} you don't have permission for \"status\""])
        #expect(try client.command("password wrong") == ["ACK [3@0] {password} incorrect password"])
        #expect(try client.command("password s3cret") == [])
        server.password = "s3cret"
        try server.waitForLibrary(songs: Self.musicSongs)  // the link out is not followed: still 6 songs
        for path in ["../", "/etc/passwd", "file:///etc/passwd", "escape/secret.flac", "loose/../../x", "escape"] {
            let answer = try client.command("add \"\(path)\"")
            #expect(answer.count == 1 && answer[0].hasPrefix("ACK [50@0] {add} No such"), "add \(path): \(answer)")
        }
        #expect(try client.fields("status")["playlistlength"] == "0")
    }

    @Test("a client that sends 20,000 listallinfo and never reads is dropped; memory stays bounded; others are answered within 1 s")
    func floodingClient() throws {
        let music = try Self.music(), dir = try Self.folder("flood")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ServeProcess(music: music, folder: dir)
        defer { server.stop() }
        try server.waitForLibrary(songs: Self.musicSongs)
        let pid = server.process.process.processIdentifier
        let before = try Self.residentKiB(pid)

        let flood = try MPDTestClient(port: server.port)
        let lines = String(repeating: "listallinfo\n", count: 20_000)
        flood.sendRaw(lines)  // and never reads its answers
        let other = try MPDTestClient(port: server.port, seconds: 1)  // a read waiting longer than 1 s fails the test
        for _ in 0..<20 { #expect(try other.fields("status")["state"] == "stop") }
        #expect(flood.waitForClose(seconds: 20), "the flooding client was not dropped")
        #expect(try other.fields("status")["state"] == "stop")
        let grown = try Self.residentKiB(pid, peak: true) - before
        print("[serve] a client flooding 20,000 listallinfo: dropped; peak resident memory grew by \(grown / 1024) MiB")
        #expect(grown < 64 * 1024, "peak resident memory grew by \(grown / 1024) MiB")
    }

    /// VmRSS (or VmHWM, the peak) of `pid` in KiB.
    static func residentKiB(_ pid: Int32, peak: Bool = false) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let key = peak ? "VmHWM:" : "VmRSS:"
        let line = status.split(separator: "\n").first { $0.hasPrefix(key) } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test("SIGTERM and SIGINT end it with 128+signal, its control socket removed", arguments: [SIGTERM, SIGINT])
    func signals(_ signo: Int32) throws {
        let music = try Self.music(), dir = try Self.folder("signal")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let socket = dir + "/control.sock"
        let server = try ServeProcess(music: music, folder: dir, extra: ["--control", "unix:" + socket])
        try server.waitForLibrary(songs: Self.musicSongs)
        _ = try server.client().command("add \"loose\"")
        _ = try server.client().command("play")
        #expect(FileManager.default.fileExists(atPath: socket))
        #expect(server.stop(signo) == 128 + signo)
        #expect(!FileManager.default.fileExists(atPath: socket))
    }

    @Test("a scan killed with SIGKILL leaves a consistent database; the next start completes it")
    func killedScan() throws {
        let dir = try Self.folder("killed")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let music = dir + "/music"
        let source = Fixtures.named("flac_s16_stereo_44k.flac").path
        let folders = 30, perFolder = 20
        for f in 0..<folders {
            try FileManager.default.createDirectory(atPath: music + "/album \(f)", withIntermediateDirectories: true)
            for t in 0..<perFolder { try FileManager.default.linkItem(atPath: source, toPath: music + "/album \(f)/\(t) track.flac") }
        }
        let first = try ServeProcess(music: music, folder: dir)
        let client = try first.client()
        // Killed while the first scan runs (the database is new: it scans at once).
        let status = try client.fields("status")
        #expect(status["updating_db"] != nil, "the scan ended before it could be killed: \(status)")
        kill(first.process.process.processIdentifier, SIGKILL)
        #expect(first.process.waitForExit(timeout: 10) == 9)
        let check = try ProcessRunner.run("/usr/bin/sqlite3", [dir + "/library.sqlite", "PRAGMA integrity_check;"])
        #expect(check.stdoutText == "ok\n", "\(check.stderrText)")

        let second = try ServeProcess(music: music, folder: dir)
        defer { _ = second.stop() }
        // No completed update recorded: the start scans again, reading only what is missing.
        try second.waitForLibrary(songs: folders * perFolder)
        #expect(try second.client().fields("stats")["songs"] == String(folders * perFolder))
    }

    @Test("after SIGKILL, a restart comes back to the queue, the current song, its position, volume and modes")
    func stateAfterKill() throws {
        let music = try Self.music(), dir = try Self.folder("state")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try ServeProcess(music: music, folder: dir)
        try first.waitForLibrary(songs: Self.musicSongs)
        let client = try first.client()
        for line in ["add \"Harmonia Artist/First Album\"", "add \"loose\"", "repeat 1", "setvol 30", "play 1", "pause 1", "seek 1 1.25"] {
            #expect(try client.command(line) == [], "\(line)")
        }
        // The state keeper sees those commands' events on the main loop before
        // the next command run there (a second `pause 1`) is answered.
        #expect(try client.command("pause 1") == [])
        #expect(try client.fields("status")["state"] == "pause")
        kill(first.process.process.processIdentifier, SIGKILL)
        #expect(first.process.waitForExit(timeout: 10) == 9)

        let second = try ServeProcess(music: music, folder: dir)
        defer { _ = second.stop() }
        let status = try second.client().fields("status")
        #expect(status["playlistlength"] == "4")
        #expect(status["song"] == "1")
        #expect(status["state"] == "pause")
        #expect(status["volume"] == "30")
        #expect(status["repeat"] == "1")
        let elapsed = try #require(status["elapsed"].flatMap(Double.init))
        #expect(elapsed >= 1.2 && elapsed < 1.4, "elapsed \(elapsed)")
    }

    @Test("--output file: is paced in real time: the file holds what was heard, the position is its length")
    func pacedFile() throws {
        let music = try Self.music(), dir = try Self.folder("paced")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let out = dir + "/out.f32"
        let server = try ServeProcess(music: music, folder: dir, extra: ["--output", "file:" + out])
        defer { _ = server.stop() }
        try server.waitForLibrary(songs: Self.musicSongs)
        let client = try server.client()
        _ = try client.command("add \"Harmonia Artist/First Album/01 Opening.flac\"")  // 2 s, 44.1 kHz stereo
        let bytesPerSecond = 44100.0 * 2 * 4
        func fileSeconds() -> Double {
            Double((try? FileManager.default.attributesOfItem(atPath: out)[.size] as? NSNumber)??.int64Value ?? 0) / bytesPerSecond
        }
        _ = try client.command("command_list_begin\nplay\npause 1\ncommand_list_end")
        let status = try client.fields("status")
        #expect(status["state"] == "pause")
        let elapsed = try #require(status["elapsed"].flatMap(Double.init))
        // Unpaced, the whole 2 s would be in the file at once; paced, what was heard.
        #expect(abs(fileSeconds() - elapsed) < 0.25, "file \(fileSeconds()) s, heard \(elapsed) s")
        #expect(fileSeconds() < 1)
        _ = try client.command("pause 0")
        for _ in 0..<20 where try client.fields("status")["state"] != "stop" { _ = try client.command("idle player") }
        #expect(fileSeconds() * bytesPerSecond == 88200 * 8, "the whole track, once")
    }
}
