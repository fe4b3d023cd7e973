// A playback service on a CounterDecoder, a manual-paced null output and a
// manual clock: every step of time is taken by the test, so each test is
// deterministic (no sleeps, no real time).
import HarmoniaCore
import HarmoniaTestSupport

final class ServiceHarness: @unchecked Sendable {
    let clock = ManualClock()
    let output: NullAudioOutput
    let decoder: CounterDecoder
    let service: DefaultPlaybackService
    private let recorded = LockedValue<[PlaybackEvent]>([])
    private let arrived = ConditionLock()

    /// - Parameter wrap: puts something between the service and the counter
    ///   decoder (a test that watches the decode thread's reads).
    ///   `wrapOutput` puts something between the service and the null output.
    init(_ sources: [String: CounterDecoder.Source], configuration: PlaybackConfiguration = PlaybackConfiguration(),
         tagReader: (any TagReaderPort)? = nil, wrap: (CounterDecoder) -> any DecoderPort = { $0 },
         wrapOutput: (NullAudioOutput) -> any AudioOutputPort = { $0 }) {
        decoder = CounterDecoder(sources)
        output = NullAudioOutput(pace: .manual, ringFrames: 1 << 17)
        service = DefaultPlaybackService(decoder: wrap(decoder), output: wrapOutput(output), clock: clock,
                                         tagReader: tagReader, configuration: configuration)
        service.observe { [recorded, arrived] event in
            recorded.withLock { $0.append(event) }
            arrived.withLock { arrived.broadcast() }
        }
    }

    /// Waits (without a deadline: the test's own time limit applies) until
    /// the service has announced `state` — events from the output's thread
    /// arrive asynchronously.
    func wait(forState state: PlaybackState) {
        arrived.withLock {
            while !recorded.withLock({ $0 }).contains(.stateChanged(state)) { arrived.wait() }
        }
    }

    /// Every event so far.
    var events: [PlaybackEvent] { recorded.withLock { $0 } }

    /// Events after the first `count`.
    func events(after count: Int) -> [PlaybackEvent] { Array(events.dropFirst(count)) }

    /// Lets `frames` frames of device time pass in 10 ms steps; returns the
    /// first channel of what the listener heard. After each step the decode
    /// thread settles, unless `settle` is false (its read is stalled).
    @discardableResult
    func listen(frames: Int, settle: Bool = true) -> [Float] {
        var heard: [Float] = []
        var remaining = frames
        while remaining > 0 {
            let (rate, channels) = output.format ?? (44_100, 2)
            let step = min(remaining, Int(rate / 100))
            var buffer = [Float](repeating: .nan, count: step * channels)
            let got = buffer.withUnsafeMutableBufferPointer { output.advance(frames: step, into: $0.baseAddress!) }
            for frame in 0..<got { heard.append(buffer[frame * channels]) }
            clock.advance(by: UInt64((Double(step) / rate * 1e9).rounded()))
            if settle { service.waitUntilSettled() }
            remaining -= step
        }
        return heard
    }

    func settle() { service.waitUntilSettled() }
}

/// Whether `values` counts up by one from its first value.
func isCounting(_ values: ArraySlice<Float>) -> Bool {
    zip(values, values.dropFirst()).allSatisfy { $1 == $0 + 1 }
}
