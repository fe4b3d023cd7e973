// SnapcastOutputAdapter — specs/snapcast.md
//
// HarmoniaSnapcast is a module of its own because it is an adapter with its
// own C dependency and its own outside world: it reaches libswresample (the
// CFFmpeg system library, for resampling only; no decoding), speaks TCP to a
// snapserver, and is tested against a real snapserver. HarmoniaCore stays
// free of C, the FFmpeg decoder module stays free of sockets, and an
// application that wants no Snapcast does not link it.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import HarmoniaCore

/// An `AudioOutputPort` that feeds a Snapcast server: every room of a
/// snapserver plays what the queue plays, in sync.
///
/// It connects as a TCP client to snapserver's TCP source in server mode
/// (`source = tcp://IP:PORT/?name=NAME&mode=server&sampleformat=48000:16:2`)
/// and sends interleaved little-endian integers in the source's sample format,
/// converted (and resampled, libsoxr) from the queue's Float32.
///
/// **Pacing.** A writer thread sends one 20 ms period at a time on the
/// clock's time (snapserver's own read size, so it wakes no more often than
/// snapserver reads), keeping the socket `lead` (default 150 ms) ahead of
/// those reads, never behind: a read that finds nothing
/// re-anchors snapserver's stream and glitches every room. When there is
/// nothing to play (paused, stopped, between tracks, an underrun) it sends
/// silence, so snapserver's timeline never breaks and pause, skip and resume
/// are heard exactly `lead + buffer` later.
///
/// **Position.** `framesPlayed` is what the rooms hear: a frame sent as
/// stream frame S plays at `anchor + S / rate + buffer − 20 ms` (snapserver
/// stamps each chunk with its read time less one chunk and the rooms play it
/// `buffer` later). Frames still in the pipeline at a flush or stop are heard
/// but not counted, so a seek's new position starts where the service expects.
///
/// **Faults.** Snapserver gone: an `.error` event within one period, the
/// ring is no longer consumed (the queue holds where it was), a new
/// connection is tried every 0.5 s, and `.reconnected(frame:)` when it is
/// back. What the old server had buffered (lead + buffer) is lost with it.
///
/// Threads: as the port says. The writer thread takes the output's lock once
/// per period to produce that period (read the ring, gain, convert, account);
/// it sends and waits with the lock released, allocates nothing and logs
/// nothing per period.
public final class SnapcastOutputAdapter: AudioOutputPort, @unchecked Sendable {
    public struct Options: Sendable {
        /// Where and in what format.
        public var endpoint: SnapcastEndpoint
        /// Paces the writer and dates the position (monotonic).
        public var clock: any ClockPort
        /// Frames the ring holds at the queue's rate (rounded up to a power of two).
        public var ringFrames: Int
        /// How long the first connection may take before `configure` fails.
        public var connectTimeout: Double

        public init(endpoint: SnapcastEndpoint, clock: any ClockPort = MonotonicClockAdapter(),
                    ringFrames: Int = 65536, connectTimeout: Double = 2) {
            self.endpoint = endpoint
            self.clock = clock
            self.ringFrames = ringFrames
            self.connectTimeout = connectTimeout
        }
    }

    public let options: Options
    public let events: AsyncStream<AudioOutputEvent>
    private let core: SnapcastWriterCore

    public init(options: Options) {
        self.options = options
        core = SnapcastWriterCore(options: options)
        events = core.hub.stream()
    }

    /// `SnapcastOutputAdapter(options:)` for a `snapcast://` URL.
    /// - Throws: `invalidArgument` for a malformed URL.
    public convenience init(url: String, clock: any ClockPort = MonotonicClockAdapter()) throws(CoreError) {
        self.init(options: Options(endpoint: try SnapcastEndpoint(url: url), clock: clock))
    }

    deinit {
        core.shutDown()
        core.hub.finish()
    }

    public func observe(_ handler: @escaping @Sendable (AudioOutputEvent) -> Void) { core.hub.observe(handler) }

    /// Sets the queue's format (a new ring and converter; framesPlayed
    /// restarts at 0). The first call connects to snapserver and starts the
    /// writer thread; later calls never wait for the network.
    /// - Throws: `invalidArgument` (rate, channels), `ioError` (snapserver not
    ///   reachable at the first call; the message says what to start).
    public func configure(sampleRate: Double, channels: Int) throws(CoreError) {
        try core.configure(sampleRate: sampleRate, channels: channels)
    }

    public func start() throws(CoreError) { try core.start() }
    public func stop() { core.stop() }
    public func pause() { core.setPaused(true) }
    public func resume() { core.setPaused(false) }
    public func flush() { core.flush() }
    public func drain() { core.drain() }

    public func write(_ frames: UnsafePointer<Float>, frameCount: Int) -> Int {
        guard let ring = core.currentRing() else { return 0 }
        return ring.write(frames, frames: frameCount)
    }

    /// Always continues: snapserver's format is fixed, so a new rate or
    /// channel count only needs a converter of its own. The writer thread
    /// finishes the queued audio (with its converter's tail) and goes on
    /// with the new format's within the same period.
    /// - Throws: `invalidArgument` (rate, channels), as `configure`.
    public func continueInFormat(sampleRate: Double, channels: Int) throws(CoreError) -> Bool {
        try core.continueInFormat(sampleRate: sampleRate, channels: channels)
        return true
    }

    /// Our gain on the samples (ramped over one period); heard after the
    /// pipeline (lead + buffer), like everything sent.
    public func setVolume(_ volume: Float) { core.setVolume(volume) }

    public var framesPlayed: Int64 { core.framesPlayed }
    public var underrunCount: Int { core.underrunCount }

    /// Whether the output is connected to snapserver now.
    public var isConnected: Bool { core.isConnected }
}

/// The state shared by the adapter's control calls and its writer thread.
/// Every field is guarded by `lock` unless marked otherwise.
final class SnapcastWriterCore: @unchecked Sendable {
    let hub = EventHub<AudioOutputEvent>()
    // Immutable after init.
    let endpoint: SnapcastEndpoint
    let clock: any ClockPort
    let ringFrames: Int
    let connectTimeout: Double
    let periodFrames: Int
    let leadFrames: Int64
    /// Nanoseconds from sending stream frame 0 to the rooms playing it.
    let pipelineDelay: UInt64
    let bytesPerFrame: Int
    static let retryInterval: UInt64 = 500_000_000

    let lock = ConditionLock()
    // Control state.
    /// The ring and converter the writer reads, then formats written after
    /// it (`continueInFormat`), oldest first: the producer writes into the
    /// newest; the writer moves on when the one before runs dry.
    private var ring: SPSCRingBuffer?
    private var resampler: SnapcastResampler?
    private var laterFormats: [(ring: SPSCRingBuffer, resampler: SnapcastResampler)] = []
    private var running = false
    private var paused = false
    private var volume: Float = 1
    private var closing = false
    private var threadStarted = false
    private var everConnected = false
    private var connected = false
    // Writer state, touched only under `lock` (the writer produces under it,
    // and flush/stop/configure reset it).
    private var appliedVolume: Float = 1
    private var hadData = false
    private var realSinceTail = false
    private var underruns = 0
    /// Input frames taken from the ring and counted since `configure`.
    private var counted: Int64 = 0
    // Position: where the connection's stream started and what it carried.
    private var anchor: UInt64 = 0
    private var sentFrames: Int64 = 0
    private var lastPlayed: Int64 = 0
    private let history: PeriodHistory
    // Buffers: allocated once in init, used under `lock` by the writer.
    private let inputScratch: UnsafeMutablePointer<Float>
    private let inputScratchFrames = 8192
    private let tail: UnsafeMutableRawPointer
    private let tailFrames = 16384
    private var tailOffset = 0
    private var tailCount = 0
    /// The period being sent (writer thread only, outside the lock too).
    private let sendBuffer: UnsafeMutableRawPointer

    init(options: SnapcastOutputAdapter.Options) {
        endpoint = options.endpoint
        clock = options.clock
        ringFrames = options.ringFrames
        connectTimeout = options.connectTimeout
        periodFrames = max(1, endpoint.sampleRate / 50)
        leadFrames = Int64(endpoint.sampleRate) * Int64(endpoint.leadMilliseconds) / 1000
        pipelineDelay = UInt64(max(0, endpoint.bufferMilliseconds - 20)) * 1_000_000
        bytesPerFrame = endpoint.bytesPerFrame
        let periods = (endpoint.bufferMilliseconds + endpoint.leadMilliseconds + 2000) / 20
        history = PeriodHistory(minimumCapacity: periods)
        inputScratch = .allocate(capacity: inputScratchFrames * 8)
        tail = .allocate(byteCount: tailFrames * bytesPerFrame, alignment: 16)
        sendBuffer = .allocate(byteCount: periodFrames * bytesPerFrame, alignment: 16)
    }

    deinit {
        inputScratch.deallocate()
        tail.deallocate()
        sendBuffer.deallocate()
    }

    // MARK: Control

    /// The ring the producer writes into: the newest format's.
    func currentRing() -> SPSCRingBuffer? { lock.withLock { laterFormats.last?.ring ?? ring } }

    /// A ring and converter for input in `sampleRate`/`channels`.
    private func makeStage(sampleRate: Double, channels: Int) throws(CoreError) -> (ring: SPSCRingBuffer, resampler: SnapcastResampler) {
        guard sampleRate >= 1, sampleRate <= 1_000_000, sampleRate == sampleRate.rounded(), (1...8).contains(channels) else {
            throw .invalidArgument("\(endpoint.description): sample rate \(sampleRate) and channels \(channels) are not playable (whole Hz, 1…8 channels)")
        }
        let converter = try SnapcastResampler(inputRate: Int(sampleRate), inputChannels: channels,
                                              outputRate: endpoint.sampleRate, outputChannels: endpoint.channels,
                                              outputBits: endpoint.bits)
        return (SPSCRingBuffer(minimumCapacity: ringFrames, channels: channels), converter)
    }

    /// Queues a new format after what the rings hold (see the adapter's).
    func continueInFormat(sampleRate: Double, channels: Int) throws(CoreError) {
        let stage = try makeStage(sampleRate: sampleRate, channels: channels)
        try lock.withLock { () throws(CoreError) in
            guard ring != nil else { throw .invalidState("\(endpoint.description): continueInFormat() before configure()") }
            laterFormats.append(stage)
        }
    }

    func configure(sampleRate: Double, channels: Int) throws(CoreError) {
        let (newRing, converter) = try makeStage(sampleRate: sampleRate, channels: channels)
        let mustConnect = lock.withLock { () -> Bool in
            ring = newRing
            resampler = converter
            laterFormats.removeAll()
            running = false
            paused = false
            hadData = false
            realSinceTail = false
            underruns = 0
            tailCount = 0
            // What is still in the pipeline is heard but is not this format's.
            counted = 0
            lastPlayed = 0
            history.cap(at: 0)
            return !everConnected
        }
        guard mustConnect else { return }
        switch SnapcastSocket.connect(host: endpoint.host, port: endpoint.port, timeout: connectTimeout) {
        case .failure(let failure):
            throw .ioError("\(endpoint.description): cannot connect to snapserver's TCP source (\(failure)). "
                + "Start snapserver with a source such as 'source = tcp://0.0.0.0:\(endpoint.port)/?name=harmonia&mode=server&sampleformat="
                + "\(endpoint.sampleRate):\(endpoint.bits):\(endpoint.channels)', or choose another --output")
        case .success(let socket):
            let start = lock.withLock { () -> Bool in
                everConnected = true
                connected = true
                anchor = 0
                sentFrames = 0
                defer { threadStarted = true }
                return !threadStarted
            }
            guard start else { var socket = socket; socket.close(); return }
            let thread = Thread { [self] in
                nameCurrentThread("harmonia.snapcast")
                run(socket: socket)
            }
            thread.name = "harmonia.snapcast"
            thread.start()
        }
    }

    func start() throws(CoreError) {
        try lock.withLock { () throws(CoreError) in
            guard ring != nil else { throw .invalidState("\(endpoint.description): start() before configure()") }
            running = true
            paused = false
        }
    }

    func stop() {
        lock.withLock {
            running = false
            dropQueuedLocked()
            lock.broadcast()
        }
    }

    func setPaused(_ value: Bool) { lock.withLock { paused = value } }

    func flush() {
        lock.withLock {
            dropQueuedLocked()
            lock.broadcast()
        }
    }

    /// Drops the ring, the converter's buffers and the tail, and stops
    /// counting what is still in the pipeline: the position holds where the
    /// rooms are until new audio reaches them. Lock held.
    private func dropQueuedLocked() {
        // What follows is written in the newest format.
        if let newest = laterFormats.popLast() {
            ring = newest.ring
            resampler = newest.resampler
            laterFormats.removeAll()
        }
        ring?.discardReadable()  // the writer reads only under `lock`
        resampler?.reset()
        tailCount = 0
        realSinceTail = false
        hadData = false
        let heard = heardLocked(now: clock.now())
        history.cap(at: heard)
        counted = heard
    }

    func drain() {
        lock.withLock {
            var emptySince: UInt64?
            while running, !closing, let ring {
                let now = clock.now()
                let queued = ring.framesWritten > ring.framesRead || tailCount > 0
                    || laterFormats.contains { $0.ring.framesWritten > $0.ring.framesRead }
                if !queued && heardLocked(now: now) >= counted { return }
                if !queued, emptySince == nil { emptySince = now }
                // Never longer than the pipeline plus 2 s once everything is sent.
                if let emptySince, now - emptySince > pipelineDelay + UInt64(endpoint.leadMilliseconds + 2000) * 1_000_000 { return }
                clock.wait(on: lock, until: now + 10_000_000)
            }
        }
    }

    func setVolume(_ value: Float) {
        lock.withLock { volume = value.isNaN ? 1 : min(max(value, 0), 1) }
    }

    var framesPlayed: Int64 { lock.withLock { heardLocked(now: clock.now()) } }
    var underrunCount: Int { lock.withLock { underruns } }
    var isConnected: Bool { lock.withLock { connected } }

    func shutDown() {
        lock.withLock {
            closing = true
            lock.broadcast()
        }
    }

    /// The input frames the rooms have heard by `now`: the period being
    /// played, interpolated; monotonic. Lock held.
    private func heardLocked(now: UInt64) -> Int64 {
        guard connected, anchor != 0, now > anchor + pipelineDelay else { return lastPlayed }
        let streamFrame = Int64(Double(now - anchor - pipelineDelay) * Double(endpoint.sampleRate) / 1e9)
        lastPlayed = max(lastPlayed, history.heard(atStreamFrame: streamFrame, floor: lastPlayed))
        return lastPlayed
    }

    // MARK: The writer thread

    private enum Step {
        case exit
        case again
        case send(AudioOutputEvent?)
    }

    /// Sends periods on the clock until `shutDown`; reconnects when the
    /// server goes away.
    private func run(socket initial: SnapcastSocket) {
        var socket: SnapcastSocket? = initial
        let periodBytes = periodFrames * bytesPerFrame
        var pendingOffset = 0
        var pendingBytes = 0
        while true {
            guard var connection = socket else {
                guard let fresh = reconnect() else { return }
                socket = fresh
                pendingBytes = 0
                continue
            }
            if pendingBytes > 0 {
                switch connection.send(sendBuffer + pendingOffset, count: pendingBytes) {
                case .failure(let failure):
                    connection.close()
                    socket = nil
                    lose(failure)
                case .success(let sent):
                    pendingOffset += sent
                    pendingBytes -= sent
                    if pendingBytes > 0 {
                        // snapserver is not reading: wait for room, but see a shutdown.
                        connection.waitWritable(milliseconds: 10)
                        if lock.withLock({ closing }) { connection.close(); return }
                    }
                }
                continue
            }
            if let failure = connection.peerClosed() {
                connection.close()
                socket = nil
                lose(failure)
                continue
            }
            let step = lock.withLock { () -> Step in
                if closing { return .exit }
                let now = clock.now()
                if anchor == 0 { anchor = now }
                let due = anchor &+ UInt64(Double(max(0, sentFrames + Int64(periodFrames) - leadFrames)) * 1e9 / Double(endpoint.sampleRate))
                if due > now {
                    clock.wait(on: lock, until: due)
                    return .again
                }
                let event = produceLocked(into: sendBuffer)
                sentFrames += Int64(periodFrames)
                return .send(event)
            }
            switch step {
            case .exit:
                connection.close()
                return
            case .again:
                continue
            case .send(let event):
                if let event { hub.emit(event) }
                pendingOffset = 0
                pendingBytes = periodBytes
            }
        }
    }

    /// One period of the stream into `out`: the queue's audio when playing,
    /// silence otherwise or for what is missing. When a format's ring runs
    /// dry and a later format is queued, its converter's tail and the next
    /// format's audio follow in the same period. Lock held.
    private func produceLocked(into out: UnsafeMutableRawPointer) -> AudioOutputEvent? {
        let before = counted
        var filled = 0
        var event: AudioOutputEvent?
        if running, !paused, ring != nil {
            filled = takeTailLocked(into: out, capacity: periodFrames)
            while filled < periodFrames, let ring, let resampler {
                filled += convertLocked(from: ring, with: resampler, into: out + filled * bytesPerFrame, capacity: periodFrames - filled)
                guard filled < periodFrames, !laterFormats.isEmpty else { break }
                // This format's audio is all in: its converter's tail, then the next format's.
                keepTailLocked(of: resampler)
                let next = laterFormats.removeFirst()
                self.ring = next.ring
                self.resampler = next.resampler
                filled += takeTailLocked(into: out + filled * bytesPerFrame, capacity: periodFrames - filled)
            }
            if filled < periodFrames {
                // The ring ran dry: what the resampler's filter still holds
                // belongs to the audio that just ended.
                if let resampler { keepTailLocked(of: resampler) }
                filled += takeTailLocked(into: out + filled * bytesPerFrame, capacity: periodFrames - filled)
                if filled < periodFrames, hadData {
                    underruns += 1
                    hadData = false
                    event = .underrun(count: underruns)
                }
            }
        }
        if filled < periodFrames {
            (out + filled * bytesPerFrame).initializeMemory(as: UInt8.self, repeating: 0, count: (periodFrames - filled) * bytesPerFrame)
        }
        history.append(streamStart: sentFrames, streamEnd: sentFrames + Int64(periodFrames), countedStart: before, countedEnd: counted)
        return event
    }

    /// Converts from `ring` into `out` until `capacity` output frames or the
    /// ring runs dry: what the converter holds first, then new input (our
    /// gain applied, counted). Returns the output frames. Lock held.
    private func convertLocked(from ring: SPSCRingBuffer, with resampler: SnapcastResampler,
                               into out: UnsafeMutableRawPointer, capacity: Int) -> Int {
        let channels = ring.channels
        let inputCapacity = inputScratchFrames * 8 / channels
        var filled = 0
        while filled < capacity {
            filled += resampler.convert(inputScratch, frames: 0, into: out + filled * bytesPerFrame, capacity: capacity - filled)
            if filled >= capacity { break }
            let missing = capacity - filled
            let want = resampler.resamples
                ? min(inputCapacity, (missing * resampler.inputRate + endpoint.sampleRate - 1) / endpoint.sampleRate + 8)
                : min(inputCapacity, missing)
            let got = ring.read(into: inputScratch, frames: want)
            if got == 0 { break }
            hadData = true
            realSinceTail = true
            applyVolume(frames: got, channels: channels)
            counted += Int64(got)
            filled += resampler.convert(inputScratch, frames: got, into: out + filled * bytesPerFrame, capacity: capacity - filled)
        }
        return filled
    }

    /// Keeps what `resampler`'s filter still holds of the audio just
    /// converted, to be sent next (`takeTailLocked`). Lock held.
    private func keepTailLocked(of resampler: SnapcastResampler) {
        guard realSinceTail, resampler.resamples, tailCount == 0 else { return }
        tailCount = resampler.flush(into: tail, capacity: tailFrames)
        tailOffset = 0
        realSinceTail = false
    }

    /// Copies up to `capacity` frames of the kept tail into `out`; returns how many. Lock held.
    private func takeTailLocked(into out: UnsafeMutableRawPointer, capacity: Int) -> Int {
        let n = min(tailCount, capacity)
        guard n > 0 else { return 0 }
        out.copyMemory(from: tail + tailOffset * bytesPerFrame, byteCount: n * bytesPerFrame)
        tailOffset += n
        tailCount -= n
        return n
    }

    /// Our gain on `frames` input frames in the scratch, ramped from the
    /// last gain applied to the one asked for. Lock held.
    private func applyVolume(frames: Int, channels: Int) {
        let target = volume, start = appliedVolume
        appliedVolume = target
        if start == 1 && target == 1 { return }
        let step = (target - start) / Float(frames)
        var gain = start
        for frame in 0..<frames {
            gain += step
            let base = frame * channels
            for channel in 0..<channels { inputScratch[base + channel] *= gain }
        }
    }

    /// The connection is gone: say so, freeze the position at what the rooms
    /// heard, stop taking from the ring until the server is back.
    private func lose(_ failure: SnapcastSocket.Failure) {
        let shouldReport = lock.withLock { () -> Bool in
            let heard = heardLocked(now: clock.now())
            connected = false
            anchor = 0
            sentFrames = 0
            lastPlayed = heard
            history.removeAll()
            return !closing
        }
        if shouldReport {
            hub.emit(.error(.ioError("\(endpoint.description): lost the connection to snapserver (\(failure)); "
                + "retrying every \(Self.retryInterval / 1_000_000) ms")))
        }
    }

    /// Tries to connect every `retryInterval` until it does (nil: shut down).
    private func reconnect() -> SnapcastSocket? {
        while true {
            let attempt = clock.now()
            if lock.withLock({ closing }) { return nil }
            switch SnapcastSocket.connect(host: endpoint.host, port: endpoint.port, timeout: 0.4) {
            case .success(let socket):
                let frame = lock.withLock { () -> Int64 in
                    connected = true
                    anchor = 0
                    sentFrames = 0
                    return lastPlayed
                }
                hub.emit(.reconnected(frame: frame))
                return socket
            case .failure:
                let stop = lock.withLock { () -> Bool in
                    let due = attempt &+ Self.retryInterval
                    while !closing, clock.now() < due { clock.wait(on: lock, until: due) }
                    return closing
                }
                if stop { return nil }
            }
        }
    }
}
