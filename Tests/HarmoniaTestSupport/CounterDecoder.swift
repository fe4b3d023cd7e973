// CounterDecoder: a scripted DecoderPort for the service's unit tests. It is
// no substitute for the FFmpeg adapter (tested against real files); it lets a
// test name every frame: frame i of a source is the value `base + i` on every
// channel, so a played stream shows any lost, repeated or reordered frame.
import HarmoniaCore

public final class CounterDecoder: DecoderPort, @unchecked Sendable {
    /// One scripted source.
    public struct Source: Sendable {
        public var frames: Int64
        public var sampleRate: Double
        public var channels: Int
        /// Frame i is `base + i`.
        public var base: Float
        /// `open` throws this.
        public var openError: CoreError?
        /// `read` throws this once the decoder reaches `failAt`.
        public var failAt: Int64?
        public var readError: CoreError
        /// `read` blocks at this frame until `release(url)` is called.
        public var stallAt: Int64?
        /// What `tags(_:)` gives: nil, as a decoder that reads no tags.
        public var tags: TagBundle?
        /// `open` blocks until `release(url)` is called (a slow network open).
        public var stallOpen: Bool

        public init(frames: Int64, sampleRate: Double = 44_100, channels: Int = 2, base: Float = 0,
                    openError: CoreError? = nil, failAt: Int64? = nil,
                    readError: CoreError = .decodeError("corrupt packet"), stallAt: Int64? = nil, tags: TagBundle? = nil,
                    stallOpen: Bool = false) {
            self.frames = frames
            self.sampleRate = sampleRate
            self.channels = channels
            self.base = base
            self.openError = openError
            self.failAt = failAt
            self.readError = readError
            self.stallAt = stallAt
            self.tags = tags
            self.stallOpen = stallOpen
        }
    }

    private struct Session {
        let url: String
        var source: Source
        var position: Int64 = 0
    }

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var sources: [String: Source]
    private var sessions: [UInt64: Session] = [:]
    private var nextID: UInt64 = 1
    private var released: Set<String> = []
    private var stalled: Set<String> = []
    private var opens: [String] = []
    private var reads = 0

    public init(_ sources: [String: Source]) { self.sources = sources }

    /// URLs opened so far, in order.
    public var openedURLs: [String] { lock.withLock { opens } }
    /// Calls to `read` so far.
    public var readCount: Int { lock.withLock { reads } }
    /// Sessions not closed yet.
    public var openSessionCount: Int { lock.withLock { sessions.count } }

    /// Lets a read stalled on `url` go on.
    public func release(_ url: String) {
        lock.withLock {
            released.insert(url)
            lock.broadcast()
        }
    }

    /// Moves the stall of `url` to `frame` (for the sessions open on it too):
    /// a read stalled before `frame` goes on and stops there.
    public func moveStall(_ url: String, to frame: Int64) {
        lock.withLock {
            sources[url]?.stallAt = frame
            for (id, session) in sessions where session.url == url { sessions[id]?.source.stallAt = frame }
            stalled.remove(url)
            lock.broadcast()
        }
    }

    /// Blocks until a read (or, with `stallOpen`, the open) is stalled on `url`.
    public func waitUntilStalled(_ url: String) {
        lock.withLock { while !stalled.contains(url) { lock.wait() } }
    }

    public func open(url: String) throws(CoreError) -> DecodeHandle {
        try lock.withLock { () throws(CoreError) -> DecodeHandle in
            guard let source = sources[url] else { throw .notFound("\(url): no such file") }
            opens.append(url)
            if source.stallOpen {
                stalled.insert(url)
                lock.broadcast()
                while !released.contains(url) { lock.wait() }
            }
            if let error = source.openError { throw error }
            let id = nextID
            nextID += 1
            sessions[id] = Session(url: url, source: source)
            return DecodeHandle(id: id)
        }
    }

    public func info(_ handle: DecodeHandle) throws(CoreError) -> StreamInfo {
        let source = try lock.withLock { () throws(CoreError) in try session(handle).source }
        return StreamInfo(totalFrames: source.frames, sampleRate: source.sampleRate, channels: source.channels, bitDepth: 32)
    }

    public func read(_ handle: DecodeHandle, into buffer: UnsafeMutablePointer<Float>, maxFrames: Int) throws(CoreError) -> Int {
        try lock.withLock { () throws(CoreError) -> Int in
            reads += 1
            var session = try session(handle)
            while let stallAt = session.source.stallAt, session.position >= stallAt, !released.contains(session.url) {
                stalled.insert(session.url)
                lock.broadcast()
                lock.wait()
                session = try self.session(handle)  // released, or the stall moved
            }
            let source = session.source
            var count = Int(min(Int64(maxFrames), source.frames - session.position))
            if let stallAt = source.stallAt, session.position < stallAt, !released.contains(session.url) {
                count = min(count, Int(stallAt - session.position))
            }
            if let failAt = source.failAt {
                if session.position >= failAt { throw source.readError }
                count = min(count, Int(failAt - session.position))
            }
            for frame in 0..<max(count, 0) {
                let value = source.base + Float(session.position + Int64(frame))
                for channel in 0..<source.channels { buffer[frame * source.channels + channel] = value }
            }
            session.position += Int64(max(count, 0))
            sessions[handle.id] = session
            return max(count, 0)
        }
    }

    public func seek(_ handle: DecodeHandle, toFrame frame: Int64) throws(CoreError) {
        try lock.withLock { () throws(CoreError) in
            var session = try session(handle)
            guard frame >= 0, frame <= session.source.frames else {
                throw .invalidArgument("\(session.url): frame \(frame) is outside 0…\(session.source.frames)")
            }
            session.position = frame
            sessions[handle.id] = session
        }
    }

    public func position(_ handle: DecodeHandle) throws(CoreError) -> Int64 {
        try lock.withLock { () throws(CoreError) in try session(handle).position }
    }

    public func tags(_ handle: DecodeHandle) throws(CoreError) -> TagBundle? {
        try lock.withLock { () throws(CoreError) in try session(handle).source.tags }
    }

    public func close(_ handle: DecodeHandle) {
        _ = lock.withLock { sessions.removeValue(forKey: handle.id) }
    }

    private func session(_ handle: DecodeHandle) throws(CoreError) -> Session {
        guard let session = sessions[handle.id] else { throw .invalidState("\(handle) is not open") }
        return session
    }
}
