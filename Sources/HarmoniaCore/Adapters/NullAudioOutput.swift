// NullAudioOutput — specs/realtime.md §NullAudioOutput
import Foundation

/// An `AudioOutputPort` that plays into nothing: for tests, scripts and
/// services without a device.
///
/// - `.realTime(clock)`: a consumer thread takes `periodFrames` frames from the
///   ring every period of the clock's time, exactly as a device would. With a
///   `ManualClock` it is deterministic: each `advance` by a period plays one
///   period. Underruns happen as on a device when the ring runs dry.
/// - `.asFastAsPossible`: `write` plays the frames at once (no ring, no thread).
/// - `.manual`: frames play only when the owner calls `advance(frames:)`
///   (no thread): a test or the vector runner moves the device's time itself.
///
/// Threads: as the port says. The consumer thread only reads the ring and
/// bumps counters; events are yielded from it (it is not a real device
/// thread). Call `stop()` before releasing a started output.
public final class NullAudioOutput: AudioOutputPort, @unchecked Sendable {
    /// How fast the output plays what it is given.
    public enum Pace: Sendable {
        /// As a device would: a thread takes a period's frames per period of the clock.
        case realTime(any ClockPort)
        /// `write` plays at once: no ring, no thread.
        case asFastAsPossible
        /// Only when the caller asks (`advance`): deterministic tests.
        case manual
    }

    /// Receives what a `.realTime` output plays, period by period, on its
    /// consumer thread: `frames × channels` interleaved floats, valid for the
    /// call only. The paced file output writes them to its file.
    public typealias Sink = @Sendable (_ samples: UnsafePointer<Float>, _ frames: Int, _ channels: Int) -> Void

    public let events: AsyncStream<AudioOutputEvent>
    public func observe(_ handler: @escaping @Sendable (AudioOutputEvent) -> Void) { hub.observe(handler) }
    private let hub = EventHub<AudioOutputEvent>()
    private let pace: Pace
    private let periodFrames: Int
    private let ringFrames: Int
    private let sink: Sink?
    /// What is written after a crossfade into another rate, converted to the stream's.
    private let continuation = RateContinuation()

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var ring: SPSCRingBuffer?
    private var sampleRate: Double = 0
    private var running = false
    private var paused = false
    /// Pauses so far: a period during which a pause happened plays nothing
    /// and restarts the schedule (a paused device does not catch up).
    private var pauses = 0
    private var volume: Float = 1
    private var thread: Thread?
    private var generation = 0
    // Written by the consumer (or by `write` when as fast as possible); guarded by `lock`.
    private var played: Int64 = 0
    private var underruns = 0
    private var hadData = false
    /// `.manual` pace: the fraction of a frame `advance(seconds:)` owes, and
    /// a scratch buffer for frames played without a destination.
    private var manualRemainder = 0.0
    private var manualScratch: [Float] = []
    /// `shiftPlayback`'s frames still to skip (counted as played) and to
    /// play as silence (not counted), taken by the real-time consumer.
    private var skipPending: Int64 = 0
    private var silencePending: Int64 = 0

    /// Creates a stopped output. The ring is allocated by `configure`; with a
    /// `.realTime` pace, `start()` starts the consumer thread.
    /// - Parameters:
    ///   - pace: how the output consumes what it is given (`Pace`).
    ///   - periodFrames: frames consumed per period in real-time pace.
    ///   - ringFrames: ring capacity (rounded up to a power of two).
    ///   - sink: what the frames played go to (`.realTime` pace only).
    public init(pace: Pace, periodFrames: Int = 1024, ringFrames: Int = 16384, sink: Sink? = nil) {
        self.pace = pace
        self.periodFrames = periodFrames
        self.ringFrames = ringFrames
        self.sink = sink
        events = hub.stream()
    }

    deinit {
        stop()
        hub.finish()
    }

    public func configure(sampleRate: Double, channels: Int) throws(CoreError) {
        guard sampleRate > 0, channels >= 1 else {
            throw .invalidArgument("NullAudioOutput: sample rate \(sampleRate) and channels \(channels) must be positive")
        }
        stop()
        lock.withLock {
            self.sampleRate = sampleRate
            ring = SPSCRingBuffer(minimumCapacity: ringFrames, channels: channels)
            skipPending = 0
            silencePending = 0
            played = 0
            underruns = 0
            hadData = false
        }
        continuation.reset(sampleRate: sampleRate, channels: channels)
    }

    public func start() throws(CoreError) {
        try lock.withLock { () throws(CoreError) in
            guard ring != nil else { throw .invalidState("NullAudioOutput: start() before configure()") }
            guard !running else { return }
            running = true
            paused = false
            generation += 1
            if case .realTime(let clock) = pace {
                let myGeneration = generation
                // The thread holds the output until stop() ends it.
                let thread = Thread { nameCurrentThread("harmonia.null"); self.consume(clock: clock, generation: myGeneration) }
                thread.name = "harmonia.null-output"
                self.thread = thread
                thread.start()
            }
        }
    }

    public func stop() {
        lock.withLock {
            running = false
            generation += 1
            thread = nil
            skipPending = 0
            silencePending = 0
            ring?.requestDiscard()
            lock.broadcast()
        }
        continuation.flush(streamPlayed: lock.withLock { played })
    }

    public func pause() { lock.withLock { paused = true; pauses += 1; lock.broadcast() } }
    public func resume() { lock.withLock { paused = false; lock.broadcast() } }

    public func flush() {
        lock.withLock {
            // The consumer reads only under `lock`: drop the frames at once,
            // so their space is free for the next write.
            ring?.discardReadable()
            skipPending = 0
            silencePending = 0
            lock.broadcast()
        }
        continuation.flush(streamPlayed: lock.withLock { played })
    }

    /// Plays out what is queued (with the converter's last frames, after a
    /// crossfade into another rate).
    public func drain() {
        continuation.finish { takeFrames($0, frameCount: $1) }
        lock.withLock {
            while running, let ring, ring.framesWritten > ring.framesRead, case .realTime = pace {
                lock.wait()
            }
        }
    }

    public func write(_ frames: UnsafePointer<Float>, frameCount: Int) -> Int {
        continuation.write(frames, frameCount: frameCount) { takeFrames($0, frameCount: $1) }
    }

    /// Continues in another rate by converting it to the configured one
    /// (`RateContinuation`); the same channel count only.
    public func continueInFormatForFade(sampleRate: Double, channels: Int) throws(CoreError) -> Bool {
        continuation.continueIn(sampleRate: sampleRate, channels: channels) { takeFrames($0, frameCount: $1) }
    }

    public func releaseHeldFrames() { continuation.finish { takeFrames($0, frameCount: $1) } }

    /// Frames in the configured format into the ring (or played at once).
    private func takeFrames(_ frames: UnsafePointer<Float>, frameCount: Int) -> Int {
        if case .asFastAsPossible = pace {
            return lock.withLock {
                guard running, !paused else { return 0 }
                played += Int64(frameCount)
                return frameCount
            }
        }
        guard let ring = lock.withLock({ ring }) else { return 0 }
        return ring.write(frames, frames: frameCount)
    }

    public func setVolume(_ volume: Float) { lock.withLock { self.volume = min(max(volume, 0), 1) } }

    public var framesPlayed: Int64 { continuation.heard(streamPlayed: lock.withLock { played }) }

    /// In `.realTime` pace: the consumer applies it from its next period,
    /// to the frame (specs/realtime.md §AudioOutputPort).
    public func shiftPlayback(byFrames frames: Int64) -> Bool {
        guard case .realTime = pace else { return false }
        lock.withLock {
            if frames > 0 { skipPending += frames } else { silencePending += -max(frames, -Int64(Int32.max)) }
        }
        return true
    }

    /// The configured format, or nil before `configure`.
    public var format: (sampleRate: Double, channels: Int)? {
        lock.withLock { ring.map { (sampleRate, $0.channels) } }
    }

    /// `.manual` pace: plays up to `frames` queued frames as a device would
    /// (nothing while stopped or paused), copying them to `destination`
    /// (`frames × channels` floats) when given. Returns the frames played;
    /// fewer than asked after some audio is an underrun, reported as an event.
    @discardableResult
    public func advance(frames: Int, into destination: UnsafeMutablePointer<Float>? = nil) -> Int {
        var event: AudioOutputEvent?
        let got = lock.withLock { () -> Int in
            guard case .manual = pace, running, !paused, let ring, frames > 0 else { return 0 }
            let got: Int
            if let destination {
                got = ring.read(into: destination, frames: frames)
            } else {
                got = ring.discardForManualAdvance(frames: frames, scratch: &manualScratch)
            }
            event = account(played: got, of: frames, ring: ring)
            return got
        }
        if let event { hub.emit(event) }
        return got
    }

    /// `.manual` pace: plays `seconds` worth of frames at the configured rate.
    @discardableResult
    public func advance(seconds: Double) -> Int {
        let frames = lock.withLock { () -> Int in
            guard sampleRate > 0 else { return 0 }
            let exact = seconds * sampleRate + manualRemainder
            let whole = exact.rounded(.down)
            manualRemainder = exact - whole
            return Int(whole)
        }
        return advance(frames: frames)
    }
    public var underrunCount: Int { lock.withLock { underruns } }

    /// Counts `got` of `wanted` frames as played, as a device would: fewer
    /// than wanted after some audio is an underrun (the event to send, once
    /// the lock is released). Wakes `drain`. Call with `lock` held.
    private func account(played got: Int, of wanted: Int, ring: SPSCRingBuffer) -> AudioOutputEvent? {
        defer { lock.broadcast() }
        played += Int64(got)
        if got > 0 { hadData = true }
        guard got < wanted && hadData && ring.framesWritten > 0 else { return nil }
        underruns += 1
        hadData = false
        return .underrun(count: underruns)
    }

    /// The consumer: one period per period of clock time, like a device.
    private func consume(clock: any ClockPort, generation: Int) {
        let (ring, rate) = lock.withLock { (self.ring!, sampleRate) }
        let scratch = UnsafeMutablePointer<Float>.allocate(capacity: periodFrames * ring.channels)
        defer { scratch.deallocate() }
        let periodNanoseconds = UInt64((Double(periodFrames) / rate * 1e9).rounded())
        var deadline = clock.now()
        while true {
            let (proceed, pausesBefore): (Bool, Int) = lock.withLock {
                var waited = false
                while self.generation == generation && (paused || !running) { lock.wait(); waited = true }
                if waited { deadline = clock.now() }
                return (self.generation == generation, pauses)
            }
            guard proceed else { return }
            deadline += periodNanoseconds
            clock.sleep(until: deadline)
            var event: AudioOutputEvent?
            var got = 0, silent = 0
            lock.withLock {
                guard self.generation == generation else { return }
                guard !paused, pauses == pausesBefore else {
                    deadline = clock.now()
                    return
                }
                // Silence asked for by shiftPlayback first (played, not heard),
                // then frames to skip (heard, not played), then the period.
                silent = Int(min(silencePending, Int64(periodFrames)))
                silencePending -= Int64(silent)
                if silent > 0 { scratch.update(repeating: 0, count: silent * ring.channels) }
                let rest = scratch + silent * ring.channels
                while skipPending > 0 {
                    let dropped = ring.read(into: rest, frames: Int(min(skipPending, Int64(periodFrames - silent))))
                    guard dropped > 0 else { break }
                    skipPending -= Int64(dropped)
                    played += Int64(dropped)
                }
                got = ring.read(into: rest, frames: periodFrames - silent)
                event = silent == periodFrames ? nil : account(played: got, of: periodFrames - silent, ring: ring)
            }
            if got + silent > 0, let sink { sink(scratch, got + silent, ring.channels) }
            if let event { hub.emit(event) }
        }
    }
}

extension SPSCRingBuffer {
    /// Reads and drops up to `frames` frames through `scratch`.
    fileprivate func discardForManualAdvance(frames: Int, scratch: inout [Float]) -> Int {
        if scratch.count < frames * channels { scratch = [Float](repeating: 0, count: frames * channels) }
        return scratch.withUnsafeMutableBufferPointer { read(into: $0.baseAddress!, frames: frames) }
    }
}
