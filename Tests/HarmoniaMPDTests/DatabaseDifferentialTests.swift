// The database group against real MPD — specs/mpd-protocol.md §Database commands.
// `mpd_diff.py make-music` builds the tree; a private MPD 0.23 scans it; our
// server answers from an InMemoryLibraryStore holding the same songs
// (DatabaseFixture, with MPD's decoder values for the MP3 and the Opus file,
// so that the protocol adapter alone is compared) over the same tree on disk
// (listfiles, albumart). Tests/MPD/session_database.txt runs on both; the
// answers must be equal after the harness's normalisation, with --tag-order.
// Skipped where mpd, Debian's python3 or ffmpeg is missing.
import Foundation
import HarmoniaTestSupport
import Testing
@testable import HarmoniaMPD

@Suite struct DatabaseDifferentialTests {
    static let available = ["/usr/bin/mpd", "/usr/bin/python3", "/usr/bin/ffmpeg"].allSatisfy {
        FileManager.default.isExecutableFile(atPath: $0)
    }

    @Test(.enabled(if: available, "needs /usr/bin/mpd, /usr/bin/python3 and /usr/bin/ffmpeg"))
    func databaseCommandsAnswerAsRealMPD() throws {
        let root = Fixtures.repositoryRoot
        let script = root + "/Tests/MPD/mpd_diff.py"
        let base = try TemporaryTree()
        let music = base.root + "/music"
        let made = try ProcessRunner.run("/usr/bin/timeout", ["120", "/usr/bin/python3", script, "make-music", music])
        try #require(made.status == 0, "\(made.stderrText)")

        let server = try makeDatabaseServer(store: try DatabaseFixture.store(mpdDecoders: true), music: music)
        defer { server.shutdown() }
        let result = try ProcessRunner.run("/usr/bin/timeout", [
            "180", "/usr/bin/python3", script, "against", "--port", String(server.port), "--music", music,
            "--tag-order", "--script", root + "/Tests/MPD/session_database.txt",
        ])
        #expect(result.status == 0, "\(result.stdoutText)\n\(result.stderrText)")
        #expect(result.stdoutText.contains("equal: "))
    }
}
