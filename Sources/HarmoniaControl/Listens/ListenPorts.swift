// The listens' models and ports: the history (a store) and the reporting
// service (ListenBrainz) — specs/listens.md §History, §Reporting
//
// The application layer decides what counts and when to deliver; a store
// adapter keeps the history (HarmoniaListens: SQLite) and a reporter
// adapter talks to the service (HarmoniaListens: ListenBrainz over libcurl).
import HarmoniaCore

/// What is known of a heard track: what may leave the machine (all but
/// `source`) and where it was played from.
public struct ListenMetadata: Sendable, Equatable {
    public var title: String?
    public var artists: [String]
    public var album: String?
    public var albumArtist: String?
    public var trackNumber: Int?
    /// Seconds; nil when unknown.
    public var duration: Double?
    /// MusicBrainz IDs from the tags: `MUSICBRAINZ_TRACKID`, `MUSICBRAINZ_ALBUMID`, `MUSICBRAINZ_ARTISTID`.
    public var recordingMBID: String?
    public var releaseMBID: String?
    public var artistMBIDs: [String]
    /// The file path or URL played. Kept in the history only: it never leaves the machine.
    public var source: String

    public init(title: String? = nil, artists: [String] = [], album: String? = nil, albumArtist: String? = nil,
                trackNumber: Int? = nil, duration: Double? = nil, recordingMBID: String? = nil,
                releaseMBID: String? = nil, artistMBIDs: [String] = [], source: String) {
        self.title = title
        self.artists = artists
        self.album = album
        self.albumArtist = albumArtist
        self.trackNumber = trackNumber
        self.duration = duration
        self.recordingMBID = recordingMBID
        self.releaseMBID = releaseMBID
        self.artistMBIDs = artistMBIDs
        self.source = source
    }

    /// A queue entry's fields, completed by its file's tags when read.
    public init(track: Track, tags: TagBundle?) {
        self.init(title: track.title ?? tags?.title,
                  artists: track.artists.isEmpty ? (tags?.artists ?? []) : track.artists,
                  album: track.album ?? tags?.album,
                  albumArtist: track.albumArtist ?? tags?.albumArtist, trackNumber: tags?.trackNumber,
                  duration: track.duration ?? tags?.duration,
                  recordingMBID: tags?.musicBrainz.trackIDs.first,
                  releaseMBID: tags?.musicBrainz.albumIDs.first,
                  artistMBIDs: tags?.musicBrainz.artistIDs ?? [], source: track.url)
    }
}

/// Where a listen is on its way to the reporting service.
public enum ListenDeliveryState: String, Sendable, Equatable, CaseIterable {
    /// Recorded, not yet sent (or sent and failed: it will be sent again).
    case pending
    /// A request carrying it was started and has not been answered yet. After
    /// a crash it is sent again, identically (specs/listens.md §Crashes).
    case sending
    /// The service answered 200 for a request carrying it.
    case delivered
    /// The service refused it (400), with its reason: never sent again.
    case rejected
}

/// One listen of the history.
public struct ListenRecord: Sendable, Equatable {
    public var id: Int64
    public var metadata: ListenMetadata
    /// Unix seconds when its first frame was heard.
    public var listenedAt: Int64
    /// Seconds heard when it counted.
    public var secondsHeard: Double
    public var state: ListenDeliveryState
    /// Failed attempts so far.
    public var attempts: Int
    /// The last failure, or the service's reason for a rejection.
    public var lastError: String?

    public init(id: Int64, metadata: ListenMetadata, listenedAt: Int64, secondsHeard: Double,
                state: ListenDeliveryState = .pending, attempts: Int = 0, lastError: String? = nil) {
        self.id = id
        self.metadata = metadata
        self.listenedAt = listenedAt
        self.secondsHeard = secondsHeard
        self.state = state
        self.attempts = attempts
        self.lastError = lastError
    }
}

/// The play history and the reporting outbox, in one store.
///
/// Threads: any; an adapter serialises its own access. Every method that
/// writes has committed when it returns (a crash right after loses nothing).
/// Errors: `CoreError` naming the store's file (`ioError` for a disk or lock
/// problem, `decodeError` for a damaged file, `unsupported` for a newer schema).
public protocol ListenStorePort: AnyObject, Sendable {
    /// Records a counted listen as `pending`; returns its id, and how many of
    /// the oldest undelivered listens were dropped to keep the outbox bound.
    func record(_ metadata: ListenMetadata, listenedAt: Int64, secondsHeard: Double) throws(CoreError) -> (id: Int64, dropped: Int)
    /// The undelivered listens (`pending` and `sending`), oldest first, at most `limit`.
    func undelivered(limit: Int) throws(CoreError) -> [ListenRecord]
    /// Sets the state of `ids`; `error` is recorded (nil clears it) and, for
    /// `pending`, counted as a failed attempt.
    func mark(_ ids: [Int64], _ state: ListenDeliveryState, error: String?) throws(CoreError)
    /// The newest `limit` listens, newest first.
    func history(limit: Int) throws(CoreError) -> [ListenRecord]
}

/// One request to the reporting service.
public enum ListenSubmission: Sendable, Equatable {
    /// The track being heard now (not kept by the service).
    case playingNow(ListenMetadata)
    /// Listens: `single` for one that just counted, else an import of a backlog.
    case listens([ListenRecord], single: Bool)
}

/// How the service answered.
public enum ListenReportOutcome: Sendable, Equatable {
    /// 200: every listen of the request is the service's.
    case accepted
    /// 400 (or refused before sending, too large): not acceptable as sent; the reason.
    case rejected(String)
    /// 401/403: the token is not accepted; the reason (never the token).
    case unauthorized(String)
    /// 429: no request before `retryAfter` seconds.
    case rateLimited(retryAfter: Double)
    /// Refused connection, timeout, 5xx…: worth trying again later.
    case failed(String)
}

/// The reporting service (ListenBrainz).
///
/// Threads: any; blocks the calling thread for the request, at most `timeout`
/// seconds. Never throws: every failure is an outcome.
public protocol ListenReporterPort: AnyObject, Sendable {
    func submit(_ submission: ListenSubmission, timeout: Double) -> ListenReportOutcome
    /// True when the credentials differ from those last refused (the user
    /// gave a new token): requests may start again. Cheap; any thread.
    func credentialsChanged() -> Bool
}

extension ListenReporterPort {
    public func credentialsChanged() -> Bool { false }
}
