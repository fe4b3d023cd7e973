// Special files and hostile names (specs/inputs.md, Special files and Names):
// one answer from play, info and decode for a FIFO, a device, a socket and a
// directory; info takes folders; names with bytes that are not UTF-8 are
// found, error lines stay one line, JSON carries the name.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play special files and names")
struct HarmoniaPlaySpecialFilesTests {
    static let wav = Fixtures.named("wav_s16_stereo_44k.wav").path
    static let flac = Fixtures.named("flac_s16_stereo_44k.flac").path

    /// The arguments that run `command` ("play", "info", "decode") on `input`.
    static func arguments(_ command: String, _ input: String) -> [String] {
        switch command {
        case "play": ["--output", "null", input]
        case "decode": ["decode", input, "-o", "/dev/null"]
        default: [command, input]
        }
    }

    /// Runs harmonia-play with a deadline (a hang fails instead of blocking the run).
    static func run(_ arguments: [String]) throws -> (status: Int32?, stderr: [String], stdout: [String]) {
        let player = try LineProcess.harmoniaPlay(arguments)
        player.closeInput()
        let status = player.waitForExit(timeout: 10)
        _ = player.stderr.take(timeout: 10) { _ in false }  // to the end of the stream
        _ = player.stdout.take(timeout: 10) { _ in false }
        return (status, player.stderr.all, player.stdout.all)
    }

    static func temporaryFolder(_ name: String) throws -> String {
        let path = NSTemporaryDirectory() + "hp-special-\(getpid())-\(name)"
        try? FileManager.default.removeItem(atPath: path)
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("a FIFO without a writer, a device and a socket: play, info and decode refuse at once, unsupported, one line",
          arguments: ["play", "info", "decode"])
    func specialFiles(_ command: String) throws {
        let folder = try Self.temporaryFolder("files-\(command)")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fifo = folder + "/pipe.flac"
        #expect(mkfifo(fifo, 0o600) == 0)
        let socketPath = folder + "/s.flac"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(listener) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(socketPath.utf8))
            raw[socketPath.utf8.count] = 0
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        #expect(bound == 0)

        for (input, kind) in [(fifo, "a FIFO (named pipe)"), ("/dev/null", "a character device"), (socketPath, "a socket")] {
            let result = try Self.run(Self.arguments(command, input))
            #expect(result.status == 1, "\(command) \(input)")
            #expect(result.stderr == ["harmonia-play: \(input): unsupported: \(input): is \(kind), not an audio file; give a regular file or an http(s) URL"])
        }
    }

    @Test("a FIFO named as a playlist is refused, not read")
    func fifoPlaylist() throws {
        let folder = try Self.temporaryFolder("playlist")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let fifo = folder + "/list.m3u"
        #expect(mkfifo(fifo, 0o600) == 0)
        let result = try Self.run(["--output", "null", fifo])
        #expect(result.status == 1)
        #expect(result.stderr.count == 1)
        #expect(result.stderr.first?.contains("unsupported: \(fifo): is a FIFO (named pipe), not a playlist") == true)
    }

    @Test("a directory: play and info take its audio files (natural order, recursive, others skipped); decode refuses it; an empty one is notFound for both")
    func directories() throws {
        let folder = try Self.temporaryFolder("dir")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try FileManager.default.createDirectory(atPath: folder + "/sub", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: folder + "/empty", withIntermediateDirectories: true)
        for name in ["t10.wav", "t2.wav", "sub/a.wav"] { try FileManager.default.copyItem(atPath: Self.wav, toPath: folder + "/" + name) }
        try Data("not audio".utf8).write(to: URL(fileURLWithPath: folder + "/notes.txt"))

        let info = try Self.run(["info", "--json", folder])
        #expect(info.status == 0)
        let urls = info.stdout.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["url"] as? String
        }
        #expect(urls == [folder + "/sub/a.wav", folder + "/t2.wav", folder + "/t10.wav"])

        let play = try Self.run(["--output", "file:/dev/null", folder])
        #expect(play.status == 0)
        #expect(play.stdout.count == 3 && play.stdout.first?.hasPrefix("Playing 1/3") == true)

        let decode = try Self.run(["decode", folder, "-o", "/dev/null"])
        #expect(decode.status == 1)
        #expect(decode.stderr == ["harmonia-play: \(folder): unsupported: \(folder): is a directory, not an audio file; give a regular file or an http(s) URL"])

        for command in ["play", "info"] {
            let empty = try Self.run(Self.arguments(command, folder + "/empty"))
            #expect(empty.status == 1)
            #expect(empty.stderr.count == 1)
            #expect(empty.stderr.first?.hasPrefix("harmonia-play: \(folder)/empty: notFound: ") == true, "\(command): \(empty.stderr)")
        }
    }

    @Test("a name holding 0xFF is found by info and play; --json carries it (U+10FFFF for the byte); a newline and a bad byte are escaped in the one-line error")
    func byteNames() throws {
        let folder = try Self.temporaryFolder("names")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // The shell makes the bytes: a Swift String cannot hold 0xFF.
        let script = #"""
            cp "$2" "$1/$(printf 'a\377b.flac')" || exit 9
            "$0" info --json "$1/$(printf 'a\377b.flac')" || exit 10
            "$0" --output null --quiet "$1/$(printf 'a\377b.flac')" || exit 11
            "$0" info "$1/$(printf 'x\ny\376.wav')"
            echo "status $?"
            """#
        let result = try ProcessRunner.run("/bin/sh", ["-c", script, ProcessRunner.productsDirectory + "/harmonia-play", folder, Self.flac])
        #expect(result.status == 0, "\(result.stderrText)")
        // The JSON url: the folder, then "a", the escape of byte 0xFF (U+10FFFF, F4 8F BF BF in UTF-8), "b.flac".
        let expected = Array(#"{"url":""#.utf8) + Array(folder.utf8) + [0x2F, 0x61, 0xF4, 0x8F, 0xBF, 0xBF] + Array("b.flac\"".utf8)
        #expect(Array(result.stdout.prefix(expected.count)) == expected)
        #expect(result.stdoutText.contains(#""title":"Harmonia Test Title""#))
        #expect(result.stdoutText.hasSuffix("status 1\n"))
        let errors = result.stderrText.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(errors == ["harmonia-play: \(folder)/x\\ny\\xfe.wav: notFound: \(folder)/x\\ny\\xfe.wav: no such file or directory; check the path"])
    }

    @Test("--json carries a name with a newline exactly")
    func newlineNameJSON() throws {
        let folder = try Self.temporaryFolder("newline")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/two\nlines.wav"
        try FileManager.default.copyItem(atPath: Self.wav, toPath: path)
        let result = try Self.run(["info", "--json", path])
        #expect(result.status == 0)
        #expect(result.stdout.count == 1)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(result.stdout[0].utf8)) as? [String: Any])
        #expect(object["url"] as? String == path)
    }
}
