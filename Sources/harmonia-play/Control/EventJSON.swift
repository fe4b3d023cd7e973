// PlaybackEvent → JSON, the one encoding of events for `--json` and the
// control protocol — specs/control-protocol.md §Events
import HarmoniaCore

enum EventJSON {
    /// `{"event": NAME, "data": {...}}`.
    static func line(_ event: PlaybackEvent) -> JSONValue {
        .object([("event", .string(event.name)), ("data", data(event))])
    }

    /// The event's fields.
    static func data(_ event: PlaybackEvent) -> JSONValue {
        switch event {
        case .stateChanged(let state):
            return stateObject(state)
        case .trackStarted(let index, let track):
            return .object([("index", .int(Int64(index))), ("track", self.track(track))])
        case .trackEnded(let index, let track, let reason):
            return .object([("index", index.map { .int(Int64($0)) } ?? .null),
                            ("track", self.track(track)), ("reason", .string(reason.rawValue))])
        case .position(let seconds, let duration):
            return .object([("position", number(seconds)), ("duration", number(duration))])
        case .seekCompleted(let seconds):
            return .object([("position", number(seconds))])
        case .volumeChanged(let volume):
            return .object([("volume", percent(volume))])
        case .queueChanged, .queueEnded:
            return .object([])
        case .underrun(let count):
            return .object([("count", .int(Int64(count)))])
        case .error(let error, let url):
            return self.error(error, url: url)
        case .network(let event, let url):
            return network(event, url: url)
        }
    }

    /// A network event's fields, with the URL of its track.
    static func network(_ event: NetworkEvent, url: String) -> JSONValue {
        func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        switch event {
        case .connecting:
            return .object([("url", .string(url))])
        case .reconnecting(let attempt, let byte):
            return .object([("attempt", .int(Int64(attempt))), ("byte", .int(byte)), ("url", .string(url))])
        case .linkExpired(let status):
            return .object([("status", .int(Int64(status))), ("url", .string(url))])
        case .resumed(let byte):
            return .object([("byte", .int(byte)), ("url", .string(url))])
        case .station(let station):
            return .object([("name", optional(station.name)), ("genre", optional(station.genre)),
                            ("station_url", optional(station.url)), ("url", .string(url))])
        case .streamTitle(let title, let byte):
            // "Artist - Title", the usual form, also split; the raw text kept.
            var members: [(String, JSONValue)] = [("title", .string(title))]
            if let dash = title.range(of: " - ") {
                members += [("artist", .string(String(title[..<dash.lowerBound]))), ("song", .string(String(title[dash.upperBound...])))]
            }
            return .object(members + [("byte", .int(byte)), ("url", .string(url))])
        }
    }

    /// `{"state": "playing"}`; an error state carries `"error": {category, message, url}`.
    static func stateObject(_ state: PlaybackState) -> JSONValue {
        var members: [(String, JSONValue)] = [("state", .string(state.name))]
        if case .error(let error) = state { members.append(("error", self.error(error, url: nil))) }
        return .object(members)
    }

    static func error(_ error: CoreError, url: String?) -> JSONValue {
        .object([("category", .string(error.category.rawValue)), ("message", .string(error.message)),
                 ("url", url.map(JSONValue.string) ?? .null)])
    }

    /// id, url, title, artist, album, duration (null when unknown).
    static func track(_ track: Track) -> JSONValue {
        func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        return .object([
            ("id", .string(track.id.uuidString)),
            ("url", .string(track.url)),
            ("title", optional(track.title)),
            ("artist", optional(track.artist)),
            ("album", optional(track.album)),
            ("duration", track.duration.map(number) ?? .null),
        ])
    }

    /// Seconds as a JSON number; not finite → null.
    static func number(_ value: Double) -> JSONValue { value.isFinite ? .double(value) : .null }

    /// A volume 0…1 as a percentage rounded to 0.01.
    static func percent(_ volume: Float) -> JSONValue {
        .double((Double(volume) * 10_000).rounded() / 100)
    }
}
