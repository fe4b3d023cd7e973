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
    private let network: FFmpegNetworkSettings
    private let sessions = Mutex<[DecodeHandle: LockedSession]>([:])
    private let nextID = Atomic<UInt64>(1)
    /// Set by `interruptAll()`; every session's FFmpeg contexts read it.
    private let interrupt = FFmpegInterruptFlag()
    private let networkObservers: NetworkObservers

    /// - Parameters:
    ///   - logger: receives warnings (skipped corrupt packets).
    ///   - networkTimeout: seconds an http(s) source may send nothing before
    ///     `open` or `read` fails with `ioError`; until then a read waits (the
    ///     playback service shows `buffering` once the output runs dry).
    ///     For URLs `networkSource` handles, its own policy decides.
    ///   - networkSource: reads the network URLs it handles, with the
    ///     engine's policy (HarmoniaHTTP's `HTTPSourcePort`); other URLs, and
    ///     all without one, are read by FFmpeg's own protocols.
    ///   - verifyTLS, httpHeaders: for URLs FFmpeg reads itself (HLS).
    public init(logger: any LoggerPort = NoopLoggerAdapter(), networkTimeout: Double = FFmpegDecoderAdapter.defaultNetworkTimeout,
                networkSource: (any ByteSourcePort)? = nil, verifyTLS: Bool = true, httpHeaders: [String] = []) {
        self.logger = logger
        let observers = NetworkObservers()
        networkObservers = observers
        network = FFmpegNetworkSettings(sourcePort: networkSource, observer: { url, event in observers.post(url, event) },
                                        timeout: networkTimeout, verifyTLS: verifyTLS, headers: httpHeaders)
    }

    public func open(url: String) throws(CoreError) -> DecodeHandle {
        try open(url: url, raw: nil)
    }

    /// Raw PCM by FFmpeg's raw demuxer for `format` (`s16le`, `s24be`…, with
    /// its rate and channels), unless the source starts with a WAV or AIFF header.
    public func open(url: String, rawPCM format: RawPCMFormat) throws(CoreError) -> DecodeHandle {
        try open(url: url, raw: format)
    }

    private func open(url: String, raw: RawPCMFormat?) throws(CoreError) -> DecodeHandle {
        if interrupt.isSet { throw Self.interrupted(url) }
        let session: FFmpegDecodeSession
        do {
            session = try FFmpegDecodeSession(url: url, logger: logger, network: network, interrupt: interrupt, rawPCM: raw)
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

    public func observeNetwork(_ handler: @escaping @Sendable (String, NetworkEvent) -> Void) {
        networkObservers.add(handler)
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

    /// A session reading through a `ByteSource` asks it (an offline copy
    /// reads from disk); any other (a file, FFmpeg's own protocols) leaves it to the URL.
    public func readsMayStall(_ handle: DecodeHandle) -> Bool {
        (try? session(handle).readsMayStall) ?? true
    }

    public func close(_ handle: DecodeHandle) {
        let removed = sessions.withLock { $0.removeValue(forKey: handle) }
        removed?.cancelNetwork()  // a read waiting on the network returns first
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
    /// The session's network source, if any: cancelled without the lock.
    private let networkIO: FFmpegByteSourceIO?

    init(_ session: FFmpegDecodeSession) {
        self.session = session
        networkIO = session.input.byteSourceIO
    }

    /// Ends a wait on the network now (any thread; the session then fails its read).
    func cancelNetwork() { networkIO?.cancel() }

    /// Whether the session's source may stall (no lock: the source is immutable).
    var readsMayStall: Bool { networkIO?.source.readsMayStall ?? true }

    func withLock<T, E: Error>(_ body: (FFmpegDecodeSession) throws(E) -> T) throws(E) -> T {
        try lock.withLock { () throws(E) -> T in try body(session) }
    }
}

/// The handlers `observeNetwork` registered; events go to each, in order.
private final class NetworkObservers: Sendable {
    private let handlers = Mutex<[@Sendable (String, NetworkEvent) -> Void]>([])

    func add(_ handler: @escaping @Sendable (String, NetworkEvent) -> Void) {
        handlers.withLock { $0.append(handler) }
    }

    func post(_ url: String, _ event: NetworkEvent) {
        for handler in handlers.withLock({ $0 }) { handler(url, event) }
    }
}
