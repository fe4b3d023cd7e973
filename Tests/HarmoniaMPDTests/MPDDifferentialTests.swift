// The wire layer against real MPD — specs/mpd-protocol.md §Differential harness.
// Tests/MPD/session_wire.txt runs on our server (no player commands) and on a
// private MPD 0.23 (/usr/bin/mpd); the answers must be equal after the
// harness's written normalisation. Skipped where mpd or Debian's python3 is missing.
import Foundation
import HarmoniaTestSupport
import Testing
@testable import HarmoniaMPD

/// Knows no player command: only what the connection answers itself.
private struct NoCommands: MPDCommandHandler {
    var commands: [MPDCommandInfo] { [] }
    func handle(_ request: MPDRequest, context: MPDContext, into writer: inout MPDResponseWriter) throws(MPDError) {
        throw .unknownCommand(request.command)
    }
}

@Suite struct MPDDifferentialTests {
    static let available = FileManager.default.isExecutableFile(atPath: "/usr/bin/mpd")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")

    @Test(.enabled(if: available, "needs /usr/bin/mpd and /usr/bin/python3"))
    func connectionCommandsAnswerAsRealMPD() throws {
        var configuration = MPDServerConfiguration(host: "127.0.0.1", port: 0)
        configuration.tagTypes = .mpdDefault  // MPD's default metadata_to_use
        configuration.wrongPasswordDelay = 0
        let server = MPDServer(configuration: configuration, handler: NoCommands())
        try server.start()
        defer { server.shutdown() }
        let root = Fixtures.repositoryRoot
        let result = try ProcessRunner.run("/usr/bin/timeout", [
            "120", "/usr/bin/python3", root + "/Tests/MPD/mpd_diff.py", "against",
            "--port", String(server.port), "--script", root + "/Tests/MPD/session_wire.txt",
        ])
        #expect(result.status == 0, "\(result.stdoutText)\n\(result.stderrText)")
        #expect(result.stdoutText.contains("equal: "))
    }
}
