// A restored queue keeps only what can play from the music directory
// (specs/application.md §State file): files that are gone and paths whose
// real path is outside the music directory are dropped, with one line
// saying how many and why; the current entry follows its track.
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaLibrary
import HarmoniaTestSupport
import Testing

@Suite("StateKeeper.restore under serve")
struct StateRestoreTests {
    /// A music folder with a.flac and b.flac, and beside it a folder outside with x.flac.
    private func tree() throws -> (top: String, music: MusicDirectory) {
        let top = NSTemporaryDirectory() + "harmonia-restore-\(UUID().uuidString)"
        for folder in ["/music", "/outside"] {
            try FileManager.default.createDirectory(atPath: top + folder, withIntermediateDirectories: true)
        }
        for file in ["/music/a.flac", "/music/b.flac", "/outside/x.flac"] {
            try Data("not audio: the counter decoder plays it".utf8).write(to: URL(fileURLWithPath: top + file))
        }
        return (top, try MusicDirectory(root: top + "/music"))
    }

    private func restore(_ state: PlayerState, music: MusicDirectory) -> (service: DefaultPlaybackService, log: [String]) {
        let root = music.root
        let decoder = CounterDecoder([root + "/a.flac": .init(frames: 44_100 * 3), root + "/b.flac": .init(frames: 44_100 * 3)])
        let service = DefaultPlaybackService(decoder: decoder, output: NullAudioOutput(pace: .manual), clock: ManualClock())
        let library = ControlLibrary(store: InMemoryLibraryStore(), musicDirectory: music, requestUpdate: { 0 })
        var log: [String] = []
        StateKeeper.restore(state, on: service, track: library.restoredTrack(forURL:), log: { log.append($0) })
        return (service, log)
    }

    /// The saved queue: a, a missing file, three ways outside, b, a stream.
    private func saved(_ top: String, root: String, current: Int) -> PlayerState {
        var state = PlayerState()
        state.queue = [root + "/a.flac", root + "/gone.flac", top + "/outside/x.flac", "../outside/x.flac",
                       root + "/../outside/x.flac", root + "/b.flac", "http://127.0.0.1:9/stream"]
            .map { PlayerState.Entry(uri: $0, start: nil, end: nil) }
        state.current = current
        state.state = "stopped"
        return state
    }

    @Test("missing files and paths outside the music directory are dropped; one line says how many and why; the current entry moves with its track")
    func dropsAndKeepsCurrent() throws {
        let (top, music) = try tree()
        defer { try? FileManager.default.removeItem(atPath: top) }
        let root = music.root
        var state = saved(top, root: root, current: 5)
        state.state = "paused"
        state.position = 1.5
        let (service, log) = restore(state, music: music)
        defer { service.shutdown() }
        #expect(service.queue.map(\.url) == [root + "/a.flac", root + "/b.flac", "http://127.0.0.1:9/stream"])
        #expect(service.currentIndex == 1)  // b, which was 5
        #expect(service.state == .paused)
        #expect(abs(service.currentTime() - 1.5) < 0.001)  // its position kept
        #expect(log == ["harmonia-play: state: dropped 4 of 7 saved queue entries (1 missing, 3 outside the music directory)"])
    }

    @Test("a dropped current entry gives way to the next kept one; a dropped last one leaves no current entry")
    func droppedCurrent() throws {
        let (top, music) = try tree()
        defer { try? FileManager.default.removeItem(atPath: top) }
        let root = music.root
        var state = saved(top, root: root, current: 1)  // gone.flac, paused at 1.5 s
        state.state = "paused"
        state.position = 1.5
        let (service, _) = restore(state, music: music)
        defer { service.shutdown() }
        #expect(service.currentIndex == 1)  // b, the next kept entry
        #expect(service.currentTrack?.url == root + "/b.flac")
        #expect(service.currentTime() == 0)  // from its start: the position was gone.flac's

        state = saved(top, root: root, current: 2)
        state.queue.removeLast(2)  // …, x.flac, ../x.flac, ../outside/x.flac: nothing kept after the current
        let (after, log) = restore(state, music: music)
        defer { after.shutdown() }
        #expect(after.queue.map(\.url) == [root + "/a.flac"])
        #expect(after.currentIndex == nil)
        #expect(log.count == 1)
    }

    @Test("nothing dropped: no line")
    func nothingDropped() throws {
        let (top, music) = try tree()
        defer { try? FileManager.default.removeItem(atPath: top) }
        var state = PlayerState()
        state.queue = [PlayerState.Entry(uri: music.root + "/a.flac", start: nil, end: nil), .init(uri: "b.flac", start: nil, end: nil)]
        state.current = 1
        let (service, log) = restore(state, music: music)
        defer { service.shutdown() }
        #expect(service.queue.count == 2)
        #expect(service.currentIndex == 1)
        #expect(log.isEmpty)
    }
}
