// The crossfade's service logic on scripted sources (specs/services.md
// §Crossfade): where the listener meets the next track (the fade's middle),
// each side's ReplayGain before the mix, and a seek or stop in the middle
// of a fade leaving nothing half-faded. Every frame of a CounterDecoder
// source names itself, so the heard samples say exactly what was mixed.
import Foundation
@testable import HarmoniaCore
import HarmoniaTestSupport
import Testing

@Suite("PlaybackService crossfade") struct CrossfadeServiceTests {
    /// 2 s tracks at 44.1 kHz, a 0.5 s crossfade: the fade is frames
    /// 66150 ..< 88200 of "a", its middle output frame 77175.
    static let frames: Int64 = 88_200
    static let fade = 22_050
    static let fadeStart = 66_150
    static let bBase: Float = 1_000_000

    /// "a" at half gain (ReplayGain track −6.0206 dB), "b" at unity.
    static func harness() throws -> ServiceHarness {
        var quiet = TagBundle()
        quiet.replayGainTrack = 20 * log10(0.5)
        var configuration = PlaybackConfiguration()
        configuration.crossfade = try CrossfadeSettings(seconds: 0.5)
        configuration.replayGain = ReplayGainSettings(mode: .track, preampDB: 0, preventClipping: false)
        return ServiceHarness(["a": .init(frames: frames, base: 0, tags: quiet), "b": .init(frames: frames, base: bBase)],
                              configuration: configuration)
    }

    /// The harness playing "a" then "b" from the start.
    static func playing() throws -> ServiceHarness {
        let h = try harness()
        h.service.enqueue([Track(url: "a"), Track(url: "b")])
        try h.service.jump(to: 0)
        try h.service.play()
        return h
    }

    /// What the listener should hear at output frame `i`.
    static func expected(_ i: Int) -> Float {
        if i < fadeStart { return Float(i) * 0.5 }
        if i < fadeStart + fade {
            let k = i - fadeStart, t = Double(k) / Double(fade)
            return Float(i) * 0.5 * Float(cos(.pi / 2 * t)) + (bBase + Float(k)) * Float(sin(.pi / 2 * t))
        }
        return bBase + Float(i - fadeStart)
    }

    /// The largest |heard − expected| for heard samples from output frame `first` on.
    static func largestError(_ heard: [Float], from first: Int) -> Float {
        heard.enumerated().reduce(0) { max($0, abs($1.element - expected(first + $1.offset))) }
    }

    func started(_ events: [PlaybackEvent]) -> [String] {
        events.compactMap { if case .trackStarted(_, let track) = $0 { track.url } else { nil } }
    }

    @Test("the listener meets the next track in the fade's middle; each side has its own ReplayGain; every frame is the mix")
    func heardJoinAtTheMiddle() throws {
        let h = try Self.playing()
        var heard = h.listen(frames: Self.fadeStart + Self.fade / 2 - 441)
        #expect(started(h.events) == ["a"])
        #expect(h.service.currentIndex == 0)
        heard += h.listen(frames: 441)
        #expect(started(h.events) == ["a", "b"])
        #expect(h.service.currentIndex == 1)
        // The listener is at the fade's middle: the incoming track's position is its own, half the fade in.
        #expect(abs(h.service.currentTime() - (Double(Self.fade / 2) / 44_100)) < 1e-9)
        heard += h.listen(frames: 200_000)
        #expect(heard.count == Int(Self.frames) * 2 - Self.fade)
        let worst = Self.largestError(heard, from: 0)
        #expect(worst < 0.5, "heard differs from the equal-power mix by \(worst)")
        #expect(h.service.state == .stopped)
        #expect(h.decoder.openSessionCount == 0)
    }

    @Test("a seek in the middle of a fade drops it: the sought track plays alone, and fades again at its end")
    func seekDropsTheFade() throws {
        let h = try Self.playing()
        h.listen(frames: Self.fadeStart + 4410)  // in the fade, before its middle: "a" is heard
        try h.service.seek(to: 1.0)
        let after = h.listen(frames: 4410)
        // "a" alone from 1 s, at its gain: 44100 · 0.5, counting.
        #expect(after.first == 44_100 * 0.5)
        #expect(zip(after, after.dropFirst()).allSatisfy { $1 == $0 + 0.5 })
        // And the fade comes again where it should: the rest is the same mix.
        let rest = h.listen(frames: 200_000)
        let offset = Self.fadeStart - (44_100 + 4410)  // output frames until the fade begins again
        let worst = Self.largestError(rest, from: Self.fadeStart - offset)
        #expect(rest.count == Int(Self.frames) * 2 - Self.fade - (44_100 + 4410))
        #expect(worst < 0.5)
        #expect(h.decoder.openSessionCount == 0)
    }

    @Test("a seek after the fade's middle plays the next track alone; a stop mid-fade closes both sides")
    func seekIntoTheNextTrackAndStop() throws {
        let h = try Self.playing()
        h.listen(frames: Self.fadeStart + Self.fade / 2 + 441)  // "b" is heard
        #expect(h.service.currentIndex == 1)
        try h.service.seek(to: 0.1)
        let after = h.listen(frames: 4410)
        #expect(after.first == Self.bBase + 4410)
        #expect(isCounting(after[...]))
        // Back into the next fade: a stop in the middle of one leaves no session open.
        try h.service.jump(to: 0)
        h.listen(frames: Self.fadeStart + 100)
        h.service.stop()
        h.settle()
        #expect(h.decoder.openSessionCount == 0)
        #expect(h.service.state == .stopped)
    }

    @Test("a manual next fades from the heard position: the next track is current at once and rises while the heard one falls; paused, it cuts")
    func manualNextFadesFromTheHeardPosition() throws {
        let h = try Self.playing()
        h.listen(frames: 22_050)
        try h.service.next()
        #expect(h.service.currentIndex == 1)
        #expect(started(h.events) == ["a", "b"])
        let after = h.listen(frames: 44_100)
        var worst: Float = 0
        for (k, value) in after.enumerated() {
            let t = Double(k) / Double(Self.fade)
            let expected = k < Self.fade
                ? Float(22_050 + k) * 0.5 * Float(cos(.pi / 2 * t)) + (Self.bBase + Float(k)) * Float(sin(.pi / 2 * t))
                : Self.bBase + Float(k)
            worst = max(worst, abs(value - expected))
        }
        #expect(after.count == 44_100)
        #expect(worst < 0.5, "heard differs from a fade out of 'a' at 0.5 s by \(worst)")

        // Paused, a skip is a cut: "a" from its start, alone.
        try h.service.pause()
        try h.service.previous()
        try h.service.play()
        let cut = h.listen(frames: 4410)
        #expect(cut.first == 0)
        #expect(zip(cut, cut.dropFirst()).allSatisfy { $1 == $0 + 0.5 })
        h.service.stop()
        h.settle()
        #expect(h.decoder.openSessionCount == 0)
    }

    @Test("the next range of the same file (a CUE sheet's next track) joins gapless, not faded")
    func cueRangesStayGapless() throws {
        var configuration = PlaybackConfiguration()
        configuration.crossfade = try CrossfadeSettings(seconds: 0.5)
        let h = ServiceHarness(["disc": .init(frames: 176_400)], configuration: configuration)
        var first = Track(url: "disc"), second = Track(url: "disc")
        first.end = 2
        second.start = 2
        h.service.enqueue([first, second])
        try h.service.jump(to: 0)
        try h.service.play()
        let heard = h.listen(frames: 200_000)
        #expect(heard.count == 176_400)
        #expect(heard.first == 0)
        #expect(isCounting(heard[...]))
    }

    @Test("across 44.1 -> 48 kHz on an output that continues in the new rate: the outgoing side is converted and fades, no gap; the join is at the middle")
    func rateChangeFade() throws {
        var configuration = PlaybackConfiguration()
        configuration.crossfade = try CrossfadeSettings(seconds: 0.5)
        var continuing: FormatContinuingOutput?
        let h = ServiceHarness(["a": .init(frames: 88_200), "b": .init(frames: 96_000, sampleRate: 48_000, base: Self.bBase)],
                               configuration: configuration,
                               wrapOutput: { let output = FormatContinuingOutput($0); continuing = output; return output })
        let output = try #require(continuing)
        h.service.enqueue([Track(url: "a"), Track(url: "b")])
        try h.service.jump(to: 0)
        try h.service.play()
        // "a" alone to its fade (66150 frames at 44.1 kHz), then 0.5 s at 48 kHz mixed: "b" is heard at the middle.
        var heard = h.listen(frames: 66_150)
        #expect(output.calls == ["configure 44100.0", "continue 48000.0"])
        heard += h.listen(frames: 12_000 - 480)
        #expect(h.service.currentIndex == 0)
        // (The harness steps 441 frames, 10 ms of 44.1 kHz, at 48 kHz: one more step
        // wakes the decode thread, which sleeps at least `pollInterval`.)
        heard += h.listen(frames: 480 + 441)
        #expect(h.service.currentIndex == 1)
        #expect(abs(h.service.currentTime() - (0.25 + 441.0 / 48_000)) < 1e-9)
        heard += h.listen(frames: 200_000)
        #expect(heard.count == 66_150 + 96_000)
        #expect(heard.prefix(66_150).enumerated().allSatisfy { Float($0.offset) == $0.element })
        // In the fade: what is left after taking out "b" is "a" at 48 kHz, each frame within one of "a"'s frames.
        let step = 44_100.0 / 48_000
        var worst = 0.0
        for k in 0..<24_000 {
            let t = Double(k) / 24_000
            guard cos(.pi / 2 * t) > 0.2 else { break }
            let outgoing = (Double(heard[66_150 + k]) - Double(Self.bBase + Float(k)) * sin(.pi / 2 * t)) / cos(.pi / 2 * t)
            worst = max(worst, abs(outgoing - (66_150 + Double(k) * step)))
        }
        #expect(worst < 1, "the converted outgoing side is \(worst) frames off")
        #expect(heard.suffix(72_000).enumerated().allSatisfy { Self.bBase + Float(24_000 + $0.offset) == $0.element })
        #expect(h.decoder.openSessionCount == 0)
    }

    @Test("across a rate change on an output that cannot continue in it: no fade, every frame of both tracks, as without crossfade")
    func rateChangeWithoutContinuingOutput() throws {
        var configuration = PlaybackConfiguration()
        configuration.crossfade = try CrossfadeSettings(seconds: 0.5)
        let h = ServiceHarness(["a": .init(frames: 88_200), "b": .init(frames: 96_000, sampleRate: 48_000, base: Self.bBase)],
                               configuration: configuration, wrapOutput: { FormatContinuingOutput($0, continues: false) })
        h.service.enqueue([Track(url: "a"), Track(url: "b")])
        try h.service.jump(to: 0)
        try h.service.play()
        let heard = h.listen(frames: 300_000)
        #expect(heard.count == 88_200 + 96_000)
        #expect(heard.first == 0 && isCounting(heard.prefix(88_200)))
        #expect(heard[88_200] == Self.bBase && isCounting(heard.suffix(96_000)))
        #expect(started(h.events) == ["a", "b"])
        #expect(h.decoder.openSessionCount == 0)
    }

    @Test("across 44.1 -> 48 kHz on the null output, whose stream keeps 44.1 kHz: a bit-exact to the fade, the fade and b converted to 44.1 kHz, no gap; b starts at the fade's middle, its position in its own frames")
    func rateChangeFadeConvertedByTheOutput() throws {
        var configuration = PlaybackConfiguration()
        configuration.crossfade = try CrossfadeSettings(seconds: 0.5)
        let h = ServiceHarness(["a": .init(frames: 88_200), "b": .init(frames: 96_000, sampleRate: 48_000, base: Self.bBase)],
                               configuration: configuration)
        h.service.enqueue([Track(url: "a"), Track(url: "b")])
        try h.service.jump(to: 0)
        try h.service.play()
        let step = 48_000.0 / 44_100  // b's frames per frame heard
        // "a" alone to its fade, bit-exact; the fade is 24,000 frames at 48 kHz, 22,050 heard.
        var heard = h.listen(frames: 66_150)
        #expect(heard.enumerated().allSatisfy { Float($0.offset) == $0.element })
        heard += h.listen(frames: 11_025 - 441)
        #expect(h.service.currentIndex == 0)
        heard += h.listen(frames: 2 * 441)
        #expect(h.service.currentIndex == 1)
        // b's position: its frames under the heard ones (12,000 at the middle).
        let expected = (Double(11_025 + 441) * step).rounded(.up) / 48_000
        #expect(abs(h.service.currentTime() - expected) <= 1 / 48_000, "position \(h.service.currentTime()) s, not \(expected) s")
        heard += h.listen(frames: 200_000)
        // Every frame of both, less the overlap: 66,150 + 96,000 frames of b at 44.1 kHz.
        #expect(heard.count == 66_150 + 88_200)
        #expect(h.service.state == .stopped)
        // The fade and b, converted: heard frame n is b's frame n·step (a ramp
        // converts to a ramp), a under it at its own rate, equal-power.
        var worst = 0.0
        for n in 0..<(88_200 - FadeResampler.halfTaps) {
            let k = Double(n) * step
            let t = min(k / 24_000, 1)
            let want = (66_150 + k * 44_100 / 48_000) * cos(.pi / 2 * t) + (Double(Self.bBase) + k) * sin(.pi / 2 * t)
            worst = max(worst, abs(Double(heard[66_150 + n]) - want))
        }
        #expect(worst < 1, "the converted fade and b are \(worst) off")
        #expect(h.decoder.openSessionCount == 0)
        if ProcessInfo.processInfo.environment["HARMONIA_CROSSFADE_FIGURES"] != nil {
            print("null output 44.1 -> 48 kHz: the converted fade and b at most \(worst) off (values up to 1.1e6)")
        }
    }

    @Test("on the null output after a fade into 48 kHz: a seek in the converted track lands on its frame; a fade back into 44.1 kHz ends the conversion, bit-exact from its end")
    func convertedUntilAFadeBack() throws {
        var configuration = PlaybackConfiguration()
        configuration.crossfade = try CrossfadeSettings(seconds: 0.5)
        configuration.decodeAhead = 0.5
        let cBase: Float = 2_000_000
        // b is 2.5 s long, so its fade into c has not begun at the seek (it
        // begins as the decoder reaches b's last 0.5 s): b's rate is still the one written.
        let h = ServiceHarness(["a": .init(frames: 88_200), "b": .init(frames: 120_000, sampleRate: 48_000, base: Self.bBase),
                                "c": .init(frames: 88_200, base: cBase)], configuration: configuration)
        h.service.enqueue([Track(url: "a"), Track(url: "b"), Track(url: "c")])
        try h.service.jump(to: 0)
        try h.service.play()
        h.listen(frames: 66_150 + 22_050 + 4410)
        #expect(h.service.currentIndex == 1)
        // A seek in b (converted): heard from b's frame 48,000 on, each frame b's frame n·step.
        try h.service.seek(to: 1.0)
        #expect(abs(h.service.currentTime() - 1.0) < 1e-9)
        let step = 48_000.0 / 44_100
        let sought = h.listen(frames: 4410)
        let seekError = sought.enumerated().map { abs(Double($0.element) - (Double(Self.bBase) + 48_000 + Double($0.offset) * step)) }.max() ?? .infinity
        #expect(seekError < 1, "after the seek, \(seekError) off b's frames")
        #expect(abs(h.service.currentTime() - (1.0 + 4410.0 / 44_100)) <= 1 / 48_000, "position \(h.service.currentTime())")
        // b's rest, the fade into c (the stream's rate again), then c alone: bit-exact.
        let rest = h.listen(frames: 300_000)
        #expect(h.service.state == .stopped)
        let cAlone = 88_200 - 22_050
        #expect(rest.count >= cAlone)
        #expect(rest.suffix(cAlone).enumerated().allSatisfy { cBase + Float(22_050 + $0.offset) == $0.element },
                "c after its fade is not c's frames, bit-exact")
        // b from the seek to its fade (0.5 s before its end) converted, the fade (0.5 s of c), c alone.
        #expect(rest.count == Int(((96_000.0 - 48_000) / step).rounded(.up)) - 4410 + 22_050 + cAlone)
        #expect(h.decoder.openSessionCount == 0)
    }
}
