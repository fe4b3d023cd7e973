// Our states, tracks and modes as MPRIS properties:
// specs/mpris.md §Mapping (Player properties, Metadata)
//
// Pure values: no bus, no service. MPRISPlayerAdapter fills `MPRISFacts`
// from the playback service and publishes what these functions return.
import Foundation
import HarmoniaCore

/// What the Player interface shows, read from the service at one moment.
struct MPRISFacts: Sendable {
    var state: PlaybackState
    var volume: Float
    var repeatMode: RepeatMode
    var shuffle: Bool
    var queueCount: Int
    var currentIndex: Int?
    var currentTrack: Track?
    /// The heard track's length in seconds from the service (0 when stopped).
    var serviceDuration: Double
}

/// The Player interface's properties other than Position (which is read on
/// demand and never signalled, as the MPRIS specification says).
struct MPRISPlayerProperties: Equatable, Sendable {
    var playbackStatus: String
    var loopStatus: String
    var shuffle: Bool
    var volume: Double
    var metadata: DBusValue
    var canGoNext: Bool
    var canGoPrevious: Bool
    var canPlay: Bool
    var canPause: Bool
    var canSeek: Bool

    /// The properties that are signalled when they change, by name, in a fixed order.
    var entries: [DBusDictEntry] {
        [
            DBusDictEntry(key: "PlaybackStatus", value: .string(playbackStatus)),
            DBusDictEntry(key: "LoopStatus", value: .string(loopStatus)),
            DBusDictEntry(key: "Shuffle", value: .boolean(shuffle)),
            DBusDictEntry(key: "Volume", value: .double(volume)),
            DBusDictEntry(key: "Metadata", value: metadata),
            DBusDictEntry(key: "CanGoNext", value: .boolean(canGoNext)),
            DBusDictEntry(key: "CanGoPrevious", value: .boolean(canGoPrevious)),
            DBusDictEntry(key: "CanPlay", value: .boolean(canPlay)),
            DBusDictEntry(key: "CanPause", value: .boolean(canPause)),
            DBusDictEntry(key: "CanSeek", value: .boolean(canSeek)),
        ]
    }

    /// The entries whose value differs from `old`'s (all of them when `old` is nil).
    func changes(since old: MPRISPlayerProperties?) -> [DBusDictEntry] {
        guard let old else { return entries }
        return zip(entries, old.entries).filter { $0.value != $1.value }.map(\.0)
    }
}

/// The mapping functions: specs/mpris.md §Mapping.
enum MPRISMapping {
    /// Object path of a track id when there is no current track.
    static let noTrack = "/org/mpris/MediaPlayer2/TrackList/NoTrack"
    /// Track ids live under our own prefix (`/org/mpris` is reserved by the specification).
    static let trackIDPrefix = "/org/harmonia/HarmoniaPlay/Track/"
    /// Longest text sent for one tag value, in UTF-8 bytes (cut at a character boundary).
    static let maxTextBytes = 4096

    static func playbackStatus(_ state: PlaybackState) -> String {
        switch state {
        case .playing, .buffering: "Playing"
        case .paused: "Paused"
        case .stopped, .error: "Stopped"
        }
    }

    static func loopStatus(_ mode: RepeatMode) -> String {
        switch mode {
        case .off: "None"
        case .one: "Track"
        case .all: "Playlist"
        }
    }

    static func repeatMode(loopStatus: String) -> RepeatMode? {
        switch loopStatus {
        case "None": .off
        case "Track": .one
        case "Playlist": .all
        default: nil
        }
    }

    /// The queue entry's track id: unique per entry (the same file queued twice has two).
    static func trackID(_ track: Track) -> String {
        trackIDPrefix + track.id.uuidString.lowercased().replacingOccurrences(of: "-", with: "")
    }

    /// Seconds as MPRIS microseconds, rounded; NaN and infinities become 0
    /// and the result is clamped to ±2^62 (never traps).
    static func microseconds(_ seconds: Double) -> Int64 {
        guard seconds.isFinite else { return 0 }
        let limit = Double(Int64(1) << 62)
        return Int64(min(max((seconds * 1_000_000).rounded(), -limit), limit))
    }

    static func seconds(microseconds: Int64) -> Double { Double(microseconds) / 1_000_000 }

    static func properties(_ facts: MPRISFacts, metadata: DBusValue) -> MPRISPlayerProperties {
        let hasQueue = facts.queueCount > 0
        let active: Bool
        switch facts.state {
        case .playing, .paused, .buffering: active = true
        case .stopped, .error: active = false
        }
        var canGoNext = false, canGoPrevious = false
        if let index = facts.currentIndex, facts.queueCount > 1 {
            // Under shuffle the play order is the service's own: any other entry may come.
            canGoNext = facts.shuffle || facts.repeatMode == .all || index + 1 < facts.queueCount
            canGoPrevious = facts.shuffle || facts.repeatMode == .all || index > 0
        }
        let length = lengthSeconds(facts)
        return MPRISPlayerProperties(
            playbackStatus: playbackStatus(facts.state),
            loopStatus: loopStatus(facts.repeatMode),
            shuffle: facts.shuffle,
            volume: Double(facts.volume),
            metadata: metadata,
            canGoNext: canGoNext,
            canGoPrevious: canGoPrevious,
            canPlay: hasQueue,
            canPause: hasQueue,
            canSeek: active && length.map { $0 > 0 } == true)
    }

    /// The current track's length: the track's own (exact from the stream
    /// once opened; a range's length for a ranged track), else the service's.
    static func lengthSeconds(_ facts: MPRISFacts) -> Double? {
        if let duration = facts.currentTrack?.duration, duration.isFinite, duration >= 0 { return duration }
        return facts.serviceDuration.isFinite && facts.serviceDuration > 0 ? facts.serviceDuration : nil
    }

    /// The Metadata map of `track` (`a{sv}`); NoTrack alone when there is none.
    /// A field without a value is left out, as the specification asks.
    static func metadata(track: Track?, tags: TagBundle?, lengthSeconds: Double?, artURL: String?,
                         currentDirectory: String) -> DBusValue {
        guard let track else { return .dictionary([DBusDictEntry(key: "mpris:trackid", value: .objectPath(noTrack))]) }
        var entries = [DBusDictEntry(key: "mpris:trackid", value: .objectPath(trackID(track)))]
        func add(_ key: String, _ value: DBusValue?) {
            if let value { entries.append(DBusDictEntry(key: key, value: value)) }
        }
        func text(_ value: String?) -> DBusValue? { value.map { .string(bounded($0)) } }
        func list(_ values: [String]) -> DBusValue? { values.isEmpty ? nil : .strings(values.map(bounded)) }
        func number(_ value: Int?) -> DBusValue? { value.map { .int32(Int32(clamping: $0)) } }
        if let lengthSeconds { add("mpris:length", .int64(microseconds(lengthSeconds))) }
        add("mpris:artUrl", text(artURL))
        add("xesam:url", .string(uri(track.url, currentDirectory: currentDirectory)))
        // The queue entry's own fields (a playlist's or CUE sheet's title) win over the file's tags.
        add("xesam:title", text(track.title ?? tags?.title ?? fileName(track.url)))
        add("xesam:artist", list(track.artists.isEmpty ? tags?.artists ?? [] : track.artists))
        add("xesam:album", text(track.album ?? tags?.album))
        add("xesam:albumArtist", list(track.albumArtists.isEmpty ? tags?.albumArtists ?? [] : track.albumArtists))
        add("xesam:trackNumber", number(tags?.trackNumber))
        add("xesam:discNumber", number(tags?.discNumber))
        add("xesam:genre", list(track.genres.isEmpty ? tags?.genres ?? [] : track.genres))
        add("xesam:composer", list(tags?.composers ?? []))
        return .dictionary(entries)
    }

    /// `url` as a URI: URLs as they are, paths as `file://` URIs (made
    /// absolute against `currentDirectory`, percent-encoded).
    static func uri(_ url: String, currentDirectory: String) -> String {
        if hasScheme(url) { return bounded(url) }
        let path = url.hasPrefix("/") ? url : currentDirectory + (currentDirectory.hasSuffix("/") ? "" : "/") + url
        return "file://" + percentEncoded(path)
    }

    /// Whether `text` starts with `scheme:` (RFC 3986 letters, digits, + - .).
    static func hasScheme(_ text: String) -> Bool {
        guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else { return false }
        let scheme = text[..<colon]
        return scheme.first!.isASCII && scheme.first!.isLetter
            && scheme.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "-" || $0 == ".") }
    }

    /// Every byte outside the unreserved set and `/` as `%XX`.
    static func percentEncoded(_ path: String) -> String {
        var out = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".unicodeScalars)
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(hex[Int(byte >> 4)])
                out.unicodeScalars.append(hex[Int(byte & 0x0F)])
            }
        }
        return out
    }

    /// A `file:` URI's path (percent-decoded); nil for other URIs or a malformed one.
    static func path(fileURI: String) -> String? {
        guard fileURI.hasPrefix("file://") else { return nil }
        var rest = Substring(fileURI.dropFirst(7))
        if !rest.hasPrefix("/") {
            // file://host/path: only the local host is ours.
            guard rest.hasPrefix("localhost/") else { return nil }
            rest = rest.dropFirst(9)
        }
        var bytes: [UInt8] = []
        var iterator = rest.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else { bytes.append(byte); continue }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        guard !bytes.contains(0), let path = String(validating: bytes, as: UTF8.self) else { return nil }
        return path
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// `text` cut to `maxTextBytes` UTF-8 bytes at a character boundary.
    static func bounded(_ text: String) -> String {
        guard text.utf8.count > maxTextBytes else { return text }
        let scalars = text.unicodeScalars
        var bytes = 0
        var end = scalars.startIndex
        while end != scalars.endIndex {
            let width = UTF8.width(scalars[end])
            if bytes + width > maxTextBytes { break }
            bytes += width
            end = scalars.index(after: end)
        }
        return String(scalars[..<end])
    }

    private static func fileName(_ url: String) -> String? {
        url.split(separator: "/", omittingEmptySubsequences: true).last.map(String.init)
    }
}
