// MP4 edit lists whose duration is rounded to the movie timescale (FFmpeg's
// muxer writes milliseconds): the exact length is the media's own, from the
// edit's start. Found by the gapless acceptance test (Tests/Fixtures/gapless):
// a 57331-frame AAC part declared 1300 ms and decoded to 57330 frames.
import Foundation
import HarmoniaCore
@testable import HarmoniaFFmpeg
import HarmoniaTestSupport
import Testing

@Suite("MP4 edit list: exact length under a millisecond movie timescale")
struct MP4EditListTests {
    /// The gapless AAC parts and their exact frames (none a whole number of milliseconds).
    static let parts: [(path: String, frames: Int64)] = [
        ("aac_part1.m4a", 57331), ("aac_part2.m4a", 33967), ("aac_part3.m4a", 48523),
    ].map { (Fixtures.root + "/gapless/" + $0.0, $0.1) }

    @Test("the track's boxes: movie timescale 1000, one edit skipping the 1024 priming frames")
    func trackTiming() throws {
        let file = try Data(contentsOf: URL(fileURLWithPath: Self.parts[0].path))
        let track = try #require(ContainerFacts.mp4TrackTiming(moov: Array(file), trackID: 1))
        #expect(track.movieTimescale == 1000)
        #expect(track.mediaTimescale == 44100)
        #expect(track.mediaDuration == 1024 + 57331)
        #expect(track.edits == [.init(segmentDuration: 1300, mediaTime: 1024, rate: 1)])  // 57331 frames = 1300.02 ms
        #expect(ContainerFacts.mp4EditedFrames(track, sampleRate: 44100) == 57331)
        #expect(ContainerFacts.mp4TrackTiming(moov: Array(file), trackID: 2) == nil)
        #expect(ContainerFacts.mp4TrackTiming(moov: Array(file.prefix(200)), trackID: 1) == nil)  // cut inside moov
    }

    @Test("a sample table whose count × delta overflows Int64 gives no timing, not a trap")
    func overflowingSampleTable() throws {
        var file = Array(try Data(contentsOf: URL(fileURLWithPath: Self.parts[0].path)))
        let stts = try #require((0..<(file.count - 4)).first { file[$0..<$0 + 4].elementsEqual("stts".utf8) })
        // Body: version/flags, entry count, then (count, delta) pairs: make the first pair 0xFFFFFFFF × 0xFFFFFFFF.
        for i in 12..<20 { file[stts + i] = 0xFF }
        #expect(ContainerFacts.mp4TrackTiming(moov: file, trackID: 1) == nil)
    }

    @Test("the media's end is used only when the edit ends within one movie tick of it")
    func editRule() {
        func track(_ edits: [MP4TrackTiming.Edit], movie: Int64 = 1000, media: Int64 = 1024 + 57331) -> MP4TrackTiming {
            MP4TrackTiming(movieTimescale: movie, mediaTimescale: 44100, mediaDuration: media, edits: edits)
        }
        let edit = MP4TrackTiming.Edit(segmentDuration: 1300, mediaTime: 1024, rate: 1)
        #expect(ContainerFacts.mp4EditedFrames(track([edit]), sampleRate: 44100) == 57331)
        // Rounded up instead of down: still within the tick.
        #expect(ContainerFacts.mp4EditedFrames(track([.init(segmentDuration: 1301, mediaTime: 1024, rate: 1)]), sampleRate: 44100) == 57331)
        // An edit that ends earlier on purpose (two ticks short), or later than the media: not ours to change.
        #expect(ContainerFacts.mp4EditedFrames(track([.init(segmentDuration: 1299, mediaTime: 1024, rate: 1)]), sampleRate: 44100) == nil)
        #expect(ContainerFacts.mp4EditedFrames(track([.init(segmentDuration: 1302, mediaTime: 1024, rate: 1)]), sampleRate: 44100) == nil)
        // A movie timescale equal to the rate is exact either way.
        #expect(ContainerFacts.mp4EditedFrames(track([.init(segmentDuration: 57331, mediaTime: 1024, rate: 1)], movie: 44100), sampleRate: 44100) == 57331)
        #expect(ContainerFacts.mp4EditedFrames(track([.init(segmentDuration: 57330, mediaTime: 1024, rate: 1)], movie: 44100), sampleRate: 44100) == nil)
        // No edit list, an empty edit first, a rate other than 1, another media timescale: nil.
        #expect(ContainerFacts.mp4EditedFrames(track([]), sampleRate: 44100) == nil)
        #expect(ContainerFacts.mp4EditedFrames(track([.init(segmentDuration: 10, mediaTime: -1, rate: 1), edit]), sampleRate: 44100) == nil)
        #expect(ContainerFacts.mp4EditedFrames(track([.init(segmentDuration: 1300, mediaTime: 1024, rate: 2)]), sampleRate: 44100) == nil)
        #expect(ContainerFacts.mp4EditedFrames(track([edit]), sampleRate: 48000) == nil)
    }

    @Test("each part decodes to its exact length: the command line's samples without its end padding",
          arguments: MP4EditListTests.parts.map(\.path))
    func exactLength(_ path: String) throws {
        let frames = try #require(Self.parts.first { $0.path == path }).frames
        let decoder = FFmpegDecoderAdapter()
        let handle = try decoder.open(url: path)
        defer { decoder.close(handle) }
        #expect(try decoder.info(handle).totalFrames == frames)
        let samples = try decodeToEnd(decoder, handle)
        #expect(samples.count == Int(frames) * 2)
        let cli = try Fixtures.cliReference(path)
        try #require(cli.count > Int(frames) * 2)  // the CLI keeps the end padding
        #expect(maxDifference(samples[...], cli[..<samples.count]) == 0)
        // The last frames are reachable by seeking, and nothing follows them.
        try decoder.seek(handle, toFrame: frames - 5)
        #expect(try decodeToEnd(decoder, handle).count == 5 * 2)
    }
}
