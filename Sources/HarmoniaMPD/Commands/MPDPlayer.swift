// What the player-side MPD command groups share: the application layer,
// queue ids, the library, and the modes only MPD has
// — specs/mpd-protocol.md §Command groups
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaLibrary
#if canImport(Glibc)
import Glibc
#endif

/// The player as the MPD command groups see it. Every command that changes
/// the player runs on the application's main loop (`run`), so a command's
/// effects and the events it causes keep their order for every frontend;
/// commands that only read (status, the queue's listings) read the
/// thread-safe service and ledger on the connection's thread, after the
/// connection's earlier commands have finished.
///
/// Threads: any (commands come on connection threads); MPD's own modes are
/// guarded by a lock.
public final class MPDPlayer: @unchecked Sendable {
    public let app: PlayerApplication
    public let ledger: QueueLedger
    public let library: MPDLibraryAccess
    /// What `outputs` names the one output ("pulse", "null", "file").
    public let outputName: String
    private let started = Date()

    private let lock = ConditionLock()
    // Guarded by `lock`: modes the engine does not have (single is the
    // application layer's, `PlayerActions.singleMode`).
    private var consumeMode = false
    private var outputEnabled = true
    /// MixRamp's values as clients set them (`mixrampdb`, `mixrampdelay`):
    /// kept and shown by `status` as MPD does; the engine has no MixRamp, as
    /// MPD has none without MixRamp tags (then `crossfade` applies). A
    /// delay that is not > 0 (MPD's default, `nan`) is off.
    private var mixRamp: (db: Float, delay: Float) = (0, .nan)
    // Guarded by `lock`: seconds played (MPD's `playtime`).
    private var playedSeconds = 0.0
    private var playingSince: Date?
    // Guarded by `lock`: tells idle clients of changes no engine event carries.
    private var notifier: (@Sendable (MPDSubsystems) -> Void)?

    public init(app: PlayerApplication, ledger: QueueLedger, library: MPDLibraryAccess, outputName: String) {
        self.app = app
        self.ledger = ledger
        self.library = library
        self.outputName = outputName
    }

    var service: DefaultPlaybackService { app.service }

    /// Where changes only MPD knows of go (consume, single, outputs): the server's `notify`.
    public func setNotifier(_ notifier: @escaping @Sendable (MPDSubsystems) -> Void) {
        lock.withLock { self.notifier = notifier }
    }

    /// Tells idle clients of `changed` (any thread): the server's `notify`.
    func notify(_ changed: MPDSubsystems) { lock.withLock { notifier }?(changed) }

    /// Runs `body` on the main loop; a `CoreError` becomes MPD's ACK for it.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws(MPDError) -> T) throws(MPDError) -> T {
        let result: Result<T, MPDError> = app.perform {
            do throws(MPDError) { return .success(try body()) } catch { return .failure(error) }
        }
        return try result.get()
    }

    /// The queue as MPD numbers it, synced with the service (any thread).
    @discardableResult
    func syncQueue() -> [QueueLedger.Entry] { ledger.sync { service.queue } }

    // MARK: Modes

    typealias SingleMode = PlayerActions.SingleMode

    struct Modes: Equatable {
        var `repeat`: Bool
        var random: Bool
        var single: SingleMode
        var consume: Bool
    }

    /// Repeat and single as the engine's repeat mode has them (whoever set
    /// it: MPD, the JSON protocol, the desktop, a restored state: repeat
    /// `one` is MPD's repeat + single), and the application layer's single
    /// mode (`PlayerActions.singleMode`: single without repeat pauses at the
    /// next song's start; oneshot does so once).
    var modes: Modes {
        let engine = service.repeatMode, single = app.actions.singleMode
        return lock.withLock {
            Modes(repeat: engine != .off, random: service.shuffle,
                  single: engine == .one && single == .off ? .on : single, consume: consumeMode)
        }
    }

    /// MPD's repeat and single onto the engine's repeat mode (repeat+single
    /// repeats the track, repeat alone the queue) and the application
    /// layer's single mode (main loop). Idle clients hear of it once, from
    /// the frontend (the service's `queueChanged`, derived when the command
    /// has run: `MPDFrontend.settled`), not here as well.
    func setRepeat(_ repeatOn: Bool? = nil, single: SingleMode? = nil) {
        let current = modes
        let repeatOn = repeatOn ?? current.repeat, single = single ?? current.single
        guard repeatOn != current.repeat || single != current.single else { return }  // MPD: no change, no idle
        app.actions.setSingle(single)
        service.setRepeatMode(repeatOn ? (single != .off ? .one : .all) : .off)
    }

    func setConsume(_ on: Bool) {
        let changed = lock.withLock { () -> Bool in
            defer { consumeMode = on }
            return consumeMode != on
        }
        if changed { notify(.options) }
    }

    var isOutputEnabled: Bool { lock.withLock { outputEnabled } }

    var mixRampValues: (db: Float, delay: Float) { lock.withLock { mixRamp } }

    /// Sets one of MixRamp's values; idle clients hear `options` of a change.
    func setMixRamp(db: Float? = nil, delay: Float? = nil) {
        let changed = lock.withLock { () -> Bool in
            let before = mixRamp
            if let db { mixRamp.db = db }
            if let delay { mixRamp.delay = delay }
            return before.db != mixRamp.db || !(before.delay == mixRamp.delay || (before.delay.isNaN && mixRamp.delay.isNaN))
        }
        if changed { notify(.options) }
    }

    /// Disabling the one output mutes it (playback goes on, as MPD's
    /// position does with no output enabled); enabling unmutes.
    func setOutputEnabled(_ enabled: Bool) {
        let changed = lock.withLock { () -> Bool in
            defer { outputEnabled = enabled }
            return outputEnabled != enabled
        }
        if changed, app.actions.isMuted == enabled { app.actions.toggleMute() }
        if changed { notify(.output) }
    }

    // MARK: Time

    var uptime: Int64 { Int64(Date().timeIntervalSince(started)) }

    var playtime: Int64 {
        lock.withLock { Int64(playedSeconds + (playingSince.map { Date().timeIntervalSince($0) } ?? 0)) }
    }

    /// The play state changed (main loop): counts `playtime`.
    func notePlaying(_ playing: Bool) {
        lock.withLock {
            if playing, playingSince == nil { playingSince = Date() }
            if !playing, let since = playingSince {
                playedSeconds += Date().timeIntervalSince(since)
                playingSince = nil
            }
        }
    }

    var consumes: Bool { lock.withLock { consumeMode } }

    // MARK: Songs and tracks

    /// The library path of a queued track ("Artist/Album/01.flac"), or its
    /// URL when it is not in the music directory (a stream).
    func uri(of track: Track) -> String {
        let root = library.musicDirectory.root
        let prefix = root.hasSuffix("/") ? root : root + "/"
        return track.url.hasPrefix(prefix) ? String(track.url.dropFirst(prefix.count)) : track.url
    }

    /// The library's record of a queued track; a record with the path alone
    /// when the library has none (a stream, a file removed since).
    func song(for track: Track) -> LibrarySong {
        let uri = uri(of: track)
        if let song = try? library.store.song(at: uri) { return song }
        return LibrarySong(track: track, path: uri)
    }

    /// A queue entry for a library song (`Track(song:in:)`).
    func track(for song: LibrarySong) -> Track {
        Track(song: song, in: library.musicDirectory)
    }

    /// The tracks `uri` names: a song, a folder's songs in MPD's add order
    /// ("" or "/" the whole library), or an http(s) stream. Paths stay in the
    /// music directory: anything else is "No such directory"/"No such song".
    func tracks(forURI uri: String, single: Bool) throws(MPDError) -> [Track] {
        let lowered = uri.lowercased()
        if lowered.hasPrefix("http://") || lowered.hasPrefix("https://") { return [Track(url: uri)] }
        let relative = uri == "/" ? "" : uri
        // The path must resolve inside the music directory (.., absolute, file://, links out).
        do throws(CoreError) { _ = try library.musicDirectory.resolve(relative) } catch {
            throw MPDError(.noExist, single ? "No such song" : "No such directory")
        }
        let store = library.store
        do throws(CoreError) {
            if let song = try store.song(at: relative) { return [track(for: song)] }
            guard !single else { throw CoreError.notFound("no such song") }
            return try store.songsForAdd(under: relative).map(track(for:))
        } catch .notFound {
            throw MPDError(.noExist, single ? "No such song" : "No such directory")
        } catch {
            throw MPDError(error)
        }
    }

    /// Writes one queue entry as MPD does (`playlistinfo`, `currentsong`).
    func write(_ entry: QueueLedger.Entry, position: Int, into writer: inout MPDResponseWriter) {
        let song = song(for: entry.track)
        if song.modified == 0 && song.size == 0 {
            writer.append("file", song.path)
            writer.appendTags(of: song)
            writer.append("Pos", position)
            writer.append("Id", entry.id)
        } else {
            writer.appendSong(song, position: position, id: entry.id)
        }
    }

    /// Queues `songs` at the end or at `position` (main loop); returns their ids.
    /// - Throws: `Bad song index` for a position past the end.
    @discardableResult
    func enqueue(_ songs: [LibrarySong], at position: Int?) throws(MPDError) -> [Int] {
        try enqueue(tracks: songs.map(track(for:)), at: position)
    }

    @discardableResult
    func enqueue(tracks: [Track], at position: Int?) throws(MPDError) -> [Int] {
        if let position {
            guard position <= service.queue.count else { throw MPDError(.arg, "Bad song index") }
            for (offset, track) in tracks.enumerated() {
                do throws(CoreError) { try service.insert(track, at: position + offset) } catch { throw MPDError(error) }
            }
        } else {
            service.enqueue(tracks)
        }
        syncQueue()
        return tracks.compactMap { ledger.id(of: $0) }
    }
}

/// Runs an engine call for a command group; its `CoreError` becomes MPD's ACK.
func core(_ body: () throws(CoreError) -> Void) throws(MPDError) {
    do throws(CoreError) { try body() } catch { throw MPDError(error) }
}

extension MPDPlayer {
    /// A player whose library access queues through itself (`findadd`, `searchadd`).
    public static func make(app: PlayerApplication, ledger: QueueLedger, store: any LibraryStorePort,
                            musicDirectory: MusicDirectory, requestUpdate: @escaping @Sendable () -> Int,
                            updateJob: @escaping @Sendable () -> Int?, outputName: String) -> MPDPlayer {
        let box = PlayerBox()
        let access = MPDLibraryAccess(store: store, musicDirectory: musicDirectory, requestUpdate: requestUpdate,
                                      enqueue: { songs, position throws(MPDError) in
                                          guard let player = box.player else { throw MPDError(.system, "the player has ended") }
                                          try player.run { () throws(MPDError) in _ = try player.enqueue(songs, at: position) }
                                      },
                                      updateJob: updateJob)
        let player = MPDPlayer(app: app, ledger: ledger, library: access, outputName: outputName)
        box.player = player
        return player
    }

    /// Holds the player for its own library access, without keeping it alive.
    private final class PlayerBox: @unchecked Sendable {
        weak var player: MPDPlayer?  // set once, before any command
    }
}

extension MPDPlayerHandler {
    /// The handler for `serve`: status and playback, the queue, the
    /// database, and the stored playlists when there is a folder for them.
    public static func player(_ player: MPDPlayer, database: any MPDCommandGroup,
                              storedPlaylists: StoredPlaylists? = nil) -> MPDPlayerHandler {
        var groups: [any MPDCommandGroup] = [MPDStatusCommands(player: player), MPDPlaybackCommands(player: player),
                                             MPDQueueCommands(player: player), database]
        if let storedPlaylists { groups.append(MPDStoredPlaylistCommands(player: player, playlists: storedPlaylists)) }
        return MPDPlayerHandler(groups: groups)
    }
}

/// Routes each command to the group whose table names it.
public struct MPDPlayerHandler: MPDCommandHandler {
    public let commands: [MPDCommandInfo]
    private let groups: [any MPDCommandGroup]
    private let routes: [String: Int]

    public init(groups: [any MPDCommandGroup]) {
        self.groups = groups
        var routes: [String: Int] = [:]
        for (index, group) in groups.enumerated() {
            for command in group.commands where routes[command.name] == nil { routes[command.name] = index }
        }
        self.routes = routes
        commands = groups.enumerated().flatMap { index, group in group.commands.filter { routes[$0.name] == index } }
    }

    public func handle(_ request: MPDRequest, context: MPDContext, into writer: inout MPDResponseWriter) throws(MPDError) {
        guard let index = routes[request.command] else { throw MPDError.unknownCommand(request.command) }
        try groups[index].handle(request, context: context, into: &writer)
    }
}
