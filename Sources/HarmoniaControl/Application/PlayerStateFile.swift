// The player's state across restarts (`serve --state FILE`)
// — specs/application.md §State file
import Foundation
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// What a restarted player comes back to: the queue, the current entry and
/// position, whether it was playing, the volume and the modes.
public struct PlayerState: Codable, Sendable, Equatable {
    public struct Entry: Codable, Sendable, Equatable {
        public var uri: String
        public var start: Double?
        public var end: Double?
        /// The offline store's entry the URL plays from, when one was named
        /// for it (`queue/add`'s `"key"`: a signed URL's stable name).
        public var key: String?

        public init(uri: String, start: Double? = nil, end: Double? = nil, key: String? = nil) {
            self.uri = uri
            self.start = start
            self.end = end
            self.key = key
        }
    }

    /// The format's version; a file of a later version is not read.
    public var version = 1
    public var queue: [Entry] = []
    public var current: Int?
    /// Seconds into the current entry.
    public var position: Double = 0
    /// "playing", "paused" or "stopped".
    public var state = "stopped"
    /// 0–100.
    public var volume: Double = 100
    public var repeatMode = RepeatMode.off.rawValue
    public var shuffle = false
    /// The crossfade's seconds (0: off).
    public var crossfade: Double = 0

    public init() {}

    /// Fields missing from a file keep their defaults (a later player may add some).
    public init(from decoder: any Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        version = try values.decodeIfPresent(Int.self, forKey: .version) ?? 1
        guard version == 1 else { return }  // `load` refuses it: nothing else is read
        queue = try values.decodeIfPresent([Entry].self, forKey: .queue) ?? []
        current = try values.decodeIfPresent(Int.self, forKey: .current)
        position = try values.decodeIfPresent(Double.self, forKey: .position) ?? 0
        state = try values.decodeIfPresent(String.self, forKey: .state) ?? "stopped"
        volume = try values.decodeIfPresent(Double.self, forKey: .volume) ?? 100
        repeatMode = try values.decodeIfPresent(String.self, forKey: .repeatMode) ?? RepeatMode.off.rawValue
        shuffle = try values.decodeIfPresent(Bool.self, forKey: .shuffle) ?? false
        crossfade = try values.decodeIfPresent(Double.self, forKey: .crossfade) ?? 0
    }

    /// The state of `service` now; `namedKey` gives the store key named
    /// for a URL, if any.
    public init(of service: DefaultPlaybackService, namedKey: (String) -> String? = { _ in nil }) {
        queue = service.queue.map { Entry(uri: $0.url, start: $0.start, end: $0.end, key: namedKey($0.url)) }
        current = service.currentIndex
        position = service.currentTime()
        state = switch service.state {
        case .playing, .buffering: "playing"
        case .paused: "paused"
        case .stopped, .error: "stopped"
        }
        volume = Double(service.volume) * 100
        repeatMode = service.repeatMode.rawValue
        shuffle = service.shuffle
        crossfade = service.crossfadeSettings.seconds
    }
}

/// Reads and writes a `PlayerState` as JSON, atomically: the new state goes
/// to a temporary file beside it, is synced, and replaces the old one by
/// `rename`, so a crash or SIGKILL at any point leaves the old file or the
/// new one, never a mix.
///
/// Threads: any; one writer at a time (the player's main loop).
public struct PlayerStateFile: Sendable {
    public let path: String
    /// Larger files are not read (a state file is a few kilobytes per thousand entries).
    public static let maxBytes = 64 << 20

    public init(path: String) {
        self.path = path
    }

    /// The saved state; nil when there is no file yet.
    /// - Throws: `decodeError` for a file that is not a state file (the
    ///   player then starts empty and says so), `ioError` when it cannot be read.
    public func load() throws(CoreError) -> PlayerState? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        let data: Data
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            if let size = attributes[.size] as? NSNumber, size.int64Value > Self.maxBytes {
                throw CoreError.decodeError("\(path): the state file is larger than \(Self.maxBytes >> 20) MiB; move it away to start afresh")
            }
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch let error as CoreError {
            throw error
        } catch {
            throw .ioError("\(path): the state file cannot be read (\(error.localizedDescription))")
        }
        let state: PlayerState
        do {
            state = try JSONDecoder().decode(PlayerState.self, from: data)
        } catch {
            throw .decodeError("\(path): not a harmonia-play state file; move it away to start afresh")
        }
        guard state.version == 1 else {
            throw .unsupported("\(path): state file version \(state.version) is newer than this player reads (1)")
        }
        return state
    }

    /// Replaces the file with `state` (temporary file, fsync, rename, fsync of the folder).
    /// - Throws: `ioError` naming the step that failed.
    public func save(_ state: PlayerState) throws(CoreError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        guard let data = try? encoder.encode(state) else { throw .ioError("\(path): the state could not be encoded") }
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Self.failure(temporary, "create") }
        let written = data.withUnsafeBytes { Console.writeAll(fd, $0) }
        guard written, fsync(fd) == 0 else {
            let error = Self.failure(temporary, "write")
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        guard rename(temporary, path) == 0 else {
            let error = Self.failure(path, "replace")
            unlink(temporary)
            throw error
        }
        let folder = (path as NSString).deletingLastPathComponent
        let folderFD = open(folder.isEmpty ? "." : folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if folderFD >= 0 {
            _ = fsync(folderFD)
            close(folderFD)
        }
    }

    private static func failure(_ path: String, _ step: String) -> CoreError {
        .ioError("\(path): cannot \(step) the state file (\(String(cString: strerror(errno))))")
    }
}

/// A frontend that keeps the state file current: after every change of the
/// queue, the current entry, the play state, the volume or a seek, and every
/// `positionInterval` seconds of playing; at once, before the command's
/// reply, when a setting no event carries changes (the crossfade); and once
/// more at the end.
public final class StateKeeper: PlayerFrontend {
    public let file: PlayerStateFile
    private let service: DefaultPlaybackService
    /// Seconds of playing between saves of the position alone.
    public var positionInterval = 5.0
    // Main loop only.
    private var lastSaved: PlayerState?
    private var positionSavedAt = 0.0
    private var reportedFailure = false
    private var frozen = false

    private let namedKey: (String) -> String?

    /// - Parameter namedKey: the offline store's key named for a URL, if
    ///   any; saved with the entry so a restart plays it from the same copy.
    public init(file: PlayerStateFile, service: DefaultPlaybackService, namedKey: @escaping (String) -> String? = { _ in nil }) {
        self.file = file
        self.service = service
        self.namedKey = namedKey
    }

    public func show(_ event: PlaybackEvent) {
        switch event {
        case .queueChanged, .trackStarted, .stateChanged, .volumeChanged, .seekCompleted, .queueEnded:
            save()
        case .position(let seconds, _):
            if abs(seconds - positionSavedAt) >= positionInterval { save() }
        default:
            break
        }
    }

    /// The crossfade changed: saved before the command that changed it is
    /// answered, so a SIGKILL right after its reply keeps it.
    public func settingsChanged() { save() }

    /// A signal ends the player: the state as it is now, playing included,
    /// is what a restart comes back to (the stop that follows is not saved).
    public func interrupted() {
        save()
        frozen = true
    }

    public func shutdown() { save() }

    /// Writes the state now, unless it is the one last written.
    public func save() {
        guard !frozen else { return }
        let state = PlayerState(of: service, namedKey: namedKey)
        guard state != lastSaved else { return }
        do throws(CoreError) {
            try file.save(state)
            lastSaved = state
            positionSavedAt = state.position
            reportedFailure = false
        } catch {
            // Said once, not at every event; playback goes on.
            if !reportedFailure { Console.err("harmonia-play: \(error.category.rawValue): \(Console.oneLine(error.message))") }
            reportedFailure = true
        }
    }

    /// Puts `state` back on `service`: the queue, volume and modes, the
    /// current entry at its position, and playback if it was playing. An
    /// entry that fails to open is reported by the service's events as usual.
    /// - Parameters:
    ///   - track: the queue entry for a saved URL, or why it is dropped
    ///     (`serve` gives the library's tags, so the queue shows them before
    ///     each track plays, and drops files that are gone or outside the
    ///     music directory). Dropped entries are said in one line through
    ///     `log`; the current entry is the same one at its new place, or,
    ///     when it was dropped, the next kept one from its start.
    ///   - useKey: names an entry's saved store key for its URL (key, URL),
    ///     before anything in the queue can open.
    public static func restore(_ state: PlayerState, on service: DefaultPlaybackService,
                               track: (String) -> Result<Track, RestoreDrop> = { .success(Track(url: $0)) },
                               useKey: (String, String) -> Void = { _, _ in },
                               log: (String) -> Void = Console.err) {
        service.setVolume(Float(min(max(state.volume.isFinite ? state.volume : 100, 0), 100) / 100))
        if let mode = RepeatMode(rawValue: state.repeatMode) { service.setRepeatMode(mode) }
        service.setShuffle(state.shuffle)
        do throws(CoreError) {
            service.setCrossfade(try CrossfadeSettings(seconds: state.crossfade, fadeAlbums: service.crossfadeSettings.fadeAlbums))
        } catch {
            log("harmonia-play: state: \(error.category.rawValue): \(Console.oneLine(error.message)); the crossfade stays off")
        }
        var kept: [Track] = [], newIndex: [Int?] = [], drops: [RestoreDrop: Int] = [:]
        for entry in state.queue {
            switch track(entry.uri) {
            case .success(var restored):
                if let key = entry.key, !key.isEmpty { useKey(key, entry.uri) }
                restored.start = entry.start
                restored.end = entry.end
                newIndex.append(kept.count)
                kept.append(restored)
            case .failure(let why):
                newIndex.append(nil)
                drops[why, default: 0] += 1
            }
        }
        if !drops.isEmpty {
            let reasons = RestoreDrop.allCases.compactMap { why in drops[why].map { "\($0) \(why.rawValue)" } }
            log("harmonia-play: state: dropped \(state.queue.count - kept.count) of \(state.queue.count) saved queue entries (\(reasons.joined(separator: ", ")))")
        }
        service.enqueue(kept)
        guard let saved = state.current, state.queue.indices.contains(saved) else { return }
        // The current entry where it now is; dropped: the next kept one, from its start.
        let current: Int, position: Double
        if let index = newIndex[saved] {
            (current, position) = (index, state.position)
        } else if let next = newIndex[(saved + 1)...].lazy.compactMap({ $0 }).first {
            (current, position) = (next, 0)
        } else {
            return
        }
        do throws(CoreError) {
            try service.jump(to: current)
            if position.isFinite, position > 0 { try service.seek(to: position) }
            switch state.state {
            case "playing": try service.play()
            case "paused":
                // Paused at the position, as before: started and paused at
                // once, before the output has been given a frame.
                try service.play()
                try service.pause()
            default: break
            }
        } catch {
            log("harmonia-play: the saved state could not be restored: \(error.category.rawValue): \(Console.oneLine(error.message))")
        }
    }
}

/// Why a saved queue entry is not restored (`StateKeeper.restore`).
public enum RestoreDrop: String, CaseIterable, Sendable, Error {
    case missing = "missing"
    case outside = "outside the music directory"
}
