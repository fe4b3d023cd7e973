// DecoderPort — specs/ports.md §DecoderPort

/// Opaque identifier of one open decode session. Unique for the lifetime of
/// the adapter that issued it; never reused.
public struct DecodeHandle: Hashable, Sendable, CustomStringConvertible {
    /// The number the issuing adapter gave the session.
    public let id: UInt64
    /// Wraps `id`. Adapters make handles; an application only passes them back.
    public init(id: UInt64) { self.id = id }
    /// `DecodeHandle(id)`, for logs and messages.
    public var description: String { "DecodeHandle(\(id))" }
}

/// Decodes a file or URL to interleaved Float32 PCM at the stream's native
/// rate and channel count.
///
/// Positions are frames: frame `n` is the `n`-th frame a straight decode from
/// the start delivers, after encoder delay is removed, so frame 0 is the first
/// frame of the encoded source and `StreamInfo.totalFrames` is its length.
///
/// Threads: every method may be called from any thread. Calls on one handle
/// are serialised by the adapter; calls on different handles run in parallel.
/// `read` and `seek` may block on I/O: call them from a decode thread, never
/// from a real-time thread. Errors are always `CoreError`.
public protocol DecoderPort: AnyObject, Sendable {
    /// Opens `url` (a local path, `file://` URL or a URL of a protocol the
    /// adapter speaks) and prepares to deliver frame 0.
    /// - Throws: `notFound` (no such file), `ioError` (permission, network),
    ///   `unsupported` (not media, no audio stream, no decoder),
    ///   `decodeError` (corrupt headers or first packet), `invalidArgument` (empty url).
    func open(url: String) throws(CoreError) -> DecodeHandle

    /// As `open(url:)`, for a source that may be raw PCM without a header,
    /// in `format`: one that starts with a WAV or AIFF header is read by
    /// that header (as squeezelite reads slimproto's `p` streams).
    /// - Throws: as `open(url:)`; `unsupported` from a decoder that cannot
    ///   read raw PCM (the default).
    func open(url: String, rawPCM format: RawPCMFormat) throws(CoreError) -> DecodeHandle

    /// The stream's format and exact length. Does no I/O.
    /// - Throws: `invalidState` for a closed or unknown handle.
    func info(_ handle: DecodeHandle) throws(CoreError) -> StreamInfo

    /// Decodes up to `maxFrames` frames into `buffer`, which holds at least
    /// `maxFrames × channels` floats. Returns the frames written: fewer than
    /// `maxFrames` only at the end of the stream, 0 once it is reached.
    /// The steady-state loop allocates nothing.
    /// - Throws: `decodeError` (data that cannot be decoded past, with the
    ///   position), `ioError` (read failure), `invalidState` (closed handle).
    func read(_ handle: DecodeHandle, into buffer: UnsafeMutablePointer<Float>, maxFrames: Int) throws(CoreError) -> Int

    /// Moves so that the next frame `read` delivers is exactly `frame`, with
    /// the samples a straight decode has there (decoding from an earlier point
    /// as the codec needs). Seeking to `totalFrames` leaves the decoder at the end.
    /// - Throws: `invalidArgument` (negative, or past the end when the length
    ///   is known), `unsupported` (a source that cannot seek), `decodeError`,
    ///   `ioError`, `invalidState`.
    func seek(_ handle: DecodeHandle, toFrame frame: Int64) throws(CoreError)

    /// The frame the next `read` delivers.
    /// - Throws: `invalidState` for a closed or unknown handle.
    func position(_ handle: DecodeHandle) throws(CoreError) -> Int64

    /// Releases everything the session holds. Idempotent; never throws.
    func close(_ handle: DecodeHandle)

    /// The stream's tags as `TagReaderPort.read` gives them, when the adapter
    /// read them while opening; nil when it does not (the default). Does no
    /// I/O: a player then opens each file once, not once for the audio and
    /// again for the tags.
    /// - Throws: `invalidState` for a closed or unknown handle.
    func tags(_ handle: DecodeHandle) throws(CoreError) -> TagBundle?

    /// Whether a read of `handle` may wait on a network: the service reads
    /// the first frames in a control call only from sources that do not
    /// (a local file by its URL, or a source that says so: an offline copy).
    /// The default: true (the URL alone decides).
    func readsMayStall(_ handle: DecodeHandle) -> Bool

    /// Sends the network events of every source this decoder opens (the
    /// source's URL, the event: reconnects, station metadata, stream titles)
    /// to `handler`, on a thread of the decoder's; it must return quickly.
    /// The default sends none.
    func observeNetwork(_ handler: @escaping @Sendable (String, NetworkEvent) -> Void)
}

extension DecoderPort {
    /// This decoder does not read tags: nil.
    public func open(url: String, rawPCM format: RawPCMFormat) throws(CoreError) -> DecodeHandle {
        throw .unsupported("\(url): this decoder cannot read raw PCM (\(format.demuxerName))")
    }
    public func tags(_ handle: DecodeHandle) throws(CoreError) -> TagBundle? { nil }

    /// The URL alone decides.
    public func readsMayStall(_ handle: DecodeHandle) -> Bool { true }

    /// This decoder reports no network events.
    public func observeNetwork(_ handler: @escaping @Sendable (String, NetworkEvent) -> Void) {}

    /// Seeks to the frame nearest `seconds`: `round(seconds × sampleRate)`.
    /// - Throws: as `seek(_:toFrame:)`; `invalidArgument` for a negative or
    ///   non-finite time.
    public func seek(_ handle: DecodeHandle, toSeconds seconds: Double) throws(CoreError) {
        guard seconds.isFinite, seconds >= 0 else {
            throw .invalidArgument("seek position \(seconds) s is invalid: it must be a finite, non-negative number of seconds")
        }
        let rate = try info(handle).sampleRate
        try seek(handle, toFrame: Int64(clampingFrames: seconds * rate))
    }
}
