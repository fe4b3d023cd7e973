// FFmpegDecoderAdapter — specs/ports.md §DecoderPort
import HarmoniaCore
import Synchronization

/// `DecoderPort` on libavformat/libavcodec/libswresample: local files and
/// every protocol FFmpeg speaks (http, https), any format it demuxes.
///
/// Guarantees beyond the reference (specs/ports.md): exact length (encoder
/// delay and padding removed, iTunSMPB honoured) and frame-exact seek for
/// every codec. Thread-safe: the session table is guarded by a mutex and each
/// session by its own, so different handles decode in parallel.
public final class FFmpegDecoderAdapter: DecoderPort {
    /// Seconds a network source may send nothing before a read fails (15).
    public static let defaultNetworkTimeout = 15.0

    private let logger: any LoggerPort
    private let networkTimeout: Double
    private let sessions = Mutex<[DecodeHandle: LockedSession]>([:])
    private let nextID = Atomic<UInt64>(1)
    /// Set by `interruptAll()`; every session's FFmpeg contexts read it.
    private let interrupt = FFmpegInterruptFlag()

    /// - Parameters:
    ///   - logger: receives warnings (skipped corrupt packets).
    ///   - networkTimeout: seconds an http(s) source may send nothing before
    ///     `open` or `read` fails with `ioError`; until then a read waits (the
    ///     playback service shows `buffering` once the output runs dry).
    public init(logger: any LoggerPort = NoopLoggerAdapter(), networkTimeout: Double = FFmpegDecoderAdapter.defaultNetworkTimeout) {
        self.logger = logger
        self.networkTimeout = networkTimeout
    }

    public func open(url: String) throws(CoreError) -> DecodeHandle {
        if interrupt.isSet { throw Self.interrupted(url) }
        let session: FFmpegDecodeSession
        do {
            session = try FFmpegDecodeSession(url: url, logger: logger, networkTimeout: networkTimeout, interrupt: interrupt)
        } catch {
            if interrupt.isSet { throw Self.interrupted(url) }
            throw error
        }
        return register(session)
    }

    /// Opens `bytes` as `open(url:)` opens a file, through a custom AVIOContext;
    /// `name` stands for the file in messages. For the fuzz targets.
    /// - Throws: as `open(url:)`.
    package func open(bytes: [UInt8], name: String) throws(CoreError) -> DecodeHandle {
        register(try FFmpegDecodeSession(url: name, logger: logger, memory: FFmpegMemorySource(bytes: bytes)))
    }

    private func register(_ session: FFmpegDecodeSession) -> DecodeHandle {
        let handle = DecodeHandle(id: nextID.add(1, ordering: .relaxed).oldValue)
        sessions.withLock { $0[handle] = LockedSession(session) }
        return handle
    }

    public func info(_ handle: DecodeHandle) throws(CoreError) -> StreamInfo {
        try session(handle).withLock { $0.info }
    }

    /// Makes every open, probe and read in flight fail within about 0.1 s
    /// (FFmpeg's interrupt callback; a network source's poll interval), and
    /// every later one at once, with `ioError` ("interrupted"). For a process
    /// that is ending (a signal): it cannot be undone. Thread: any; never blocks.
    public func interruptAll() { interrupt.set() }

    private static func interrupted(_ url: String) -> CoreError {
        .ioError("\(url): interrupted (the player is stopping)")
    }

    public func read(_ handle: DecodeHandle, into buffer: UnsafeMutablePointer<Float>, maxFrames: Int) throws(CoreError) -> Int {
        guard maxFrames >= 0 else { throw .invalidArgument("maxFrames is \(maxFrames); it must be >= 0") }
        return try session(handle).withLock { session throws(CoreError) in
            try session.read(into: buffer, maxFrames: maxFrames)
        }
    }

    public func seek(_ handle: DecodeHandle, toFrame frame: Int64) throws(CoreError) {
        try session(handle).withLock { session throws(CoreError) in try session.seek(to: frame) }
    }

    public func position(_ handle: DecodeHandle) throws(CoreError) -> Int64 {
        try session(handle).withLock { $0.position }
    }

    /// The tags `FFmpegTagReaderAdapter` reads, from the open session (no I/O).
    public func tags(_ handle: DecodeHandle) throws(CoreError) -> TagBundle? {
        try session(handle).withLock { FFmpegTagReaderAdapter.tags(of: $0) }
    }

    public func close(_ handle: DecodeHandle) {
        let removed = sessions.withLock { $0.removeValue(forKey: handle) }
        removed?.withLock { $0.close() }
    }

    /// Number of sessions open now (tests check that close releases them).
    public var openSessionCount: Int { sessions.withLock { $0.count } }

    /// The session behind `handle`, for tests that check what close() frees.
    func sessionForTesting(_ handle: DecodeHandle) -> FFmpegDecodeSession? {
        try? session(handle).withLock { $0 }
    }

    private func session(_ handle: DecodeHandle) throws(CoreError) -> LockedSession {
        guard let session = sessions.withLock({ $0[handle] }) else {
            throw .invalidState("\(handle) is not open (closed, or never opened by this decoder)")
        }
        return session
    }
}

/// A session and the lock that serialises calls on it.
private final class LockedSession: @unchecked Sendable {
    private let lock = ConditionLock()
    // Only touched inside `lock.withLock`: that is what makes this Sendable.
    private let session: FFmpegDecodeSession

    init(_ session: FFmpegDecodeSession) { self.session = session }

    func withLock<T, E: Error>(_ body: (FFmpegDecodeSession) throws(E) -> T) throws(E) -> T {
        try lock.withLock { () throws(E) -> T in try body(session) }
    }
}
