// One track shape for every frontend, from outside: the same files queued in
// `play --control unix:PATH` and in `serve` over WebSocket give the same
// track objects, member by member, and those are the files' tags —
// Tests/WebSocket/track_shape_test.py, specs/control-protocol.md §Events.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("Track objects: play and serve", .serialized)
struct TrackShapeTests {
    static let python = "/usr/bin/python3"  // Debian's, with python3-websockets and python3-mutagen
    static let script = Fixtures.repositoryRoot + "/Tests/WebSocket/track_shape_test.py"

    @Test("play over its Unix socket and serve over WebSocket give the same track objects for the same files (lists, nulls, cleaned text)")
    func sameTrackObjects() throws {
        let work = NSTemporaryDirectory() + "hp-shape-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let result = try ProcessRunner.run(Self.python, [Self.script, ProcessRunner.productsDirectory + "/harmonia-play", work])
        #expect(result.status == 0, "\(result.stdoutText.suffix(4000))\n\(result.stderrText.suffix(2000))")
        #expect(result.stdoutText.contains("all checks passed"))
    }
}
