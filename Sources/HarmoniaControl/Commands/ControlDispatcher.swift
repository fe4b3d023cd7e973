// Control commands → the playback service and PlayerActions
// — specs/control-protocol.md §Commands
import Foundation
import HarmoniaCore

/// Executes requests, one at a time, on the player's main loop.
public final class ControlDispatcher {
    public let service: DefaultPlaybackService
    public let actions: PlayerActions
    /// Reads a file's tags and stream facts for `info`.
    private let readInfo: (String) throws(CoreError) -> (tags: TagBundle, stream: StreamInfo)
    /// The music library under `serve`: `uri`s are then relative to its
    /// folder and confined to it, and the `library/*` commands answer.
    public let library: ControlLibrary?
    /// The newest listens of the play history, at most N, newest first
    /// (`listens/recent`); nil with no history. Set before the run starts.
    public var recentListens: ((Int) throws(CoreError) -> [ListenRecord])?
    /// The offline store's downloads (`offline/*`, queue entries' `offline`);
    /// nil when the player has none.
    public let offline: OfflineDownloads?

    /// What a line led to: the reply to send, and whether the player must quit.
    public struct Outcome {
        public let reply: JSONValue
        public var quit = false
    }

    public static let commands = [
        "play", "pause", "toggle", "stop", "seek", "volume", "mute", "next", "previous", "jump", "status",
        "queue/items", "queue/add", "queue/remove", "queue/move", "queue/clear", "repeat", "single", "shuffle",
        "set_crossfade", "info", "cover", "renew", "listens/recent", "quit",
    ] + ControlLibrary.commands + ControlOffline.commands

    /// - Parameter readInfo: what `info` reads a file with (the player gives
    ///   FFmpeg's tag reader; the fuzz target one that opens nothing).
    /// - Parameter library: the music library (`serve`); nil for the plain
    ///   player, where a `uri` is a path or URL as given.
    /// - Parameter offline: the offline store's downloads; nil without a store.
    public init(service: DefaultPlaybackService, actions: PlayerActions,
                readInfo: @escaping (String) throws(CoreError) -> (tags: TagBundle, stream: StreamInfo),
                library: ControlLibrary? = nil, offline: OfflineDownloads? = nil) {
        self.service = service
        self.actions = actions
        self.readInfo = readInfo
        self.library = library
        self.offline = offline
    }

    /// How tracks are named to clients as `uri` (under `serve`); nil for the plain player.
    public var naming: EventJSON.Naming? { library.map { library in { library.uri(of: $0) } } }

    /// The file a client's `uri` names: confined to the music directory under `serve`.
    private func resolve(_ uri: String) throws(CoreError) -> String {
        try library?.resolve(uri) ?? uri
    }

    /// Handles one request line: exactly one reply, whatever the line holds.
    public func handle(line: [UInt8]) -> Outcome {
        switch ControlProtocol.parse(line) {
        case .invalid(let id, let failure):
            return Outcome(reply: ControlProtocol.reply(id, failure: failure))
        case .request(let request):
            do {
                let result = try execute(request.command, request.args)
                return Outcome(reply: ControlProtocol.reply(request.id, result: result), quit: request.command == "quit")
            } catch let error as CoreError {
                // Service errors keep their category.
                return Outcome(reply: ControlProtocol.reply(request.id, failure: ControlFailure(error)))
            } catch let failure as ControlFailure {
                return Outcome(reply: ControlProtocol.reply(request.id, failure: failure))
            } catch {
                return Outcome(reply: ControlProtocol.reply(request.id, failure: ControlFailure(code: "ioError", message: "\(error)")))
            }
        }
    }

    /// A line longer than the limit (not kept, so no id).
    public func tooLong() -> Outcome {
        Outcome(reply: ControlProtocol.reply(.null, failure: .invalidRequest("the line is longer than \(ControlProtocol.maxLineBytes) bytes")))
    }

    /// Runs `command`; the result, or a failure (`ControlFailure` or the service's `CoreError`).
    public func execute(_ command: String, _ args: ControlArgs) throws -> JSONValue {
        switch command {
        case "play":
            try actions.play()
            return stateResult()
        case "pause":
            try service.pause()
            return stateResult()
        case "toggle":
            try actions.toggle()
            return stateResult()
        case "stop":
            service.stop()
            return stateResult()
        case "seek":
            let position = try args.optionalNumber("position"), by = try args.optionalNumber("by")
            switch (position, by) {
            case (let position?, nil): try service.seek(to: position)
            case (nil, let by?): try actions.seek(by: by)
            case (nil, nil): throw ControlFailure.invalidRequest("'position' is missing")
            default: throw ControlFailure.invalidRequest("give 'position' or 'by', not both")
            }
            return .object([("position", EventJSON.number(service.currentTime()))])
        case "volume":
            let level = try args.optionalNumber("level"), by = try args.optionalNumber("by")
            switch (level, by) {
            case (let level?, nil):
                guard (0...100).contains(level) else {
                    throw CoreError.invalidArgument(("volume: 'level' must be from 0 to 100; got \(JSONValue.double(level).serialized)"))
                }
                actions.setVolume(percent: level)
            case (nil, let by?): actions.changeVolume(by: by)
            case (nil, nil): throw ControlFailure.invalidRequest("'level' is missing")
            default: throw ControlFailure.invalidRequest("give 'level' or 'by', not both")
            }
            return volumeResult()
        case "mute":
            if args.has("enabled") {
                if try args.bool("enabled") != actions.isMuted { actions.toggleMute() }
            } else {
                actions.toggleMute()
            }
            return volumeResult()
        case "next":
            try actions.next()
            return .null
        case "previous":
            try actions.previous()
            return .null
        case "jump":
            let index = try args.int("index")
            try service.jump(to: index)
            return .null
        case "status":
            return status()
        case "queue/items":
            let entry = queueEntry()
            return .object([("index", index()), ("items", .array(service.queue.map(entry)))])
        case "queue/add":
            let uri = try args.string("uri")
            guard !uri.isEmpty else { throw CoreError.invalidArgument(("queue/add: 'uri' is empty")) }
            let key = try args.optionalString("key")
            if let key {
                guard !key.isEmpty else { throw CoreError.invalidArgument("queue/add: 'key' is empty") }
                let lower = uri.lowercased()
                guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
                    throw CoreError.invalidArgument("queue/add: 'key' names an offline copy of an http(s) URL; '\(uri.prefix(80))' is none")
                }
                offline?.port.useKey(key, forURL: uri)  // before the track can open
            }
            // Under serve a folder queues its songs.
            let tracks = try library?.tracks(for: uri) ?? [Track(url: uri)]
            let at: Int
            if let index = try args.optionalInt("index") {
                // The first insert checks `index` (a client's number); the others follow it.
                for (offset, track) in tracks.enumerated() { try service.insert(track, at: offset == 0 ? index : index + offset) }
                at = index
            } else {
                at = service.queue.count
                service.enqueue(tracks)
            }
            var result: [(String, JSONValue)] = [("index", .int(Int64(at))), ("track", queueEntry()(tracks[0]))]
            if tracks.count > 1 { result.append(("count", .int(Int64(tracks.count)))) }
            return .object(result)
        case "queue/remove":
            let index = try args.int("index")
            try service.remove(at: index)
            return .null
        case "queue/move":
            let from = try args.int("from"), to = try args.int("to")
            try service.move(from: from, to: to)
            return .null
        case "queue/clear":
            service.clearQueue()
            return .null
        case "repeat":
            let name = try args.string("mode")
            guard let mode = RepeatMode(rawValue: name) else {
                throw CoreError.invalidArgument(("repeat: 'mode' must be off, one or all; got '\(name.prefix(40))'"))
            }
            service.setRepeatMode(mode)
            return .object([("repeat", .string(service.repeatMode.rawValue))])
        case "single":
            let name = try args.string("mode")
            guard let mode = PlayerActions.SingleMode(rawValue: name) else {
                throw CoreError.invalidArgument(("single: 'mode' must be off, on or oneshot; got '\(name.prefix(40))'"))
            }
            actions.changeSingle(to: mode)
            return .object([("single", .string(actions.singleMode.rawValue))])
        case "shuffle":
            service.setShuffle(try args.bool("enabled"))
            return .object([("shuffle", .bool(service.shuffle))])
        case "set_crossfade":
            try actions.setCrossfade(seconds: try args.number("seconds"))
            return .object([("crossfade", .double(service.crossfadeSettings.seconds))])
        case "info":
            let url: String
            if let uri = try args.optionalString("uri") {
                url = try resolve(uri)
            } else if let current = service.currentTrack {
                url = current.url
            } else {
                throw CoreError.invalidState(("info: no 'uri' given and no current track"))
            }
            let (tags, stream) = try readInfo(url)
            return .object(EventJSON.info(url: url, tags: tags, stream: stream))
        case "cover":
            // The embedded cover, for frontends that show it (the Snapcast bridge's artData).
            let artwork: Data?
            if let uri = try args.optionalString("uri") {
                artwork = try readInfo(resolve(uri)).tags.artworkData
            } else if let current = service.currentTrack {
                artwork = try current.artwork ?? readInfo(current.url).tags.artworkData
            } else {
                throw CoreError.invalidState(("cover: no 'uri' given and no current track"))
            }
            guard let artwork, !artwork.isEmpty else { throw CoreError.notFound("cover: the file has no embedded cover") }
            guard artwork.count <= Self.maxCoverBytes else {
                throw CoreError.unsupported("cover: \(artwork.count) bytes is more than \(Self.maxCoverBytes) (1 MiB)")
            }
            let (mime, ext) = Self.imageType(artwork)
            return .object([("mime", .string(mime)), ("extension", .string(ext)), ("bytes", .int(Int64(artwork.count))),
                            ("data", .string(artwork.base64EncodedString()))])
        case "renew":
            // A fresh link for a signed URL the server refused (after a `link_expired` event).
            let url = try args.string("url"), fresh = try args.string("new_url")
            guard let renewals = actions.renewals else { throw CoreError.invalidState("renew: no network source waits for a link") }
            guard fresh.lowercased().hasPrefix("http://") || fresh.lowercased().hasPrefix("https://") else {
                throw ControlFailure.invalidRequest("renew: 'new_url' must be an http(s) URL")
            }
            renewals.provide(fresh, for: url)
            return .object([])
        case "listens/recent":
            guard let recentListens else {
                throw CoreError.unsupported("listens/recent: this player keeps no history (--no-history, or it could not be opened)")
            }
            let limit = try args.optionalNumber("limit") ?? 20
            guard limit.isFinite, limit >= 1, limit <= 1000 else {
                throw CoreError.invalidArgument("listens/recent: 'limit' must be from 1 to 1000")
            }
            return .object([("listens", .array(try recentListens(Int(limit)).map(EventJSON.listenData)))])
        case "quit":
            return .null
        case _ where command.hasPrefix("offline/"):
            return try ControlOffline.execute(command, args, downloads: offline)
        case _ where command.hasPrefix("library/"):
            guard let library else {
                throw CoreError.unsupported("\(command.prefix(40)): this player has no library (run harmonia-play serve --music-dir DIR)")
            }
            return try library.execute(command, args)
        default:
            throw ControlFailure.unknownCommand(command)
        }
    }

    /// Covers larger than this are refused (a reply is one JSON line).
    public static let maxCoverBytes = 1 << 20

    /// MIME type and file extension from an image's first bytes.
    static func imageType(_ data: Data) -> (String, String) {
        let head = Array(data.prefix(12))
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return ("image/jpeg", "jpg") }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return ("image/png", "png") }
        if head.starts(with: Array("GIF8".utf8)) { return ("image/gif", "gif") }
        if head.count >= 12, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) { return ("image/webp", "webp") }
        return ("application/octet-stream", "bin")
    }

    /// `{"event": "settings_changed", "data": STATUS}`: a setting that no
    /// playback event carries (the crossfade) changed, whoever changed it;
    /// its data is what `status` answers (the web remote's frontend sends it).
    public func settingsChangedEvent() -> JSONValue {
        .object([("event", .string("settings_changed")), ("data", status())])
    }

    public func status() -> JSONValue {
        var members: [(String, JSONValue)]
        guard case .object(let state) = EventJSON.stateObject(service.state) else { return .null }
        members = state
        members += [
            ("position", EventJSON.number(service.currentTime())),
            ("duration", EventJSON.number(service.duration())),
            ("volume", EventJSON.percent(service.volume)),
            ("muted", .bool(actions.isMuted)),
            ("index", index()),
            ("track", service.currentTrack.map(queueEntry()) ?? .null),
            ("count", .int(Int64(service.queue.count))),
            ("repeat", .string(service.repeatMode.rawValue)),
            ("single", .string(actions.singleMode.rawValue)),
            ("shuffle", .bool(service.shuffle)),
            ("crossfade", .double(service.crossfadeSettings.seconds)),
        ]
        if let url = service.currentTrack?.url, let title = actions.streamTitle(for: url) {
            members.append(("stream_title", .string(title)))  // a radio's heard title
        }
        return .object(members)
    }

    /// Formats queue entries for answers: a track with `offline`, whether it
    /// plays from a complete copy (one read of the store's index per answer).
    private func queueEntry() -> (Track) -> JSONValue {
        let keys = offline?.completeKeys() ?? []
        return { [naming, offline] track in
            EventJSON.track(track, naming: naming, offline: offline?.isOffline(track.url, in: keys) ?? false)
        }
    }

    private func index() -> JSONValue { service.currentIndex.map { .int(Int64($0)) } ?? .null }

    private func stateResult() -> JSONValue { EventJSON.stateObject(service.state) }

    private func volumeResult() -> JSONValue {
        .object([("volume", EventJSON.percent(service.volume)), ("muted", .bool(actions.isMuted))])
    }
}
