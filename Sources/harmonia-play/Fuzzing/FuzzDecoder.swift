// FuzzDecoder: the control target's decoder — specs/testing.md §Fuzzing
//
// The control target dispatches whatever the fuzzer writes, including
// `queue/add` and `info` with any path or URL; a real decoder would open
// files, devices and network hosts. This one opens nothing: every URL is a
// silent stream whose form follows from its text, so the service's queue,
// seek and state logic runs as with real tracks.
import HarmoniaCore
import Synchronization

final class FuzzDecoder: DecoderPort {
    private struct Session {
        let info: StreamInfo
        var position: Int64 = 0
    }

    private let sessions = Mutex<[UInt64: Session]>([:])
    private let nextID = Atomic<UInt64>(1)

    /// The stream `url` stands for: `notFound` when it contains "missing",
    /// `decodeError` for "corrupt"; otherwise 0.1 s per character (none for
    /// "empty"), mono for "mono", at 8 kHz for "8k".
    static func stream(_ url: String) throws(CoreError) -> StreamInfo {
        if url.contains("missing") { throw .notFound("\(url): no such file") }
        if url.contains("corrupt") { throw .decodeError("\(url): corrupt headers") }
        let rate: Double = url.contains("8k") ? 8000 : 44_100
        let frames = url.contains("empty") ? 0 : Int64(url.utf8.count) * Int64(rate / 10)
        return StreamInfo(totalFrames: frames, sampleRate: rate, channels: url.contains("mono") ? 1 : 2, bitDepth: 16, codec: "pcm_s16le")
    }

    /// What `info` gives for `url`: its stream and a title.
    static func info(url: String) throws(CoreError) -> (tags: TagBundle, stream: StreamInfo) {
        let stream = try stream(url)
        var tags = TagBundle()
        tags.title = url
        tags.duration = stream.duration
        return (tags, stream)
    }

    func open(url: String) throws(CoreError) -> DecodeHandle {
        let info = try Self.stream(url)
        let id = nextID.add(1, ordering: .relaxed).oldValue
        sessions.withLock { $0[id] = Session(info: info) }
        return DecodeHandle(id: id)
    }

    func info(_ handle: DecodeHandle) throws(CoreError) -> StreamInfo {
        try withSession(handle) { $0.info }
    }

    func read(_ handle: DecodeHandle, into buffer: UnsafeMutablePointer<Float>, maxFrames: Int) throws(CoreError) -> Int {
        try withSession(handle) { session in
            let count = Int(min(Int64(maxFrames), session.info.totalFrames! - session.position))
            buffer.update(repeating: 0, count: count * session.info.channels)
            session.position += Int64(count)
            return count
        }
    }

    func seek(_ handle: DecodeHandle, toFrame frame: Int64) throws(CoreError) {
        try withSession(handle) { (session) throws(CoreError) in
            guard frame >= 0, frame <= session.info.totalFrames! else {
                throw .invalidArgument("frame \(frame) is outside 0…\(session.info.totalFrames!)")
            }
            session.position = frame
        }
    }

    func position(_ handle: DecodeHandle) throws(CoreError) -> Int64 {
        try withSession(handle) { $0.position }
    }

    func close(_ handle: DecodeHandle) {
        _ = sessions.withLock { $0.removeValue(forKey: handle.id) }
    }

    private func withSession<T>(_ handle: DecodeHandle, _ body: (inout Session) throws(CoreError) -> T) throws(CoreError) -> T {
        try sessions.withLock { (sessions) throws(CoreError) -> T in
            guard var session = sessions[handle.id] else { throw .invalidState("\(handle) is not open") }
            defer { sessions[handle.id] = session }
            return try body(&session)
        }
    }
}
