// TagReaderService — specs/services.md §TagReaderService

/// Builds `Track`s for an application's playlist from a `TagReaderPort`.
/// Threads: any, concurrently; blocks on I/O.
public final class TagReaderService: Sendable {
    private let tagReader: any TagReaderPort

    /// Creates the service on `tagReader`; it keeps no other state.
    public init(tagReader: any TagReaderPort) {
        self.tagReader = tagReader
    }

    /// The tags of `url`. - Throws: as `TagReaderPort.read`.
    public func tags(for url: String) throws(CoreError) -> TagBundle {
        try tagReader.read(url: url)
    }

    /// A `Track` for `url` with its title, artist, album, duration and artwork.
    /// - Throws: as `TagReaderPort.read`.
    public func track(for url: String) throws(CoreError) -> Track {
        Track(url: url).filled(from: try tagReader.read(url: url))
    }

    /// `track` with the fields its file's tags carry filled in.
    public func filled(_ track: Track) throws(CoreError) -> Track {
        track.filled(from: try tagReader.read(url: track.url))
    }
}
