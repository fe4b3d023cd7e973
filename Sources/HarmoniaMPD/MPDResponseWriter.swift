// Responses — specs/mpd-protocol.md §Responses
//
// `key: value` lines, binary chunks and song records as MPD 0.23 writes
// them (src/SongPrint.cxx, src/TagPrint.cxx, src/queue/QueuePrint.cxx,
// src/client/Response.cxx).
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaLibrary

/// Where a long answer goes while it is produced: the client's connection.
/// Threads: called on the connection's reader thread (the command's).
public protocol MPDResponseSink: AnyObject, Sendable {
    /// Queues `bytes` for the client, first waiting while its unsent output
    /// is at its bound (a slow reader throttles the command). False when the
    /// client is gone: the command should stop producing.
    func deliver(_ bytes: [UInt8]) -> Bool
}

/// The bytes of one command's answer. Without a sink they are built in
/// memory and bounded: past `limit` bytes further output is dropped and
/// `isOverflowed` is set, and the connection then drops the client as MPD
/// does ("Output buffer is full"). With a sink (a connection's) they are
/// handed on every `streamChunkBytes` as they are produced, so an answer of
/// any length is sent in bounded memory (specs/mpd-protocol.md §Responses);
/// `isOverflowed` is then set only when the client has gone. A handler with
/// a long listing checks `isFull` to stop early.
/// A value type: one per command, on the connection's thread.
public struct MPDResponseWriter: Sendable {
    /// What was written and not yet handed to the sink (the connection sends
    /// it; tests read it).
    public private(set) var bytes: [UInt8] = []
    public let limit: Int
    /// Output was dropped for want of room, or the sink's client has gone:
    /// the client will be dropped.
    public private(set) var isOverflowed = false
    /// Where the bytes go as they are produced; nil: kept in `bytes`.
    public var sink: (any MPDResponseSink)?
    /// With a sink, the bytes kept before they are handed on.
    public static let streamChunkBytes = 64 * 1024
    /// The tags the client wants in song records (the server's tags ∩ its `tagtypes`).
    public var tagMask: MPDTagMask
    /// The largest chunk `appendBinary` sends (the client's `binarylimit`).
    public var binaryLimit: Int
    /// The last record's modification time and its `Last-Modified` text.
    private var lastModified: (time: Int64, text: String)?

    public init(limit: Int = MPDProtocol.defaultMaxOutputBytes, tagMask: MPDTagMask = .all,
                binaryLimit: Int = MPDProtocol.defaultBinaryLimit) {
        self.limit = limit
        self.tagMask = tagMask
        self.binaryLimit = binaryLimit
    }

    /// No more fits (or, with a sink, the client has gone): a handler may stop producing.
    public var isFull: Bool { isOverflowed || (sink == nil && bytes.count >= limit) }

    /// The answer as text (for tests; binary bytes are replaced if not UTF-8).
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Appends raw bytes (the caller adds any newline).
    public mutating func appendRaw(_ data: some Collection<UInt8>) {
        guard makeRoom(for: data.count) else { return }
        bytes.append(contentsOf: data)
    }

    /// Whether `count` more bytes may be appended to `bytes`: what is kept
    /// is handed to the sink first when they would pass a chunk; false, and
    /// `isOverflowed` set, past the limit or when the sink's client has gone.
    private mutating func makeRoom(for count: Int) -> Bool {
        guard !isOverflowed else { return false }
        if sink != nil && bytes.count + count > Self.streamChunkBytes && !bytes.isEmpty {
            guard flush() else { return false }
        }
        guard bytes.count + count <= limit else {
            isOverflowed = true
            return false
        }
        return true
    }

    /// Hands what is kept to the sink (nothing without one); false, and
    /// `isOverflowed` set, when its client has gone.
    @discardableResult
    public mutating func flush() -> Bool {
        guard let sink, !bytes.isEmpty, !isOverflowed else { return !isOverflowed }
        guard sink.deliver(bytes) else {
            isOverflowed = true
            bytes = []
            return false
        }
        bytes.removeAll(keepingCapacity: true)
        return true
    }

    /// Appends `text` and a newline.
    public mutating func appendLine(_ text: String) {
        var line = text
        line.append("\n")
        appendRaw(line.utf8)
    }

    /// `key: value`. MPD writes values as they are; a newline inside a value
    /// (a lyrics tag) would split the record, so it is written as a space.
    public mutating func append(_ key: String, _ value: String) {
        guard !isOverflowed else { return }
        if Self.hasNoNewline(value) {
            // The common case: copied straight into `bytes`, no line built.
            guard makeRoom(for: key.utf8.count + value.utf8.count + 3) else { return }
            appendBytes(of: key)
            bytes.append(UInt8(ascii: ":"))
            bytes.append(UInt8(ascii: " "))
            appendBytes(of: value)
            bytes.append(0x0A)
            return
        }
        let clean = String(value.map { $0.isNewline ? " " : $0 })
        appendLine("\(key): \(clean)")
    }

    /// `key: value` for a value given as its UTF-8 bytes (a path the store
    /// read, valid only during the call): well-formed UTF-8 without a
    /// control character or a newline is copied as it is; anything else goes
    /// through `append(_:_:)` as a String (bytes that are not UTF-8
    /// replaced, newlines written as spaces).
    public mutating func append(_ key: StaticString, utf8 value: UnsafeBufferPointer<UInt8>) {
        guard !isOverflowed else { return }
        guard Self.isPlainText(value) else {
            append(key.description, String(decoding: value, as: UTF8.self))
            return
        }
        guard makeRoom(for: key.utf8CodeUnitCount + value.count + 3) else { return }
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: ":"))
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: value)
        bytes.append(0x0A)
    }

    /// True when `bytes` are well-formed UTF-8 (Unicode's table 3-7) with
    /// no byte below 0x20 and no U+0085, U+2028 or U+2029: a value written
    /// as it is. One pass; ASCII is checked eight bytes at a time.
    static func isPlainText(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var index = 0
        let end = bytes.count
        while index < end {
            if end - index >= 8 {
                // Every byte in 0x20...0x7F: no top bit in the bytes, nor in
                // the bytes less 0x20 (a byte below 0x20 wraps around).
                let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                if (word | (word &- 0x2020_2020_2020_2020)) & 0x8080_8080_8080_8080 == 0 {
                    index += 8
                    continue
                }
            }
            let lead = bytes[index]
            if lead < 0x80 {
                guard lead >= 0x20 else { return false }
                index += 1
                continue
            }
            // The range of the second byte, and how many bytes in all.
            let second: ClosedRange<UInt8>, length: Int
            switch lead {
            case 0xC2...0xDF: (second, length) = (0x80...0xBF, 2)
            case 0xE0: (second, length) = (0xA0...0xBF, 3)
            case 0xE1...0xEC, 0xEE...0xEF: (second, length) = (0x80...0xBF, 3)
            case 0xED: (second, length) = (0x80...0x9F, 3)
            case 0xF0: (second, length) = (0x90...0xBF, 4)
            case 0xF1...0xF3: (second, length) = (0x80...0xBF, 4)
            case 0xF4: (second, length) = (0x80...0x8F, 4)
            default: return false
            }
            guard end - index >= length, second.contains(bytes[index + 1]) else { return false }
            for offset in 2..<max(2, length) where bytes[index + offset] & 0xC0 != 0x80 { return false }
            // U+0085 is C2 85; U+2028 and U+2029 are E2 80 A8 and E2 80 A9.
            if lead == 0xC2 && bytes[index + 1] == 0x85 { return false }
            if lead == 0xE2 && bytes[index + 1] == 0x80 && (bytes[index + 2] == 0xA8 || bytes[index + 2] == 0xA9) { return false }
            index += length
        }
        return true
    }

    /// Copies `text`'s UTF-8 into `bytes` in one move (the caller made room).
    private mutating func appendBytes(of text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// The decimal digits of `value` (not negative) into `bytes` (the caller made room).
    private mutating func appendDigits(of value: Int64) {
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digits) { buffer in
            var rest = UInt64(max(0, value))
            var start = buffer.count
            repeat {
                start -= 1
                buffer[start] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            } while rest > 0
            bytes.append(contentsOf: buffer[start...])
        }
    }

    /// True when no Character of `value` is a newline: its bytes are plain
    /// text (`isPlainText`), or, for a value with a control character or a
    /// byte that may start a newline, the Character check says so.
    private static func hasNoNewline(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { bytes in
            isPlainText(bytes) || !String(decoding: bytes, as: UTF8.self).contains(where: \.isNewline)
        }
    }

    public mutating func append(_ key: String, _ value: some BinaryInteger) {
        append(key, String(value))
    }

    /// `list_OK` (after each command of a `command_list_ok_begin` list).
    public mutating func appendListOK() { appendLine("list_OK") }
    /// `OK` (the end of a successful answer).
    public mutating func appendOK() { appendLine("OK") }

    /// `binary: M`, the M bytes, a newline (MPD's WriteBinary). The caller
    /// keeps `payload` within `binaryLimit` (see `appendBinaryChunk`).
    public mutating func appendBinary(_ payload: some Collection<UInt8>) {
        appendLine("binary: \(payload.count)")
        appendRaw(payload)
        appendRaw(CollectionOfOne(0x0A))
    }

    /// One chunk of a picture, as `albumart` / `readpicture` answer: `size:
    /// TOTAL`, `type: MIME` (readpicture, when known), then at most
    /// `binaryLimit` bytes from `offset`. An offset past the end throws
    /// `Offset too large` (albumart) — readpicture's callers say `Bad file
    /// offset` themselves, as MPD.
    public mutating func appendBinaryChunk(of data: [UInt8], offset: Int, mimeType: String? = nil) throws(MPDError) {
        guard offset >= 0, offset <= data.count else { throw MPDError(.arg, "Offset too large") }
        append("size", data.count)
        if let mimeType { append("type", mimeType) }
        let end = offset + min(data.count - offset, binaryLimit)
        appendBinary(data[offset..<end])
    }

    /// A song as MPD prints it: `file:`, `Last-Modified:`, `Format:` (when
    /// known), its tags in MPD's order (those in `tagMask`), `Time:` (whole
    /// seconds, half up) and `duration:` (3 decimals) when known, then `Pos:`
    /// and `Id:` for a queue entry (and `Prio:` when not 0).
    ///
    /// A tag with several values gets a line per value, in file order.
    /// Differs from MPD in one way: MPD prints tags in the order the file
    /// has them; we print them in MPD's tag-type order.
    public mutating func appendSong(_ song: LibrarySong, position: Int? = nil, id: Int? = nil, priority: Int = 0) {
        appendRecordHead(path: song.path, modified: song.modified, format: song.format)
        appendTags(song.tags)
        appendRecordTail(duration: song.duration)
        if let position, let id {
            append("Pos", position)
            append("Id", id)
            if priority != 0 { append("Prio", priority) }
        }
    }

    /// A song's record from the store's record (`appendSong(_:)` without
    /// queue fields): tag lines are copied as they are when the client
    /// wants every tag they hold.
    public mutating func appendSong(_ record: LibrarySongRecord) {
        appendRecordHead(path: record.path, modified: record.modified, format: record.format)
        switch record.tags {
        case .lines(let lines) where tagMask.containsAll(libraryTags: lines.presentTags):
            var text = lines.text
            text.withUTF8 { appendRaw($0) }
        case .lines(let lines):
            lines.forEachLine { tag, value in
                let type = MPDTagType(tag)
                guard tagMask.contains(type) else { return }
                appendLine(type.name, value)
            }
        case .values(let tags):
            appendTags(tags)
        }
        appendRecordTail(duration: record.duration)
    }

    /// `file:`, `Last-Modified:` and `Format:` (when known), a record's first lines.
    private mutating func appendRecordHead(path: String, modified: Int64, format: String?) {
        append("file", path)
        // Songs copied together share their time: the last record's text is kept.
        if lastModified?.time != modified { lastModified = (modified, Self.iso8601(modified)) }
        append("Last-Modified", lastModified?.text ?? "")
        if let format, !format.isEmpty { append("Format", format) }
    }

    /// `Time:` and `duration:`, when the duration is known: the digits of
    /// `durationFields` written straight into the answer.
    private mutating func appendRecordTail(duration: Double?) {
        guard let duration, duration >= 0, duration.isFinite else { return }
        let ms = Int64((min(duration, 1e12) * 1000).rounded())
        // "Time: ", at most 13 digits, "\nduration: ", 13 digits, ".mmm\n" (1e12 s at most)
        guard makeRoom(for: 48) else { return }
        bytes.append(contentsOf: Self.timeKey)
        appendDigits(of: (ms + 500) / 1000)
        bytes.append(contentsOf: Self.durationKey)
        appendDigits(of: ms / 1000)
        let fraction = ms % 1000
        bytes.append(UInt8(ascii: "."))
        bytes.append(UInt8(ascii: "0") + UInt8(fraction / 100))
        bytes.append(UInt8(ascii: "0") + UInt8(fraction / 10 % 10))
        bytes.append(UInt8(ascii: "0") + UInt8(fraction % 10))
        bytes.append(0x0A)
    }

    private static let timeKey = Array("Time: ".utf8)
    private static let durationKey = Array("\nduration: ".utf8)

    /// `key: value` from a value already known to hold no newline (a tag line's).
    private mutating func appendLine(_ key: String, _ value: UnsafeBufferPointer<UInt8>) {
        guard makeRoom(for: key.utf8.count + value.count + 3) else { return }
        appendBytes(of: key)
        bytes.append(UInt8(ascii: ":"))
        bytes.append(UInt8(ascii: " "))
        bytes.append(contentsOf: value)
        bytes.append(0x0A)
    }

    /// The song's tags in `tagMask`, in MPD's tag-type order, a line per value.
    public mutating func appendTags(of song: LibrarySong) {
        appendTags(song.tags)
    }

    /// `tags` in `tagMask`, in MPD's tag-type order, a line per value.
    private mutating func appendTags(_ tags: [LibraryTag: [String]]) {
        // The song's few tags put in MPD's order: no dictionary lookup per tag type.
        var present = tags.compactMap { tag, values in
            let type = MPDTagType(tag)
            return tagMask.contains(type) ? (type, values) : nil
        }
        present.sort { $0.0.rawValue < $1.0.rawValue }
        for (type, values) in present {
            for value in values { append(type.name, value) }
        }
    }

    /// `Time:` and `duration:` for `seconds`: MPD keeps milliseconds; Time is
    /// (ms + 500) / 1000, duration is ms / 1000 with 3 decimals.
    /// We round to the nearest millisecond (MPD's decoders already give whole ms).
    public static func durationFields(_ seconds: Double) -> (Int64, String) {
        let ms = Int64((min(seconds, 1e12) * 1000).rounded())
        let fraction = ms % 1000
        guard ms >= 0 else {
            let text = String(fraction)
            return ((ms + 500) / 1000, "\(ms / 1000).\(String(repeating: "0", count: max(0, 3 - text.count)))\(text)")
        }
        let padding = fraction < 10 ? ".00" : fraction < 100 ? ".0" : "."
        return ((ms + 500) / 1000, String(ms / 1000) + padding + String(fraction))
    }

    /// `YYYY-MM-DDTHH:MM:SSZ` for seconds since 1970 (UTC), as MPD's FormatISO8601.
    public static func iso8601(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "1970-01-01T00:00:00Z" }
        let year = Int(parts.tm_year) + 1900
        guard (0...9999).contains(year) else {
            func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
            return "\(year)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
        }
        // Written digit by digit: every song record carries one (a 5,000-song
        // folder's `lsinfo` spent 6 % of its time building them from pieces).
        return String(unsafeUninitializedCapacity: 20) { text in
            func put(_ value: Int, digits: Int, at offset: Int) {
                var rest = value
                for place in stride(from: offset + digits - 1, through: offset, by: -1) {
                    text[place] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
            }
            put(year, digits: 4, at: 0)
            put(Int(parts.tm_mon) + 1, digits: 2, at: 5)
            put(Int(parts.tm_mday), digits: 2, at: 8)
            put(Int(parts.tm_hour), digits: 2, at: 11)
            put(Int(parts.tm_min), digits: 2, at: 14)
            put(Int(parts.tm_sec), digits: 2, at: 17)
            (text[4], text[7], text[10]) = (UInt8(ascii: "-"), UInt8(ascii: "-"), UInt8(ascii: "T"))
            (text[13], text[16], text[19]) = (UInt8(ascii: ":"), UInt8(ascii: ":"), UInt8(ascii: "Z"))
            return 20
        }
    }
}
