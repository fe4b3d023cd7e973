// Snapcast's stream-plugin JSON-RPC ↔ the player's control protocol: the
// pure half of `harmonia-play snapcast-control` (no I/O), so that every
// mapping is unit-tested — specs/snapcast-control.md §Mapping
import HarmoniaControl

/// A JSON-RPC 2.0 error object.
struct JSONRPCError: Error, Equatable {
    let code: Int
    let message: String
    /// Why, for people (snapserver passes it on to the client that asked).
    let data: String?

    static func parseError(_ why: String) -> JSONRPCError { .init(code: -32700, message: "Parse error", data: why) }
    static func invalidRequest(_ why: String) -> JSONRPCError { .init(code: -32600, message: "Invalid Request", data: why) }
    static func methodNotFound(_ method: String) -> JSONRPCError {
        .init(code: -32601, message: "Method not found", data: "unknown method '\(SnapcastPlugin.brief(method))'")
    }
    static func invalidParams(_ why: String) -> JSONRPCError { .init(code: -32602, message: "Invalid params", data: why) }
    static func internalError(_ why: String) -> JSONRPCError { .init(code: -32603, message: "Internal error", data: why) }

    var json: JSONValue {
        var members: [(String, JSONValue)] = [("code", .int(Int64(code))), ("message", .string(message))]
        if let data { members.append(("data", .string(data))) }
        return .object(members)
    }
}

/// One line from snapserver, read.
enum SnapcastIncoming: Equatable {
    /// A request: answer it, exactly once.
    case request(id: JSONValue, method: String, params: JSONValue)
    /// A notification (no id): nothing to answer.
    case notification(method: String)
    /// A response (we send no requests, so it is only logged).
    case response(id: JSONValue)
    /// Not a request we can read: answer with this error (`id` null when unreadable).
    case invalid(id: JSONValue, JSONRPCError)
}

/// What a request asks of the player.
enum SnapcastAction: Equatable {
    /// Answer with the current properties.
    case getProperties
    /// Send this control-protocol request; answer `"ok"` when the player
    /// succeeds, an error when it fails.
    case player(command: String, args: JSONValue)
    /// Nothing to do; answer `"ok"` (SetProperty rate 1.0).
    case nothing
}

enum SnapcastPlugin {
    /// Lines from snapserver longer than this are refused unread (its own
    /// requests are under 200 bytes).
    static let maxLineBytes = 64 * 1024
    /// Deeper nesting is refused before parsing (as the control protocol does).
    static let maxDepth = 32

    static let getProperties = "Plugin.Stream.Player.GetProperties"
    static let control = "Plugin.Stream.Player.Control"
    static let setProperty = "Plugin.Stream.Player.SetProperty"

    // MARK: Reading snapserver's lines

    static func parse(_ line: [UInt8]) -> SnapcastIncoming {
        guard line.count <= maxLineBytes else { return .invalid(id: .null, .invalidRequest("the line is longer than \(maxLineBytes) bytes")) }
        guard ControlProtocol.nestingDepth(line) <= maxDepth else {
            return .invalid(id: .null, .invalidRequest("JSON nested deeper than \(maxDepth) levels"))
        }
        let value: JSONValue
        do { value = try JSONValue.parse(line) } catch { return .invalid(id: .null, .parseError("not valid JSON")) }
        guard case .object = value else {
            return .invalid(id: .null, .invalidRequest("a message is a JSON object (batches are not supported)"))
        }
        let id: JSONValue?
        switch value["id"] {
        case nil, .null?: id = nil
        case .int(let i)?: id = .int(i)
        case .string(let s)?: id = .string(s)
        case .double(let d)? where d == d.rounded() && abs(d) < 9e15: id = .int(Int64(d))
        default: return .invalid(id: .null, .invalidRequest("'id' must be an integer or a string"))
        }
        guard let methodValue = value["method"] else {
            if let id, value["result"] != nil || value["error"] != nil { return .response(id: id) }
            return .invalid(id: id ?? .null, .invalidRequest("'method' is missing"))
        }
        guard case .string(let method) = methodValue else { return .invalid(id: id ?? .null, .invalidRequest("'method' must be a string")) }
        guard let id else { return .notification(method: method) }
        let params = value["params"] ?? .null
        switch params {
        case .object, .null: break
        default: return .invalid(id: id, .invalidRequest("'params' must be an object"))
        }
        return .request(id: id, method: method, params: params)
    }

    /// What `method` with `params` asks for — Control and SetProperty as
    /// snapserver 0.26 sends them (`{"command": "seek", "params": {"offset": 10.0}}`,
    /// `{"loopStatus": "track"}`); command names and parameter keys are also
    /// read without regard to case (snapserver's pre-0.26 "Seek"/"Offset").
    static func action(method: String, params: JSONValue) -> Result<SnapcastAction, JSONRPCError> {
        switch method {
        case getProperties: return .success(.getProperties)
        case control: return controlAction(params)
        case setProperty: return propertyAction(params)
        default: return .failure(.methodNotFound(method))
        }
    }

    private static func member(_ object: JSONValue?, _ key: String) -> JSONValue? {
        guard case .object(let members)? = object else { return nil }
        return members.first { $0.0 == key }?.1 ?? members.first { $0.0.lowercased() == key.lowercased() }?.1
    }

    private static func controlAction(_ params: JSONValue) -> Result<SnapcastAction, JSONRPCError> {
        guard let commandValue = member(params, "command") else { return .failure(.invalidParams("'command' is missing")) }
        guard case .string(let command) = commandValue else { return .failure(.invalidParams("'command' must be a string")) }
        func seconds(_ key: String) -> Result<Double, JSONRPCError> {
            guard let value = member(member(params, "params"), key) else { return .failure(.invalidParams("\(command): 'params.\(key)' is missing")) }
            guard let n = value.number, n.isFinite else { return .failure(.invalidParams("\(command): '\(key)' must be a number of seconds; got \(value.brief)")) }
            return .success(n)
        }
        switch command.lowercased() {
        case "play": return .success(.player(command: "play", args: .object([])))
        case "pause": return .success(.player(command: "pause", args: .object([])))
        case "playpause": return .success(.player(command: "toggle", args: .object([])))
        case "stop": return .success(.player(command: "stop", args: .object([])))
        case "next": return .success(.player(command: "next", args: .object([])))
        case "previous": return .success(.player(command: "previous", args: .object([])))
        case "seek": return seconds("offset").map { .player(command: "seek", args: .object([("by", .double($0))])) }
        case "setposition":
            return seconds("position").flatMap { position in
                position >= 0 ? .success(.player(command: "seek", args: .object([("position", .double(position))])))
                    : .failure(.invalidParams("setPosition: the position must not be negative; got \(position)"))
            }
        default: return .failure(.invalidParams("unknown command '\(brief(command))'"))
        }
    }

    private static func propertyAction(_ params: JSONValue) -> Result<SnapcastAction, JSONRPCError> {
        guard case .object(let members) = params, members.count == 1, let (key, value) = members.first else {
            return .failure(.invalidParams("SetProperty takes one property, as {\"volume\": 50}"))
        }
        switch key.lowercased() {
        case "loopstatus":
            guard let status = value.string, let mode = repeatMode(loopStatus: status) else {
                return .failure(.invalidParams("loopStatus must be 'none', 'track' or 'playlist'; got \(value.brief)"))
            }
            return .success(.player(command: "repeat", args: .object([("mode", .string(mode))])))
        case "shuffle":
            guard case .bool(let on) = value else { return .failure(.invalidParams("shuffle must be true or false; got \(value.brief)")) }
            return .success(.player(command: "shuffle", args: .object([("enabled", .bool(on))])))
        case "volume":
            guard let level = value.number, level.isFinite, (0...100).contains(level) else {
                return .failure(.invalidParams("volume must be a number from 0 to 100; got \(value.brief)"))
            }
            return .success(.player(command: "volume", args: .object([("level", .double(level))])))
        case "mute":
            guard case .bool(let on) = value else { return .failure(.invalidParams("mute must be true or false; got \(value.brief)")) }
            return .success(.player(command: "mute", args: .object([("enabled", .bool(on))])))
        case "rate":
            guard let rate = value.number, rate == 1 else { return .failure(.invalidParams("the rate is fixed at 1.0; got \(value.brief)")) }
            return .success(.nothing)
        default:
            return .failure(.invalidParams("property '\(brief(key))' cannot be set"))
        }
    }

    /// A failed control-protocol reply as a JSON-RPC error: argument errors
    /// are invalid params, the rest internal errors, with the player's words.
    static func error(fromPlayerReply reply: JSONValue) -> JSONRPCError {
        let code = reply["error_code"]?.string ?? "error"
        let message = reply["error"]?.string ?? "the player refused"
        let why = "\(code): \(message)"
        switch code {
        case "invalidArgument", "invalidRequest": return .invalidParams(why)
        default: return .internalError(why)
        }
    }

    // MARK: Writing to snapserver

    static func result(id: JSONValue, _ result: JSONValue) -> JSONValue {
        .object([("id", id), ("jsonrpc", .string("2.0")), ("result", result)])
    }

    static func error(id: JSONValue, _ error: JSONRPCError) -> JSONValue {
        .object([("id", id), ("jsonrpc", .string("2.0")), ("error", error.json)])
    }

    static func notification(_ method: String, params: JSONValue? = nil) -> JSONValue {
        var members: [(String, JSONValue)] = [("jsonrpc", .string("2.0")), ("method", .string(method))]
        if let params { members.append(("params", params)) }
        return .object(members)
    }

    static var ready: JSONValue { notification("Plugin.Stream.Ready") }

    static func propertiesNotification(_ properties: JSONValue) -> JSONValue {
        notification("Plugin.Stream.Player.Properties", params: properties)
    }

    // MARK: Words

    static func loopStatus(repeatMode: String) -> String {
        switch repeatMode {
        case "one": "track"
        case "all": "playlist"
        default: "none"
        }
    }

    static func repeatMode(loopStatus: String) -> String? {
        switch loopStatus.lowercased() {
        case "none": "off"
        case "track": "one"
        case "playlist": "all"
        default: nil
        }
    }

    static func brief(_ s: String) -> String { s.count > 60 ? String(s.prefix(57)) + "..." : s }
}

/// The player as its `status` reply shows it — specs/control-protocol.md §Commands.
struct PlayerSnapshot: Equatable {
    var state = "stopped"
    var position: Double?
    var duration: Double?
    var volume: Double?
    var muted = false
    var index: Int?
    var count = 0
    var repeatMode = "off"
    var shuffle = false
    var trackID: String?
    var url: String?
    var title: String?
    /// Every artist (the player's `artists`, or its one `artist`).
    var artists: [String] = []
    var album: String?
    var trackDuration: Double?
    /// A cover URL given with the entry (the player's `artworkUrl`).
    var artworkURL: String?
    /// A radio's heard title.
    var streamTitle: String?

    init() {}

    /// Reads a `status` result; nil when it is not an object.
    init?(status: JSONValue) {
        guard case .object = status else { return nil }
        state = status["state"]?.string ?? "stopped"
        position = Self.finite(status["position"])
        duration = Self.finite(status["duration"])
        volume = Self.finite(status["volume"])
        if case .bool(let b)? = status["muted"] { muted = b }
        if let i = status["index"]?.number, i >= 0, i < 1e9 { index = Int(i) }
        if let c = status["count"]?.number, c >= 0, c < 1e9 { count = Int(c) }
        repeatMode = status["repeat"]?.string ?? "off"
        if case .bool(let b)? = status["shuffle"] { shuffle = b }
        if let track = status["track"], case .object = track {
            trackID = track["id"]?.string
            url = track["url"]?.string
            title = track["title"]?.string
            artists = Self.strings(track["artists"]) ?? track["artist"]?.string.map { [$0] } ?? []
            album = track["album"]?.string
            trackDuration = Self.finite(track["duration"])
            artworkURL = track["artworkUrl"]?.string
        }
        streamTitle = status["stream_title"]?.string
    }

    /// The strings of a JSON array of strings; nil when it is not one.
    static func strings(_ value: JSONValue?) -> [String]? {
        guard let items = value?.array else { return nil }
        let strings = items.compactMap(\.string)
        return strings.count == items.count ? strings : nil
    }

    private static func finite(_ value: JSONValue?) -> Double? {
        guard let n = value?.number, n.isFinite else { return nil }
        return n
    }
}

/// `Plugin.Stream.Player.Properties`: always the complete set, since
/// snapserver replaces the whole set with each message.
enum SnapcastProperties {
    /// - Parameters:
    ///   - snapshot: the player's status; nil while not connected to it
    ///     (then stopped, nothing allowed, empty metadata).
    ///   - albumArtists: the current file's album artists, when read.
    ///   - cover: the current file's embedded cover (`extension`, base64 `data`), when read.
    static func properties(_ snapshot: PlayerSnapshot?, albumArtists: [String] = [], cover: SnapcastCover? = nil) -> JSONValue {
        guard let s = snapshot else {
            return .object([
                ("playbackStatus", .string("stopped")), ("loopStatus", .string("none")), ("shuffle", .bool(false)),
                ("volume", .int(100)), ("position", .double(0)),
                ("canGoNext", .bool(false)), ("canGoPrevious", .bool(false)), ("canPlay", .bool(false)),
                ("canPause", .bool(false)), ("canSeek", .bool(false)), ("canControl", .bool(false)),
                ("metadata", .object([])),
            ])
        }
        let playbackStatus: String
        switch s.state {
        case "playing", "buffering": playbackStatus = "playing"
        case "paused": playbackStatus = "paused"
        default: playbackStatus = "stopped"
        }
        let active = playbackStatus != "stopped"
        let hasQueue = s.count > 0
        // As MPRIS (HarmoniaMPRIS/MPRISMapping.swift): under shuffle or
        // repeat-all any other entry may come.
        var canGoNext = false, canGoPrevious = false
        if let index = s.index, s.count > 1 {
            canGoNext = s.shuffle || s.repeatMode == "all" || index + 1 < s.count
            canGoPrevious = s.shuffle || s.repeatMode == "all" || index > 0
        }
        let length = s.trackDuration ?? (s.duration.flatMap { $0 > 0 ? $0 : nil })
        let volume = Int64(min(max((s.volume ?? 100).rounded(), 0), 100))
        let position = active ? max(0, s.position ?? 0) : 0
        return .object([
            ("playbackStatus", .string(playbackStatus)),
            ("loopStatus", .string(SnapcastPlugin.loopStatus(repeatMode: s.repeatMode))),
            ("shuffle", .bool(s.shuffle)),
            ("volume", .int(s.muted ? 0 : volume)),
            ("position", .double(Self.millis(position))),
            ("canGoNext", .bool(canGoNext)),
            ("canGoPrevious", .bool(canGoPrevious)),
            ("canPlay", .bool(hasQueue)),
            ("canPause", .bool(hasQueue)),
            ("canSeek", .bool(active && length.map { $0 > 0 } == true)),
            ("canControl", .bool(true)),
            ("metadata", metadata(s, albumArtists: albumArtists, length: length, cover: cover)),
        ])
    }

    /// Snapcast's metadata (MPRIS' xesam names): title, artist and albumArtist
    /// as arrays, album, duration in seconds, trackId, and the embedded cover
    /// as `artData` (snapserver 0.26 serves it and sets `artUrl` itself;
    /// specs/snapcast-control.md §Cover art), else a cover URL given with
    /// the entry as `artUrl`.
    static func metadata(_ s: PlayerSnapshot, albumArtists: [String], length: Double?, cover: SnapcastCover? = nil) -> JSONValue {
        guard s.trackID != nil || s.url != nil else { return .object([]) }
        var title = s.title, artists = s.artists, album = s.album
        if let heard = s.streamTitle {
            // A radio: the heard "Artist - Song"; the station's name as the album.
            if let dash = heard.range(of: " - ") {
                artists = [String(heard[..<dash.lowerBound])]
                title = String(heard[dash.upperBound...])
            } else {
                title = heard
            }
            album = album ?? s.title
        }
        if title == nil, let url = s.url {
            title = url.split(separator: "/").last.map(String.init) ?? url
        }
        var members: [(String, JSONValue)] = []
        if let trackID = s.trackID { members.append(("trackId", .string(trackID))) }
        if let title { members.append(("title", .string(title))) }
        if !artists.isEmpty { members.append(("artist", .array(artists.map(JSONValue.string)))) }
        if let album { members.append(("album", .string(album))) }
        if !albumArtists.isEmpty { members.append(("albumArtist", .array(albumArtists.map(JSONValue.string)))) }
        if let length { members.append(("duration", .double(millis(length)))) }
        if let cover {
            members.append(("artData", .object([("data", .string(cover.base64)), ("extension", .string(cover.fileExtension))])))
        } else if let url = s.artworkURL {
            members.append(("artUrl", .string(url)))
        }
        return .object(members)
    }

    /// Seconds rounded to the millisecond (Snapcast's own resolution), so
    /// that an unchanged position compares equal.
    static func millis(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }
}

/// An embedded cover as the player's `cover` command gives it.
struct SnapcastCover: Equatable {
    let base64: String
    let fileExtension: String

    /// From a `cover` reply's result; nil when it is not one.
    init?(result: JSONValue?) {
        guard let data = result?["data"]?.string, !data.isEmpty, let ext = result?["extension"]?.string,
              ext.count <= 8, ext.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return nil }
        base64 = data
        fileExtension = ext
    }
}
