// One group of MPD's commands (playback, queue, database…), as MPD's
// src/command/ splits them — specs/mpd-protocol.md §Command groups
import HarmoniaCore
import HarmoniaLibrary

/// A group of the player's MPD commands. `MPDPlayerHandler` routes each
/// command to the group whose table names it.
///
/// Threads: as `MPDCommandHandler.handle`: a connection's reader thread,
/// several connections at once; a group is thread-safe.
public protocol MPDCommandGroup: Sendable {
    /// The group's rows of MPD's command table.
    var commands: [MPDCommandInfo] { get }
    /// Runs one of the group's commands (permitted, arity checked).
    func handle(_ request: MPDRequest, context: MPDContext, into writer: inout MPDResponseWriter) throws(MPDError)
}

/// What the database commands need from the rest of the player: the
/// library, and a way to queue songs (`findadd`, `searchadd`).
public struct MPDLibraryAccess: Sendable {
    public let store: any LibraryStorePort
    public let musicDirectory: MusicDirectory
    /// Starts an update (MPD's `update`/`rescan`); returns the job number.
    public let requestUpdate: @Sendable () -> Int
    /// Queues `songs` at the end, or at `position` (MPD's `findadd … position POS`).
    /// Throws an MPDError for a bad position.
    public let enqueue: @Sendable (_ songs: [LibrarySong], _ position: Int?) throws(MPDError) -> Void
    /// The update job running now, if any (`updating_db` in `status`).
    public let updateJob: @Sendable () -> Int?

    public init(store: any LibraryStorePort, musicDirectory: MusicDirectory,
                requestUpdate: @escaping @Sendable () -> Int,
                enqueue: @escaping @Sendable ([LibrarySong], Int?) throws(MPDError) -> Void,
                updateJob: @escaping @Sendable () -> Int? = { nil }) {
        self.store = store
        self.musicDirectory = musicDirectory
        self.requestUpdate = requestUpdate
        self.enqueue = enqueue
        self.updateJob = updateJob
    }
}
