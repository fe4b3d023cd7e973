// TagReaderPort — specs/ports.md §TagReaderPort

/// Reads tags and technical facts from a file. An adapter may decode the
/// first frame (the FFmpeg one does, so `duration` is the exact length), but
/// never the whole stream.
///
/// Threads: any thread, concurrently. May block on I/O.
public protocol TagReaderPort: Sendable {
    /// Returns the tags of `url`; fields the file does not carry are `nil`.
    /// - Throws: `notFound`, `ioError`, `unsupported` (not a media file or
    ///   no audio stream), `decodeError` (corrupt headers), `invalidArgument` (empty url).
    func read(url: String) throws(CoreError) -> TagBundle
}
