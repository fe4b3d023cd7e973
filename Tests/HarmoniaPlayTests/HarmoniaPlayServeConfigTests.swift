// serve as a service runs it (issue 39, specs/application.md §Config file):
// its config file read through the parser, FILE:LINE errors, the command line
// over the file, secrets kept off the command line, SIGHUP, journal-ready output.
import Foundation
import HarmoniaTestSupport
import Testing
@testable import harmonia_play
#if canImport(Glibc)
import Glibc
#endif

@Suite("serve's config file (units)")
struct ServeConfigFileTests {
    func entries(_ text: String) throws(ServeConfigError) -> [ServeConfigEntry] {
        try ServeConfigFile.entries(text: Array(text.utf8), path: "f.conf")
    }

    @Test("lines: 'name = value', 'name=value', a bare flag, quotes, comments, blank lines, CRLF")
    func lines() throws {
        let parsed = try entries("# a comment\n\nmusic-dir = /srv/My Music\nstate=off\r\n  quiet  \nupnp-name = \"Living room \"\npassword = 'a # b'\n")
        #expect(parsed == [
            ServeConfigEntry(line: 3, name: "music-dir", value: "/srv/My Music"),
            ServeConfigEntry(line: 4, name: "state", value: "off"),
            ServeConfigEntry(line: 5, name: "quiet", value: nil),
            ServeConfigEntry(line: 6, name: "upnp-name", value: "Living room "),
            ServeConfigEntry(line: 7, name: "password", value: "a # b"),
        ])
    }

    @Test("a line that is not a setting is an error naming FILE:LINE")
    func badLines() {
        #expect(throws: ServeConfigError(message: "f.conf:2: '--quiet' is not an option name (lower-case letters, digits and '-', without the leading '--')")) {
            try entries("music-dir = x\n--quiet\n")
        }
        #expect(throws: ServeConfigError(message: "f.conf:1: not UTF-8 text")) {
            try ServeConfigFile.entries(text: [0x61, 0x20, 0x3D, 0x20, 0xFF, 0x0A], path: "f.conf")
        }
        #expect(throws: ServeConfigError(message: "f.conf:3: a control character")) { try entries("a = 1\n\nb = \u{1B}[2J\n") }
        #expect(throws: ServeConfigError.self) { try entries(" = value\n") }
    }

    @Test("the table is serve's parser's: options, flags, secrets; not config, help or version")
    func table() {
        let table = ServeOptionTable.serve
        #expect(table.options["music-dir"]?.kind == .option)
        #expect(table.options["quiet"]?.kind == .flag)
        #expect(table.options["upnp"]?.kind == .flag)
        #expect(table.options["http-header"]?.kind == .option)
        #expect(table.options["password"]?.isSecret == true)
        #expect(table.options["token"]?.isSecret == true)
        #expect(table.options["listenbrainz-token"]?.isSecret == true)
        #expect(table.options["music-dir"]?.isSecret == false)
        for name in ["config", "help", "version"] { #expect(table.options[name] == nil, "\(name)") }
        #expect(table.setting("password-file") == "password")
        #expect(table.setting("listenbrainz-token-file") == "listenbrainz-token")
        #expect(table.setting("tls-cert") == "tls-cert")
    }

    @Test("settings as arguments: flags yes, no or bare; options as --name=value, a leading '-' kept")
    func arguments() throws {
        let settings = try ServeConfigFile.arguments(try entries("quiet\ninsecure = no\nupnp = YES\nuser-agent = -x-\n"),
                                                     table: .serve, path: "f.conf")
        #expect(settings.map(\.arguments) == [["--quiet"], [], ["--upnp"], ["--user-agent=-x-"]])
        #expect(throws: ServeConfigError(message: "f.conf:1: 'quiet' is a flag: 'quiet = yes', 'quiet = no' or 'quiet'")) {
            try ServeConfigFile.arguments(try entries("quiet = maybe\n"), table: .serve, path: "f.conf")
        }
        #expect(throws: ServeConfigError(message: "f.conf:2: 'music-dir' needs a value: 'music-dir = VALUE'")) {
            try ServeConfigFile.arguments(try entries("quiet\nmusic-dir\n"), table: .serve, path: "f.conf")
        }
        #expect(throws: ServeConfigError(message: "f.conf:1: unknown option 'music-folder' (serve's options: harmonia-play serve --help)")) {
            try ServeConfigFile.arguments(try entries("music-folder = /srv\n"), table: .serve, path: "f.conf")
        }
    }
}

@Suite("harmonia-play serve as a service", .serialized)
struct HarmoniaPlayServeServiceTests {
    static let binary = ProcessRunner.productsDirectory + "/harmonia-play"

    static func write(_ text: String, to path: String, mode: mode_t = 0o600) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        chmod(path, mode)
    }

    /// The environment with the config folder at `folder`.
    static func environment(configHome folder: String) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = folder
        return environment
    }

    /// A client's answer to `password SECRET`, then whether `status` is allowed.
    static func tryPassword(_ server: ServeProcess, _ secret: String) throws -> (String, Bool) {
        let client = try server.client()
        let answer = try client.command("password \(secret)").first ?? "OK"
        return (answer, try client.command("status").first?.hasPrefix("ACK") == false)
    }

    @Test("the config file's settings are used; the command line overrides them (--password-file over the file's password); a secret readable by all is warned of")
    func overrides() throws {
        let music = try HarmoniaPlayServeTests.music(), dir = try HarmoniaPlayServeTests.folder("config")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.write("# as a service would have it\npassword = from-file\nlog-level = error\n", to: dir + "/serve.conf")
        let fromFile = try ServeProcess(music: music, folder: dir, extra: ["--config", dir + "/serve.conf"])
        #expect(try Self.tryPassword(fromFile, "wrong") == ("ACK [3@0] {password} incorrect password", false))
        #expect(try Self.tryPassword(fromFile, "from-file") == ("OK", true))
        #expect(!fromFile.process.stderr.all.contains { $0.contains("warning") }, "a 0600 file: no warning")
        #expect(fromFile.stop() == 143)

        try Self.write("from-command-line\n", to: dir + "/password")
        chmod(dir + "/serve.conf", 0o644)
        let overridden = try ServeProcess(music: music, folder: dir, extra: ["--config", dir + "/serve.conf", "--password-file", dir + "/password"])
        defer { _ = overridden.stop() }
        #expect(try Self.tryPassword(overridden, "from-file").1 == false)
        #expect(try Self.tryPassword(overridden, "from-command-line") == ("OK", true))
        #expect(overridden.process.stderr.all.contains(
            "harmonia-play: warning: \(dir)/serve.conf holds 'password' (line 2) and every user can read it; chmod o-r \(dir)/serve.conf"))
    }

    @Test("without --config, $XDG_CONFIG_HOME/harmonia-play/harmonia-play.conf is read when it exists")
    func defaultFile() throws {
        let music = try HarmoniaPlayServeTests.music(), dir = try HarmoniaPlayServeTests.folder("default-config")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.write("password = by-default\n", to: dir + "/config/harmonia-play/harmonia-play.conf")
        let server = try ServeProcess(music: music, folder: dir, environment: Self.environment(configHome: dir + "/config"))
        defer { _ = server.stop() }
        #expect(try Self.tryPassword(server, "by-default") == ("OK", true))
        // No such file: serve starts as before.
        let none = try ServeProcess(music: music, folder: dir + "/b", environment: Self.environment(configHome: dir + "/nothing"))
        #expect(try Self.tryPassword(none, "by-default").0 == "ACK [3@0] {password} incorrect password")
        #expect(none.stop() == 143)
    }

    @Test("a bad config file is a usage error (exit 2) naming FILE:LINE; the command line's own errors stay its own",
          arguments: [
              ("music-dir = /srv\n\nmusic-folder = x\n", ":3: unknown option 'music-folder' (serve's options: harmonia-play serve --help)"),
              ("quiet\nnetwork-timeout = abc\n", ":2: The value 'abc' is invalid for '--network-timeout <SECONDS>'"),
              ("# c\nnetwork-timeout = 0\n", ":2: --network-timeout must be a number of seconds above 0 (at most a day)"),
              ("log-level = error\nmpd-listen = 0.0.0.0:6600\n", ":2: --mpd-listen 0.0.0.0:6600 reaches beyond this machine"),
              ("quiet = sometimes\n", ":1: 'quiet' is a flag"),
              ("output\n", ":1: 'output' needs a value"),
              ("config = other.conf\n", ":1: 'config' names the file itself"),
          ])
    func badFile(_ text: String, _ expected: String) throws {
        let dir = try HarmoniaPlayServeTests.folder("bad-config")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = dir + "/serve.conf"
        try Self.write(text, to: file)
        let result = try ProcessRunner.run(Self.binary, ["serve", "--config", file, "--music-dir", dir, "--output", "null", "--state", "off"])
        #expect(result.status == 2)
        #expect(result.stderrText.hasPrefix("harmonia-play: " + file + expected), "\(result.stderrText)")
        #expect(result.stderrText.split(separator: "\n").count == 1, "one line: \(result.stderrText)")
    }

    @Test("errors of the command line and of reading the file (missing, a device, a FIFO, past 1 MiB)")
    func otherErrors() throws {
        let dir = try HarmoniaPlayServeTests.folder("config-errors")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try Self.write("quiet\n", to: dir + "/serve.conf")
        let commandLine = try ProcessRunner.run(Self.binary, ["serve", "--config", dir + "/serve.conf", "--network-timeout", "abc"])
        #expect(commandLine.status == 2)
        #expect(commandLine.stderrText.contains("Error: The value 'abc' is invalid for '--network-timeout <SECONDS>'"))
        #expect(!commandLine.stderrText.contains("serve.conf"))
        let missing = try ProcessRunner.run(Self.binary, ["serve", "--config", dir + "/none.conf"])
        #expect(missing.status == 2)
        #expect(missing.stderrText == "harmonia-play: config file: \(dir)/none.conf: no such file\n")
        let device = try ProcessRunner.run(Self.binary, ["serve", "--config=/dev/zero"])
        #expect(device.stderrText == "harmonia-play: config file: /dev/zero: not a regular file\n")
        #expect(mkfifo(dir + "/fifo", 0o600) == 0)
        let fifo = try ProcessRunner.run(Self.binary, ["serve", "--config", dir + "/fifo"])  // opened without waiting for a writer
        #expect(fifo.stderrText == "harmonia-play: config file: \(dir)/fifo: not a regular file\n")
        try Data(repeating: 0x23, count: (1 << 20) + 1).write(to: URL(fileURLWithPath: dir + "/huge.conf"))
        let huge = try ProcessRunner.run(Self.binary, ["serve", "--config", dir + "/huge.conf"])
        #expect(huge.status == 2)
        #expect(huge.stderrText == "harmonia-play: config file: \(dir)/huge.conf: longer than 1048576 bytes\n")
        let both = try ProcessRunner.run(Self.binary, ["serve", "--password", "a", "--password-file", dir + "/serve.conf"])
        #expect(both.status == 2)
        #expect(both.stderrText.contains("--password and --password-file: give one"))
        let noFile = try ProcessRunner.run(Self.binary, ["serve", "--password-file", dir + "/none", "--music-dir", dir,
                                                         "--database", dir + "/db", "--state", "off", "--output", "null"])
        #expect(noFile.status == 2)
        #expect(noFile.stderrText.contains("harmonia-play: --password-file: notFound: \(dir)/none: no such file"))
    }

    @Test("SIGHUP rescans the music folder and the server goes on; its output has no status line or terminal control (a journal's)")
    func hangUp() throws {
        let music = try HarmoniaPlayServeTests.music(), dir = try HarmoniaPlayServeTests.folder("hangup")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try ServeProcess(music: music, folder: dir)
        try server.waitForLibrary(songs: HarmoniaPlayServeTests.musicSongs)
        try FileManager.default.copyItem(atPath: music + "/loose/hires.flac", toPath: music + "/loose/added.flac")
        kill(server.process.process.processIdentifier, SIGHUP)
        try server.waitForLibrary(songs: HarmoniaPlayServeTests.musicSongs + 1)
        #expect(server.process.stderr.take(where: { $0.contains("SIGHUP: rescanning the music folder") }) != nil)
        #expect(try server.client().command("ping") == [])
        #expect(server.stop() == 143)
        let lines = server.process.stderr.all + server.process.stdout.all
        #expect(!lines.contains { $0.contains("\r") || $0.contains("\u{1B}") }, "\(lines)")
    }
}
