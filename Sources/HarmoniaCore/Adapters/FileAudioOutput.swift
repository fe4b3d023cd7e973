// FileAudioOutput — specs/realtime.md §FileAudioOutput
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An `AudioOutputPort` that writes what it plays to a file: a WAV file (IEEE
/// float32) when the path ends in `.wav`, raw interleaved float32
/// little-endian otherwise (`/dev/null` works). It is how scripts and tests
/// check the end-to-end output without a sound server.
///
/// Unpaced (the default), it writes what it is given as fast as it is given:
/// `write` blocks on the disk. Paced by a clock (`pacedBy:`), it plays like a
/// device: frames wait in a ring and a consumer thread writes one period per
/// period of the clock (a `NullAudioOutput` in `.realTime` pace with this
/// file as its sink), so positions are heard positions, a flush drops what
/// was not yet played, and the file holds exactly what was heard. The WAV header's
/// sizes are written when the output stops (or is released); until then they
/// say "unknown" (0xFFFFFFFF), which readers take as "to the end of the file".
/// A second `configure` with another format throws: one file, one format.
/// A crossfade into another rate (`continueInFormatForFade`) continues the
/// file in its rate: what follows is converted to it (`RateContinuation`).
public final class FileAudioOutput: AudioOutputPort, @unchecked Sendable {
    /// The file written, as given to `init(path:)`.
    public let path: String
    public let events: AsyncStream<AudioOutputEvent>
    public func observe(_ handler: @escaping @Sendable (AudioOutputEvent) -> Void) { hub.observe(handler) }
    private let hub = EventHub<AudioOutputEvent>()
    private let isWAV: Bool

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var fd: Int32 = -1
    private var format: (rate: Double, channels: Int)?
    private var running = false
    private var paused = false
    private var written: Int64 = 0
    private var volume: Float = 1
    private var scratch: UnsafeMutablePointer<Float>?
    private var scratchFrames = 0
    /// Paced: the device-like player of the frames (set once, in init).
    private var pacer: NullAudioOutput?
    /// Unpaced: what is written after a crossfade into another rate,
    /// converted to the file's (paced, the pacer converts).
    private let continuation = RateContinuation()

    /// Creates the output. Nothing is opened yet: the first `configure`
    /// creates or truncates the file. A path ending in `.wav`
    /// (any case) gets a WAV header; any other path gets raw float32.
    /// - Parameters:
    ///   - clock: paces the output in real time when given.
    ///   - ringFrames: paced, how many frames may wait to be played.
    public init(path: String, pacedBy clock: (any ClockPort)? = nil, ringFrames: Int = 16384) {
        self.path = path
        isWAV = path.lowercased().hasSuffix(".wav")
        events = hub.stream()
        if let clock {
            let pacer = NullAudioOutput(pace: .realTime(clock), periodFrames: 1024, ringFrames: ringFrames) { [weak self] samples, frames, _ in
                self?.append(samples, frameCount: frames)
            }
            pacer.observe { [hub] in hub.emit($0) }
            self.pacer = pacer
        }
    }

    deinit {
        pacer?.stop()
        lock.withLock { closeFile() }
        scratch?.deallocate()
        hub.finish()
    }

    public func configure(sampleRate: Double, channels: Int) throws(CoreError) {
        guard sampleRate > 0, channels >= 1 else {
            throw .invalidArgument("\(path): sample rate \(sampleRate) and channels \(channels) must be positive")
        }
        try lock.withLock { () throws(CoreError) in
            running = false  // as the port says: stopped until start()
            if let format {
                guard format.rate == sampleRate && format.channels == channels else {
                    throw .invalidArgument("\(path): the file is \(Int(format.rate)) Hz, \(format.channels) ch; "
                        + "it cannot change to \(Int(sampleRate)) Hz, \(channels) ch mid-file")
                }
                return
            }
            let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                let reason = String(cString: strerror(errno))
                throw errno == ENOENT ? .notFound("\(path): cannot create the output file (\(reason))")
                    : .ioError("\(path): cannot open the output file for writing (\(reason))")
            }
            fd = descriptor
            format = (sampleRate, channels)
            if isWAV {
                guard writeAll(Self.wavHeader(rate: sampleRate, channels: channels, dataBytes: nil)) else {
                    throw .ioError("\(path): cannot write the WAV header (\(String(cString: strerror(errno))))")
                }
            }
        }
        try pacer?.configure(sampleRate: sampleRate, channels: channels)
        continuation.reset(sampleRate: sampleRate, channels: channels, streamFrames: lock.withLock { written })
    }

    public func start() throws(CoreError) {
        try lock.withLock { () throws(CoreError) in
            guard format != nil else { throw .invalidState("\(path): start() before configure()") }
            running = true
            paused = false
        }
        try pacer?.start()
    }

    /// Stops and finishes the file (WAV sizes written; unpaced, with the
    /// converter's last frames after a crossfade into another rate). Idempotent.
    public func stop() {
        pacer?.stop()
        if pacer == nil { continuation.finish { append($0, frameCount: $1) } }
        lock.withLock {
            running = false
            finishHeader()
        }
    }

    public func pause() {
        lock.withLock { paused = true }
        pacer?.pause()
    }

    public func resume() {
        lock.withLock { paused = false }
        pacer?.resume()
    }

    /// Unpaced, nothing is queued: every accepted frame is already in the
    /// file (but the converter's look-ahead, after a crossfade into another
    /// rate, is dropped). Paced, the frames not yet played are dropped.
    public func flush() {
        if let pacer { return pacer.flush() }
        continuation.flush(streamPlayed: lock.withLock { written })
    }

    /// Paced only (its pacer does it): the silence is written to the file,
    /// the skipped frames are not. Unpaced: false.
    public func shiftPlayback(byFrames frames: Int64) -> Bool { pacer?.shiftPlayback(byFrames: frames) ?? false }

    public func drain() {
        pacer?.drain()
        if pacer == nil { continuation.finish { append($0, frameCount: $1) } }
        lock.withLock { finishHeader() }
    }

    public func write(_ frames: UnsafePointer<Float>, frameCount: Int) -> Int {
        if let pacer {
            guard lock.withLock({ running && !paused }) else { return 0 }
            return pacer.write(frames, frameCount: frameCount)
        }
        return continuation.write(frames, frameCount: frameCount) { append($0, frameCount: $1, whenRunning: true) }
    }

    /// Continues the file in its rate, converting what follows from
    /// `sampleRate` (`RateContinuation`); the same channel count only.
    public func continueInFormatForFade(sampleRate: Double, channels: Int) throws(CoreError) -> Bool {
        if let pacer { return try pacer.continueInFormatForFade(sampleRate: sampleRate, channels: channels) }
        return continuation.continueIn(sampleRate: sampleRate, channels: channels) { append($0, frameCount: $1, whenRunning: true) }
    }

    /// Writes `frameCount` frames to the file at the volume (unpaced: from
    /// `write`, only while running; paced: what the pacer played).
    @discardableResult
    private func append(_ frames: UnsafePointer<Float>, frameCount: Int, whenRunning: Bool = false) -> Int {
        lock.withLock {
            guard !whenRunning || (running && !paused), let format, fd >= 0, frameCount > 0 else { return 0 }
            let samples = frameCount * format.channels
            var source = frames
            if volume != 1 {
                if scratchFrames < frameCount {
                    scratch?.deallocate()
                    scratch = .allocate(capacity: samples)
                    scratchFrames = frameCount
                }
                for i in 0..<samples { scratch![i] = frames[i] * volume }
                source = UnsafePointer(scratch!)
            }
            guard writeAll(UnsafeRawBufferPointer(start: source, count: samples * 4)) else {
                let error = CoreError.ioError("\(path): write failed (\(String(cString: strerror(errno))))")
                running = false
                hub.emit(.error(error))
                return 0
            }
            written += Int64(frameCount)
            return frameCount
        }
    }

    public func setVolume(_ volume: Float) { lock.withLock { self.volume = min(max(volume, 0), 1) } }
    public func releaseHeldFrames() {
        if let pacer { return pacer.releaseHeldFrames() }
        continuation.finish { append($0, frameCount: $1, whenRunning: true) }
    }

    public var framesPlayed: Int64 { pacer?.framesPlayed ?? continuation.heard(streamPlayed: lock.withLock { written }) }
    public var underrunCount: Int { pacer?.underrunCount ?? 0 }

    // MARK: Internals (called with `lock` held)

    private func writeAll(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { writeAll($0) }
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }

    /// Writes the final sizes into a WAV header of a regular file.
    private func finishHeader() {
        guard isWAV, fd >= 0, let format else { return }
        var status = stat()
        guard fstat(fd, &status) == 0, (status.st_mode & S_IFMT) == S_IFREG else { return }
        let header = Self.wavHeader(rate: format.rate, channels: format.channels, dataBytes: written * Int64(format.channels) * 4)
        _ = header.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
    }

    private func closeFile() {
        finishHeader()
        if fd >= 0 { close(fd) }
        fd = -1
    }

    /// A 44-byte RIFF/WAVE header, format 3 (IEEE float), 32 bits.
    static func wavHeader(rate: Double, channels: Int, dataBytes: Int64?) -> [UInt8] {
        func le32(_ v: UInt32) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 24)] }
        func le16(_ v: UInt16) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8)] }
        let data: UInt32 = dataBytes.map { UInt32(clamping: $0) } ?? 0xFFFF_FFFF
        let riff: UInt32 = dataBytes.map { UInt32(clamping: $0 + 36) } ?? 0xFFFF_FFFF
        let blockAlign = UInt16(channels * 4)
        return Array("RIFF".utf8) + le32(riff) + Array("WAVE".utf8)
            + Array("fmt ".utf8) + le32(16) + le16(3) + le16(UInt16(channels)) + le32(UInt32(rate))
            + le32(UInt32(rate) * UInt32(blockAlign)) + le16(blockAlign) + le16(32)
            + Array("data".utf8) + le32(data)
    }
}
