// Models: specs/models.md.
import Foundation
import HarmoniaCore
import Testing

@Suite("Models")
struct ModelsTests {
    private func roundTrip<T: Codable & Equatable>(_ value: T) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(value))
    }

    @Test("CoreError: category, message, description and JSON for every case")
    func coreError() throws {
        for category in CoreError.Category.allCases {
            let error = CoreError(category, "/music/a.flac: something")
            #expect(error.category == category)
            #expect(error.message == "/music/a.flac: something")
            #expect(error.description == "\(category.rawValue): /music/a.flac: something")
            #expect(try roundTrip(error) == error)
            let json = String(decoding: try JSONEncoder().encode(error), as: UTF8.self)
            #expect(json.contains("\"category\":\"\(category.rawValue)\""))
        }
        #expect(CoreError.notFound("x") != CoreError.ioError("x"))
        #expect(CoreError.Category.allCases.map(\.rawValue) ==
                ["invalidArgument", "invalidState", "notFound", "ioError", "decodeError", "unsupported"])
    }

    @Test("StreamInfo: duration from frames, unknown length, validation, JSON")
    func streamInfo() throws {
        let info = StreamInfo(totalFrames: 88200, sampleRate: 44100, channels: 2, bitDepth: 16, codec: "flac", bitrate: 700)
        #expect(info.duration == 2.0)
        try info.validate()
        #expect(try roundTrip(info) == info)

        let live = StreamInfo(totalFrames: nil, sampleRate: 48000, channels: 2, bitDepth: 32)
        #expect(live.duration == .infinity)
        let json = String(decoding: try JSONEncoder().encode(live), as: UTF8.self)
        #expect(json.contains("\"duration\":null"))
        #expect(try roundTrip(live).duration == .infinity)

        for bad in [StreamInfo(duration: -1, sampleRate: 44100, channels: 2, bitDepth: 16),
                    StreamInfo(duration: 1, sampleRate: 0, channels: 2, bitDepth: 16),
                    StreamInfo(duration: 1, sampleRate: 44100, channels: 0, bitDepth: 16),
                    StreamInfo(duration: 1, sampleRate: 44100, channels: 2, bitDepth: 4),
                    StreamInfo(duration: 1, sampleRate: 44100, channels: 2, bitDepth: 16, totalFrames: -5)] {
            #expect(throws: CoreError.self) { try bad.validate() }
        }
    }

    @Test("TagBundle: nil is absent, empty string is present; isEmpty ignores technical fields")
    func tagBundle() throws {
        var tags = TagBundle()
        #expect(tags.isEmpty)
        tags.duration = 3; tags.codec = "flac"; tags.fileSize = 10
        #expect(tags.isEmpty)
        tags.title = ""
        #expect(!tags.isEmpty)
        let decoded = try roundTrip(tags)
        #expect(decoded.title == "")
        #expect(decoded.artist == nil)
        #expect(decoded == tags)

        let full = TagBundle(title: "T", artist: "A", year: 2024, trackNumber: 3, trackTotal: 12,
                             replayGainTrack: -6.5, replayGainTrackPeak: 0.9, artworkData: Data([1, 2, 3]),
                             lyrics: [LyricsLanguageVariant(languageCode: "eng", text: "la")])
        #expect(try roundTrip(full) == full)
        #expect(TagBundle.currentSchemaVersion == 4)
    }

    @Test("PlaybackState: names and JSON, error carries its CoreError")
    func playbackState() throws {
        let states: [PlaybackState] = [.stopped, .playing, .paused, .buffering, .error(.decodeError("f: bad"))]
        #expect(states.map(\.name) == ["stopped", "playing", "paused", "buffering", "error"])
        for state in states { #expect(try roundTrip(state) == state) }
        #expect(PlaybackState.error(.ioError("x")).description == "error(ioError: x)")
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(PlaybackState.self, from: Data(#"{"state":"dancing"}"#.utf8))
        }
    }
}
