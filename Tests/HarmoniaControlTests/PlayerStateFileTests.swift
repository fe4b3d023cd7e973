// PlayerStateFile: atomic save and careful load (specs/application.md §State file).
import Foundation
import HarmoniaControl
import HarmoniaCore
import Testing

@Suite("PlayerStateFile")
struct PlayerStateFileTests {
    private func folder() throws -> String {
        let path = NSTemporaryDirectory() + "harmonia-state-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test("saved and loaded back the same; no file is nil; the temporary file does not stay")
    func roundTrip() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let file = PlayerStateFile(path: dir + "/state.json")
        #expect(try file.load() == nil)
        var state = PlayerState()
        state.queue = [.init(uri: "Artist/01 a.flac", start: nil, end: nil), .init(uri: "b.flac", start: 1.5, end: 9)]
        state.current = 1
        state.position = 3.25
        state.state = "paused"
        state.volume = 40
        state.repeatMode = "all"
        state.shuffle = true
        try file.save(state)
        #expect(try file.load() == state)
        state.position = 4
        try file.save(state)
        #expect(try file.load() == state)
        #expect(!FileManager.default.fileExists(atPath: dir + "/state.json.tmp"))
        let mode = try FileManager.default.attributesOfItem(atPath: dir + "/state.json")[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
    }

    @Test("a file that is not a state file, or of a later version, is a clear error, not a crash")
    func hostile() throws {
        let dir = try folder()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/state.json"
        let file = PlayerStateFile(path: path)
        for (bytes, category) in [("{\"queue\": 5}", CoreError.Category.decodeError), ("\u{0}\u{1}garbage", .decodeError),
                                  ("{\"version\": 2}", .unsupported), ("{\"version\": 1e400}", .decodeError)] {
            try Data(bytes.utf8).write(to: URL(fileURLWithPath: path))
            #expect { try file.load() } throws: { ($0 as? CoreError)?.category == category }
        }
        #expect(throws: CoreError.self) { try PlayerStateFile(path: dir + "/missing/state.json").save(PlayerState()) }
    }
}
