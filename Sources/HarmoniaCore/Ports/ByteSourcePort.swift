// ByteSourcePort — specs/ports.md §ByteSourcePort
//
// The engine's own network policy, as a port: a decoder adapter reads a
// network URL through a ByteSource instead of its library's own client, so
// reconnects, timeouts, redirects, certificates and ICY metadata follow one
// documented policy whatever the decoder.

/// What a network source reports while it is read.
public enum NetworkEvent: Sendable, Equatable {
    /// The source is being opened: a request is on its way. Says what the
    /// player waits for before the first sound (a slow server, a slow link).
    case connecting
    /// The connection was lost, stalled or ended early; attempt `attempt`
    /// (from 1) to resume at `byte` starts after a short back-off.
    case reconnecting(attempt: Int, byte: Int64)
    /// Data flows again at `byte` after a reconnect.
    case resumed(byte: Int64)
    /// The server refused the link (HTTP `status`: 401, 403, 410); the source
    /// asks for a fresh one (`HTTPSourceConfiguration.renewLink`).
    case linkExpired(status: Int)
    /// The station's own description (ICY headers), once per connection.
    case station(StationInfo)
    /// A title in the stream (ICY `StreamTitle`) that applies from `byte` of
    /// the audio (metadata blocks removed).
    case streamTitle(String, byte: Int64)
}

/// An internet radio station as its server describes it (`icy-*` headers).
public struct StationInfo: Sendable, Equatable {
    /// `icy-name`.
    public var name: String?
    /// `icy-genre`.
    public var genre: String?
    /// `icy-url`: the station's web page.
    public var url: String?

    /// Builds a description from its headers; one the server did not send is nil.
    public init(name: String? = nil, genre: String? = nil, url: String? = nil) {
        self.name = name
        self.genre = genre
        self.url = url
    }
}

/// What a network source's transfer has done so far: for a player protocol
/// that reports it (slimproto's STAT buffer fields, RESP and DSCO).
public struct ByteSourceTransfer: Sendable, Equatable {
    /// How the transfer ended.
    public enum End: Sendable, Equatable {
        /// Every byte of the body came and the server closed the connection.
        case complete
        /// The connection was lost, refused or failed for good (not a timeout).
        case lost
        /// No byte came for the network timeout.
        case timedOut
        /// The reader cancelled it (a stop, a skip, the end of the process).
        case cancelled
    }

    /// The status line and headers of the response the body comes from, as
    /// received (each line ended by CRLF, an empty line last); nil before it.
    public var responseHead: String?
    /// Body bytes received so far, over every request (ICY metadata left out).
    public var received: Int64
    /// Bytes received and not read yet: buffered ahead of the reader.
    public var buffered: Int
    /// The most the source buffers ahead of the reader, in bytes.
    public var capacity: Int
    /// nil while a transfer runs (or may run again: a seek can start one).
    public var end: End?

    public init(responseHead: String?, received: Int64, buffered: Int, capacity: Int, end: End?) {
        self.responseHead = responseHead
        self.received = received
        self.buffered = buffered
        self.capacity = capacity
        self.end = end
    }
}

/// One open stream of bytes, read like a file.
///
/// Threads: `read`, `seek`, `position`, `size` and `isSeekable` from one
/// thread at a time (the decoder's); `cancel` from any thread. `read` and
/// `seek` block on the network.
public protocol ByteSource: AnyObject, Sendable {
    /// Reads up to `count` bytes into `buffer`; 0 at the end of the stream.
    /// While no data comes it waits, up to the source's timeout.
    /// - Throws: `ioError` (the network failed for longer than the timeout,
    ///   the body ended early for good, a refused or expired link),
    ///   `notFound` (404), `invalidState` (cancelled).
    func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(CoreError) -> Int

    /// Moves the next read to byte `offset`. A source without random access
    /// gets there by reading forward, or backward by starting again from the
    /// beginning. - Throws: as `read`; `invalidArgument` for a negative offset.
    func seek(to offset: Int64) throws(CoreError)

    /// The byte the next read delivers.
    var position: Int64 { get }
    /// The total size, when the server declared one and kept to it.
    var size: Int64? { get }
    /// Whether any byte can be reached without reading from the start.
    var isSeekable: Bool { get }
    /// Whether a read may wait on a network (true, the default) or comes
    /// from a local disk (an offline copy): the playback service then reads
    /// the first frames in the control call, as it does for a file.
    var readsMayStall: Bool { get }
    /// What the transfer has done so far; nil for a source that does not
    /// say (the default: a file, an offline copy). Any thread; never waits
    /// on the network.
    var transfer: ByteSourceTransfer? { get }

    /// Ends the waits of `read` and `seek`, now and later: they throw
    /// `invalidState`. Any thread; idempotent.
    func cancel()
}

extension ByteSource {
    /// A network source's reads may stall.
    public var readsMayStall: Bool { true }
    /// Says nothing of its transfer.
    public var transfer: ByteSourceTransfer? { nil }
}

/// Opens `ByteSource`s for the URLs it handles.
///
/// Threads: any. `open` blocks until the server answers (or the timeout).
public protocol ByteSourcePort: Sendable {
    /// Whether this port opens `url` (for example http and https, but not an
    /// HLS playlist, whose segments the decoder opens itself).
    func handles(url: String) -> Bool

    /// Connects and waits for the first response. `observer` receives the
    /// source's `NetworkEvent`s, on a thread of the source's, for as long as
    /// the source lives; it must return quickly. `interrupted` is polled at
    /// least every 0.1 s while `open` or a read waits: once it returns true,
    /// they throw `invalidState` (a signal, a shutdown).
    /// - Throws: `notFound` (404), `ioError` (no connection, refused or expired
    ///   link, certificate, redirects, timeout), `invalidArgument` (a URL it
    ///   does not handle), `invalidState` (interrupted).
    func open(url: String, observer: (@Sendable (NetworkEvent) -> Void)?,
              interrupted: @escaping @Sendable () -> Bool) throws(CoreError) -> any ByteSource
}
