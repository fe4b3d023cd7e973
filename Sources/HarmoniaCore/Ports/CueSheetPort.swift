// CueSheetPort — specs/ports.md §CueSheetPort

/// Reads a CUE sheet into a `CueSheet`. The referenced audio file is not
/// opened: whether it exists is the decoder's business when it is played.
///
/// Threads: any thread, concurrently. May block on I/O.
public protocol CueSheetPort: Sendable {
    /// Parses the sheet at `url` (a local path or a `file://` URL).
    /// - Throws: `invalidArgument` (empty url), `notFound` (no such sheet),
    ///   `ioError` (unreadable), `unsupported` (not a local file, a directory,
    ///   several `FILE` directives), `decodeError` (malformed: the message names
    ///   the sheet and the line).
    func parse(url: String) throws(CoreError) -> CueSheet
}
