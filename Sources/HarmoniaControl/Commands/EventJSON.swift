// PlaybackEvent → JSON, the one encoding of events for `--json` and the
// control protocol — specs/control-protocol.md §Events
import HarmoniaCore

public enum EventJSON {
    /// How a track's URL is named to clients as `uri` (under `serve`: relative
    /// to the music folder); nil: tracks have no `uri` member.
    public typealias Naming = (String) -> String

    /// `{"event": NAME, "data": {...}}`.
    public static func line(_ event: PlaybackEvent, naming: Naming? = nil) -> JSONValue {
        .object([("event", .string(event.name)), ("data", data(event, naming: naming))])
    }

    /// The event's fields.
    public static func data(_ event: PlaybackEvent, naming: Naming? = nil) -> JSONValue {
        switch event {
        case .stateChanged(let state):
            return stateObject(state)
        case .trackStarted(let index, let track):
            return .object([("index", .int(Int64(index))), ("track", self.track(track, naming: naming))])
        case .trackEnded(let index, let track, let reason):
            return .object([("index", index.map { .int(Int64($0)) } ?? .null),
                            ("track", self.track(track, naming: naming)), ("reason", .string(reason.rawValue))])
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

    /// `{"event": "listen", "data": {...}}`: a listen that counted and was
    /// recorded (not a `PlaybackEvent`): specs/listens.md §History
    public static func listen(_ record: ListenRecord) -> JSONValue {
        .object([("event", .string("listen")), ("data", listenData(record))])
    }

    /// A listen's fields (the `listen` event, `listens/recent`).
    public static func listenData(_ record: ListenRecord) -> JSONValue {
        let metadata = record.metadata
        func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        return .object([
            ("id", .int(record.id)), ("url", .string(metadata.source)), ("title", optional(metadata.title)),
            ("artist", optional(metadata.artists.isEmpty ? nil : metadata.artists.joined(separator: "; "))),
            ("artists", strings(metadata.artists)), ("album", optional(metadata.album)),
            ("duration", metadata.duration.map(number) ?? .null), ("listened_at", .int(record.listenedAt)),
            ("seconds_heard", number(record.secondsHeard)), ("state", .string(record.state.rawValue)),
        ])
    }

    /// A network event's fields, with the URL of its track.
    public static func network(_ event: NetworkEvent, url: String) -> JSONValue {
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
    public static func stateObject(_ state: PlaybackState) -> JSONValue {
        var members: [(String, JSONValue)] = [("state", .string(state.name))]
        if case .error(let error) = state { members.append(("error", self.error(error, url: nil))) }
        return .object(members)
    }

    public static func error(_ error: CoreError, url: String?) -> JSONValue {
        .object([("category", .string(error.category.rawValue)), ("message", .string(error.message)),
                 ("url", url.map(JSONValue.string) ?? .null)])
    }

    /// A track: id, url, its tags (`tagMembers`), duration (null when
    /// unknown) — the same members whatever made the track (a file, the
    /// library, a URL, a UPnP control point). With `naming`, also its `uri`
    /// (what `queue/add` and the library call it); with `offline` (queue
    /// entries in answers), whether it plays from a complete offline copy.
    public static func track(_ track: Track, naming: Naming? = nil, offline: Bool? = nil) -> JSONValue {
        var members: [(String, JSONValue)] = [
            ("id", .string(track.id.uuidString)),
            ("url", .string(track.url)),
        ]
        if let naming { members.append(("uri", .string(naming(track.url)))) }
        members += tagMembers(track)
        members.append(("duration", track.duration.map(number) ?? .null))
        if let artworkURL = track.artworkURL { members.append(("artworkUrl", .string(artworkURL))) }
        if let offline { members.append(("offline", .bool(offline))) }
        return .object(members)
    }

    /// The tag members of a track and of a library song: `title`, `artist`,
    /// `artists`, `album`, `album_artist`, `album_artists`, `genres`. The
    /// lists hold every value in the file's order (`[]` when none); `artist`
    /// and `album_artist` join theirs with "; " (null when none); `title`
    /// and `album` are null when unknown.
    public static func tagMembers(_ track: Track) -> [(String, JSONValue)] {
        func optional(_ s: String?) -> JSONValue { s.map(JSONValue.string) ?? .null }
        return [
            ("title", optional(track.title)),
            ("artist", optional(track.artist)),
            ("artists", strings(track.artists)),
            ("album", optional(track.album)),
            ("album_artist", optional(track.albumArtist)),
            ("album_artists", strings(track.albumArtists)),
            ("genres", strings(track.genres)),
        ]
    }

    /// A list of strings as a JSON array.
    public static func strings(_ values: [String]) -> JSONValue { .array(values.map(JSONValue.string)) }

    /// Seconds as a JSON number; not finite → null.
    public static func number(_ value: Double) -> JSONValue { value.isFinite ? .double(value) : .null }

    /// A volume 0…1 as a percentage rounded to 0.01.
    public static func percent(_ volume: Float) -> JSONValue {
        .double((Double(volume) * 10_000).rounded() / 100)
    }

    /// The JSON members: url, present tags, then stream facts.
    public static func info(url: String, tags: TagBundle, stream: StreamInfo) -> [(String, JSONValue)] {
        var f: [(String, JSONValue)] = [("url", .string(url))]
        func add(_ key: String, _ value: String?) { if let value { f.append((key, .string(value))) } }
        func add(_ key: String, _ value: Int?) { if let value { f.append((key, .int(Int64(value)))) } }
        func add(_ key: String, _ value: Double?) { if let value { f.append((key, .double(value))) } }
        add("title", tags.title); add("artist", tags.artist); add("album", tags.album)
        add("albumArtist", tags.albumArtist); add("composer", tags.composer); add("genre", tags.genre)
        add("year", tags.year); add("trackNumber", tags.trackNumber); add("trackTotal", tags.trackTotal)
        add("discNumber", tags.discNumber); add("discTotal", tags.discTotal); add("bpm", tags.bpm)
        add("replayGainTrack", tags.replayGainTrack); add("replayGainAlbum", tags.replayGainAlbum)
        add("replayGainTrackPeak", tags.replayGainTrackPeak); add("replayGainAlbumPeak", tags.replayGainAlbumPeak)
        add("comment", tags.comment)
        // Every value of the list fields, in file order (the strings above join them).
        func add(_ key: String, _ values: [String]) { if !values.isEmpty { f.append((key, strings(values))) } }
        add("artists", tags.artists); add("albumArtists", tags.albumArtists); add("composers", tags.composers)
        add("genres", tags.genres); add("performers", tags.performers)
        let ids = tags.musicBrainz
        let musicBrainz = [("artistIds", ids.artistIDs), ("albumArtistIds", ids.albumArtistIDs), ("albumIds", ids.albumIDs),
                           ("trackIds", ids.trackIDs), ("releaseTrackIds", ids.releaseTrackIDs), ("workIds", ids.workIDs)]
            .filter { !$0.1.isEmpty }.map { ($0.0, strings($0.1)) }
        if !musicBrainz.isEmpty { f.append(("musicBrainz", .object(musicBrainz))) }
        add("artworkBytes", tags.artworkData?.count)
        if let lyrics = tags.lyrics {
            f.append(("lyrics", .array(lyrics.map { variant in
                .object([("languageCode", variant.languageCode.map(JSONValue.string) ?? .null),
                         ("text", .string(variant.text))])
            })))
        }
        f.append(("duration", stream.duration.isFinite ? .double(stream.duration) : .null))
        add("sampleRate", stream.sampleRate); add("channels", stream.channels); add("bitDepth", stream.bitDepth)
        add("codec", stream.codec); add("encoding", tags.encoding); add("bitrate", stream.bitrate)
        add("fileSize", tags.fileSize)
        if let total = stream.totalFrames { f.append(("totalFrames", .int(total))) }
        return f
    }
}
