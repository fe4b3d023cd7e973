// MPD's status commands: status, currentsong, stats, outputs, urlhandlers,
// decoders, replay_gain_status — specs/mpd-protocol.md §Command groups
import HarmoniaControl
import HarmoniaCore
import HarmoniaLibrary

/// What the player is doing, as MPD reports it. Positions are heard positions.
public struct MPDStatusCommands: MPDCommandGroup {
    let player: MPDPlayer

    public init(player: MPDPlayer) {
        self.player = player
    }

    public let commands: [MPDCommandInfo] = [
        MPDCommandInfo("status", .read, .none),
        MPDCommandInfo("currentsong", .read, .none),
        MPDCommandInfo("stats", .read, .none),
        MPDCommandInfo("outputs", .read, .none),
        MPDCommandInfo("urlhandlers", .read, .none),
        MPDCommandInfo("decoders", .read, .none),
        MPDCommandInfo("replay_gain_status", .read, .none),
    ]

    public func handle(_ request: MPDRequest, context: MPDContext, into writer: inout MPDResponseWriter) throws(MPDError) {
        switch request.command {
        case "status":
            for (key, value) in status() { writer.append(key, value) }
        case "currentsong":
            let entries = player.syncQueue()
            if let index = player.service.currentIndex, entries.indices.contains(index) {
                player.write(entries[index], position: index, into: &writer)
            }
        case "stats":
            let stats: LibraryStats
            do throws(CoreError) { stats = try player.library.store.stats() } catch { throw MPDError(error) }
            writer.append("uptime", player.uptime)
            writer.append("playtime", player.playtime)
            writer.append("artists", stats.artists)
            writer.append("albums", stats.albums)
            writer.append("songs", stats.songs)
            writer.append("db_playtime", Int64(min(max(stats.playtime, 0), 1e15)))
            writer.append("db_update", stats.lastUpdate ?? 0)
        case "outputs":
            writer.append("outputid", 0)
            writer.append("outputname", player.outputName)
            writer.append("plugin", player.outputName)
            writer.append("outputenabled", player.isOutputEnabled ? 1 : 0)
        case "urlhandlers":
            for scheme in ["http://", "https://"] { writer.append("handler", scheme) }
        case "decoders":
            writer.append("plugin", "ffmpeg")
            for suffix in LibraryFileKind.audioExtensions.sorted() { writer.append("suffix", suffix) }
        case "replay_gain_status":
            writer.append("replay_gain_mode", "off")
        default:
            throw MPDError.unknownCommand(request.command)
        }
    }

    /// MPD 0.23's `status` lines, in its order (any thread: a snapshot).
    private func status() -> [(String, String)] {
        let service = player.service
        let entries = player.syncQueue()
        let modes = player.modes
        var lines: [(String, String)] = [
            ("volume", String(player.app.actions.volumePercent)),
            ("repeat", modes.repeat ? "1" : "0"),
            ("random", modes.random ? "1" : "0"),
            ("single", modes.single == .oneshot ? "oneshot" : modes.single == .on ? "1" : "0"),
            ("consume", modes.consume ? "1" : "0"),
            ("partition", "default"),
            ("playlist", String(player.ledger.version)),
            ("playlistlength", String(entries.count)),
            ("mixrampdb", Self.shortest(player.mixRampValues.db)),
        ]
        let state = service.state
        let active: Bool
        switch state {
        case .playing, .buffering: lines.append(("state", "play")); active = true
        case .paused: lines.append(("state", "pause")); active = true
        case .stopped, .error: lines.append(("state", "stop")); active = false
        }
        let current = service.currentIndex.flatMap { entries.indices.contains($0) ? $0 : nil }
        if let current {
            lines.append(("song", String(current)))
            lines.append(("songid", String(entries[current].id)))
        }
        if active, let current {
            let elapsed = max(0, service.currentTime()), duration = max(0, service.duration())
            let song = player.song(for: entries[current].track)
            lines.append(("time", "\(Self.wholeSeconds(elapsed)):\(Self.wholeSeconds(duration))"))
            lines.append(("elapsed", Self.threeDecimals(elapsed)))
            lines.append(("bitrate", String(Self.kilobitsPerSecond(size: song.size, seconds: song.duration))))
            lines.append(("duration", Self.threeDecimals(duration)))
            if let format = song.format { lines.append(("audio", format)) }
        }
        let crossfade = service.crossfadeSettings.seconds
        if crossfade > 0 { lines.append(("xfade", String(Int(crossfade.rounded())))) }
        let mixRampDelay = player.mixRampValues.delay
        if mixRampDelay > 0 { lines.append(("mixrampdelay", Self.shortest(mixRampDelay))) }
        if let job = player.library.updateJob() { lines.append(("updating_db", String(job))) }
        if case .error(let error) = state { lines.append(("error", error.message.replacingOccurrences(of: "\n", with: " "))) }
        if let current, let next = nextPosition(after: current, count: entries.count, modes: modes) {
            lines.append(("nextsong", String(next)))
            lines.append(("nextsongid", String(entries[next].id)))
        }
        return lines
    }

    /// The entry after `current` in play order, where it is known (not under random).
    private func nextPosition(after current: Int, count: Int, modes: MPDPlayer.Modes) -> Int? {
        guard !modes.random else { return nil }
        if modes.repeat && modes.single != .off { return current }
        if current + 1 < count { return current + 1 }
        return modes.repeat && count > 0 ? 0 : nil
    }

    /// Seconds rounded half up, as MPD's `time:` ("1.5" → 2).
    static func wholeSeconds(_ seconds: Double) -> Int64 {
        seconds.isFinite ? Int64(min(seconds, 1e15).rounded(.toNearestOrAwayFromZero)) : 0
    }

    /// A float as MPD's `{}` formats it: the shortest text that reads back
    /// (-17, 2.5, nan, inf).
    static func shortest(_ value: Float) -> String {
        if value.isNaN { return "nan" }
        if value.isInfinite { return value < 0 ? "-inf" : "inf" }
        return value == value.rounded() && abs(value) < 1e9 ? String(Int(value)) : "\(value)"
    }

    static func threeDecimals(_ seconds: Double) -> String {
        MPDResponseWriter.durationFields(seconds.isFinite ? seconds : 0).1
    }

    /// The file's average bit rate (MPD reports the decoder's current one).
    static func kilobitsPerSecond(size: Int64, seconds: Double?) -> Int64 {
        guard let seconds, seconds.isFinite, seconds > 0.001, size > 0 else { return 0 }
        return Int64((Double(size) * 8 / seconds / 1000).rounded())
    }
}
