// A setting no playback event carries (the crossfade) reaches every
// frontend within the command that changed it: the state file has it
// before the reply (specs/application.md §State file). The real server,
// killed right after the reply: CrossfadeControlTests.
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaTestSupport
import Testing

@Suite("PlayerActions.setCrossfade tells the frontends")
struct SettingsChangedTests {
    /// Counts `settingsChanged` calls.
    private final class Recorder: PlayerFrontend {
        var calls = 0
        func settingsChanged() { calls += 1 }
    }

    @Test("a change is saved in the state file before setCrossfade returns; the same value or a bad one tells nobody")
    func savedAtOnce() throws {
        let dir = NSTemporaryDirectory() + "harmonia-settings-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let service = DefaultPlaybackService(decoder: CounterDecoder([:]), output: NullAudioOutput(pace: .manual),
                                             clock: ManualClock())
        defer { service.shutdown() }
        let actions = PlayerActions(service: service)
        let app = PlayerApplication(service: service, actions: actions)
        let file = PlayerStateFile(path: dir + "/state.json"), recorder = Recorder()
        app.add(StateKeeper(file: file, service: service))
        app.add(recorder)

        // This thread stands for the main loop, where commands run.
        #expect(try actions.setCrossfade(seconds: 2.5))
        #expect(try file.load()?.crossfade == 2.5)
        #expect(recorder.calls == 1)
        #expect(try !actions.setCrossfade(seconds: 2.5))
        #expect(recorder.calls == 1)
        let badValues: [Double] = [-1, .nan, .infinity, 30.5, 1e9]
        for bad in badValues {
            #expect(throws: CoreError.self) { try actions.setCrossfade(seconds: bad) }
        }
        #expect(recorder.calls == 1)
        #expect(service.crossfadeSettings.seconds == 2.5)
        #expect(try actions.setCrossfade(seconds: 0))
        #expect(try file.load()?.crossfade == 0)
        #expect(recorder.calls == 2)
    }
}
