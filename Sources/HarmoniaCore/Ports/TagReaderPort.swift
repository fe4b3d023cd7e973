// TagReaderPort — specs/ports.md §TagReaderPort

/// Reads tags and technical facts from a file without decoding its audio.
///
/// Threads: any thread, concurrently. May block on I/O.
public protocol TagReaderPort: Sendable {
    /// Returns the tags of `url`; fields the file does not carry are `nil`.
    /// - Throws: `notFound`, `ioError`, `unsupported` (not a media file or
    ///   no audio stream), `decodeError` (corrupt headers), `invalidArgument` (empty url).
    func read(url: String) throws(CoreError) -> TagBundle
}
