// MPD's playback commands: play, playid, pause, stop, next, previous, seek,
// seekid, seekcur, setvol, volume, getvol, repeat, random, single, consume,
// crossfade, mixrampdb, mixrampdelay, replay_gain_mode, enable/disable/toggleoutput
// — specs/mpd-protocol.md §Command groups
import HarmoniaControl
import HarmoniaCore

/// Playback as MPD clients drive it, through the same `PlayerActions` as
/// every other frontend.
public struct MPDPlaybackCommands: MPDCommandGroup {
    let player: MPDPlayer

    public init(player: MPDPlayer) {
        self.player = player
    }

    public let commands: [MPDCommandInfo] = [
        MPDCommandInfo("play", .player, .range(0, 1)),
        MPDCommandInfo("playid", .player, .range(0, 1)),
        MPDCommandInfo("pause", .player, .range(0, 1)),
        MPDCommandInfo("stop", .player, .none),
        MPDCommandInfo("next", .player, .none),
        MPDCommandInfo("previous", .player, .none),
        MPDCommandInfo("seek", .player, .exactly(2)),
        MPDCommandInfo("seekid", .player, .exactly(2)),
        MPDCommandInfo("seekcur", .player, .exactly(1)),
        MPDCommandInfo("setvol", .player, .exactly(1)),
        MPDCommandInfo("volume", .player, .exactly(1)),
        MPDCommandInfo("getvol", .read, .none),
        MPDCommandInfo("repeat", .player, .exactly(1)),
        MPDCommandInfo("random", .player, .exactly(1)),
        MPDCommandInfo("single", .player, .exactly(1)),
        MPDCommandInfo("consume", .player, .exactly(1)),
        MPDCommandInfo("crossfade", .player, .exactly(1)),
        MPDCommandInfo("mixrampdb", .player, .exactly(1)),
        MPDCommandInfo("mixrampdelay", .player, .exactly(1)),
        MPDCommandInfo("replay_gain_mode", .player, .exactly(1)),
        MPDCommandInfo("enableoutput", .admin, .exactly(1)),
        MPDCommandInfo("disableoutput", .admin, .exactly(1)),
        MPDCommandInfo("toggleoutput", .admin, .exactly(1)),
    ]

    public func handle(_ request: MPDRequest, context: MPDContext, into writer: inout MPDResponseWriter) throws(MPDError) {
        let args = request.arguments
        let service = player.service, actions = player.app.actions
        switch request.command {
        case "play":
            let position = try args.first.map { (text) throws(MPDError) in try MPDArgument.int(text) }
            try player.run { () throws(MPDError) in
                if let position, position >= 0 {
                    try play(at: Int(position))
                } else if service.state == .paused {
                    try core { () throws(CoreError) in try service.play() }
                } else if service.state != .playing && !service.queue.isEmpty {
                    try core { () throws(CoreError) in try actions.play() }
                }
            }
        case "playid":
            let id = try args.first.map { (text) throws(MPDError) in try MPDArgument.int(text) }
            try player.run { () throws(MPDError) in
                guard let id, id >= 0 else {
                    if !service.queue.isEmpty && service.state != .playing { try core { () throws(CoreError) in try actions.play() } }
                    return
                }
                player.syncQueue()
                guard let position = player.ledger.position(ofID: Int(id)) else { throw MPDError(.noExist, "No such song") }
                try play(at: position)
            }
        case "pause":
            let pause = try args.first.map { (text) throws(MPDError) in try MPDArgument.bool(text) }
            try player.run { () throws(MPDError) in
                switch (service.state, pause) {
                case (.playing, true?), (.buffering, true?), (.playing, nil), (.buffering, nil):
                    try core { () throws(CoreError) in try service.pause() }
                case (.paused, false?), (.paused, nil):
                    try core { () throws(CoreError) in try service.play() }
                default:
                    break  // stopped: MPD does nothing
                }
            }
        case "stop":
            try player.run { () throws(MPDError) in service.stop() }
        case "next":
            try player.run { () throws(MPDError) in
                try requirePlaying()
                do throws(CoreError) { try actions.next() } catch { service.stop() }  // nothing after it opens: stopped
            }
        case "previous":
            try player.run { () throws(MPDError) in
                try requirePlaying()
                do throws(CoreError) { try actions.previous() } catch { try core { () throws(CoreError) in try service.seek(to: 0) } }
            }
        case "seek":
            guard args.count == 2 else { throw MPDError(.arg, "wrong number of arguments for \"seek\"") }
            let position = try MPDArgument.unsigned(args[0]), time = try MPDArgument.songTime(args[1])
            try player.run { () throws(MPDError) in try seek(position: Int(position), to: time) }
        case "seekid":
            guard args.count == 2 else { throw MPDError(.arg, "wrong number of arguments for \"seekid\"") }
            let id = try MPDArgument.unsigned(args[0]), time = try MPDArgument.songTime(args[1])
            try player.run { () throws(MPDError) in
                player.syncQueue()
                guard let position = player.ledger.position(ofID: Int(id)) else { throw MPDError(.noExist, "No such song") }
                try seek(position: position, to: time)
            }
        case "seekcur":
            let text = args[0]
            let relative = text.hasPrefix("+") || text.hasPrefix("-")
            let time = try MPDArgument.signedSongTime(text)
            try player.run { () throws(MPDError) in
                try requirePlaying()
                if relative {
                    try core { () throws(CoreError) in try actions.seek(by: time) }
                } else {
                    try core { () throws(CoreError) in try service.seek(to: min(max(time, 0), service.duration())) }
                }
            }
        case "setvol":
            let level = try MPDArgument.unsigned(args[0], max: 100)
            try player.run { () throws(MPDError) in actions.setVolume(percent: Double(level)) }
        case "volume":
            let delta = try MPDArgument.int(args[0], in: -100...100)
            try player.run { () throws(MPDError) in actions.changeVolume(by: Double(delta)) }
        case "getvol":
            writer.append("volume", player.app.actions.volumePercent)
        case "repeat":
            let on = try MPDArgument.bool(args[0])
            try player.run { () throws(MPDError) in player.setRepeat(on) }
        case "single":
            // MPD 0.21+: 0, 1 or oneshot, spelled exactly so.
            let modes: [String: MPDPlayer.SingleMode] = ["0": .off, "1": .on, "oneshot": .oneshot]
            guard let mode = modes[args[0]] else { throw MPDError(.arg, "Unrecognized single mode, expected 0, 1, or oneshot") }
            try player.run { () throws(MPDError) in player.setRepeat(single: mode) }
        case "random":
            let on = try MPDArgument.bool(args[0])
            try player.run { () throws(MPDError) in service.setShuffle(on) }
        case "consume":
            let on = try MPDArgument.bool(args[0])
            try player.run { () throws(MPDError) in player.setConsume(on) }
        case "crossfade":
            // An unsigned number of seconds, as MPD reads it, up to our longest
            // fade. Idle clients hear `options` from the frontend
            // (`MPDFrontend.settingsChanged`), whichever client changed it.
            let seconds = try MPDArgument.unsigned(args[0])
            try player.run { () throws(MPDError) in
                try core { () throws(CoreError) in try actions.setCrossfade(seconds: Double(seconds)) }
            }
        case "mixrampdb":
            let db = try MPDArgument.float(args[0])
            try player.run { () throws(MPDError) in player.setMixRamp(db: db) }
        case "mixrampdelay":
            let delay = try MPDArgument.float(args[0])
            try player.run { () throws(MPDError) in player.setMixRamp(delay: delay) }
        case "replay_gain_mode":
            guard ["off", "track", "album", "auto"].contains(args[0]) else { throw MPDError(.arg, "Unrecognized replay gain mode") }
            guard args[0] == "off" else { throw MPDError(.arg, "ReplayGain is set when the server starts here, not by clients") }
        case "enableoutput", "disableoutput", "toggleoutput":
            let id = try MPDArgument.unsigned(args[0])
            guard id == 0 else { throw MPDError(.noExist, "No such audio output") }
            try player.run { () throws(MPDError) in
                switch request.command {
                case "enableoutput": player.setOutputEnabled(true)
                case "disableoutput": player.setOutputEnabled(false)
                default: player.setOutputEnabled(!player.isOutputEnabled)
                }
            }
        default:
            throw MPDError.unknownCommand(request.command)
        }
    }

    /// MPD's "playing" (playing or paused, with a current song): else
    /// `ACK [55@0] {CMD} Not playing`, as MPD 0.23 answers `next`,
    /// `previous` and `seekcur` when stopped, whatever the queue holds (main loop).
    private func requirePlaying() throws(MPDError) {
        let service = player.service
        let active: Bool
        switch service.state {
        case .playing, .paused, .buffering: active = true
        default: active = false
        }
        guard active, service.currentIndex != nil else { throw MPDError(.playerSync, "Not playing") }
    }

    /// Plays the entry at `position` (main loop).
    private func play(at position: Int) throws(MPDError) {
        guard position < player.service.queue.count else { throw MPDError(.arg, "Bad song index") }
        try core { () throws(CoreError) in
            try player.service.jump(to: position)
            try player.service.play()
        }
    }

    /// Seeks the entry at `position`, which starts it when it is not the current one (main loop).
    private func seek(position: Int, to seconds: Double) throws(MPDError) {
        let service = player.service
        guard position < service.queue.count else { throw MPDError(.arg, "Bad song index") }
        if service.currentIndex != position || service.state == .stopped { try play(at: position) }
        try core { () throws(CoreError) in try service.seek(to: min(max(seconds, 0), service.duration())) }
    }

}
