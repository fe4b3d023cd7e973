// Values inside filters — specs/mpd-protocol.md §Filters
//
// `modified-since` time stamps (MPD's ParseISO8601, src/time/ISO8601.cxx,
// which uses glibc's strptime) and `AudioFormat` values (src/pcm/AudioParser.cxx),
// with MPD's messages.
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaLibrary

/// ISO 8601 time stamps as MPD reads them: `YYYY-MM` (the month's start),
/// `YYYY-MM-DD` or `YYYYMMDD`, then optionally `T` and `HH`, `HH:MM`,
/// `HH:MM:SS`, `HHMM` or `HHMMSS`, then `Z` or `±HH`, `±HHMM`, `±HH:MM` (UTC
/// when absent). Numbers are read as glibc's strptime reads them (at most as
/// many digits as fit the field's range).
public enum MPDTimeStamp {
    /// Seconds since 1970 (UTC).
    /// - Throws: ACK ARG: `Failed to parse date`, `Failed to parse time of
    ///   day`, `Failed to parse time zone offset`, `Time offset hours out of
    ///   range`, `Time offset minutes out of range`, `Garbage at end of time stamp`.
    public static func parse(_ text: String) throws(MPDError) -> Int64 {
        let s = Array(text.utf8)
        var fields = tm()
        // "%Y-%m", the whole string: the start of that month.
        var i = 0
        if let year = number(s, &i, 0, 9999, 4), literal(s, &i, "-"), let month = number(s, &i, 1, 12, 2), i == s.count {
            fields.tm_year = Int32(year - 1900)
            fields.tm_mon = Int32(month - 1)
            fields.tm_mday = 1
            return Int64(timegm(&fields))
        }
        i = 0
        if let (y, m, d) = date(s, &i, separated: true) ?? { i = 0; return date(s, &i, separated: false) }() {
            fields.tm_year = Int32(y - 1900)
            fields.tm_mon = Int32(m - 1)
            fields.tm_mday = Int32(d)
        } else {
            throw MPDError(.arg, "Failed to parse date")
        }
        if i < s.count && s[i] == UInt8(ascii: "T") {
            i += 1
            guard let hour = number(s, &i, 0, 23, 2) else { throw MPDError(.arg, "Failed to parse time of day") }
            fields.tm_hour = Int32(hour)
            if i < s.count && s[i] == UInt8(ascii: ":") {
                i += 1
                guard let minute = number(s, &i, 0, 59, 2) else { throw MPDError(.arg, "Failed to parse time of day") }
                fields.tm_min = Int32(minute)
                if i < s.count && s[i] == UInt8(ascii: ":") {
                    i += 1
                    guard let second = number(s, &i, 0, 61, 2) else { throw MPDError(.arg, "Failed to parse time of day") }
                    fields.tm_sec = Int32(second)
                }
            } else if let minute = number(s, &i, 0, 59, 2) {
                fields.tm_min = Int32(minute)
                if let second = number(s, &i, 0, 61, 2) { fields.tm_sec = Int32(second) }
            }
        }
        var seconds = Int64(timegm(&fields))
        if i < s.count && s[i] == UInt8(ascii: "Z") {
            i += 1
        } else if i < s.count && (s[i] == UInt8(ascii: "+") || s[i] == UInt8(ascii: "-")) {
            let negative = s[i] == UInt8(ascii: "-")
            i += 1
            let (hours, minutes) = try zoneOffset(s, &i)
            guard hours <= 13 else { throw MPDError(.arg, "Time offset hours out of range") }
            guard minutes < 60 else { throw MPDError(.arg, "Time offset minutes out of range") }
            let offset = Int64(hours * 3600 + minutes * 60)
            seconds -= negative ? -offset : offset
        }
        guard i == s.count else { throw MPDError(.arg, "Garbage at end of time stamp") }
        return seconds
    }

    private static func date(_ s: [UInt8], _ i: inout Int, separated: Bool) -> (Int, Int, Int)? {
        guard let y = number(s, &i, 0, 9999, 4), !separated || literal(s, &i, "-"),
              let m = number(s, &i, 1, 12, 2), !separated || literal(s, &i, "-"),
              let d = number(s, &i, 1, 31, 2) else { return nil }
        return (y, m, d)
    }

    /// `HHMM`, `HH` or `HH:MM` (MPD reads it with strtoul: digits counted).
    private static func zoneOffset(_ s: [UInt8], _ i: inout Int) throws(MPDError) -> (Int, Int) {
        let start = i
        while i < s.count && s[i] >= 0x30 && s[i] <= 0x39 { i += 1 }
        let digits = Array(s[start..<i])
        let value = digits.reduce(0) { $0 &* 10 &+ Int($1 - 0x30) }
        if digits.count == 4 { return (value / 100, value % 100) }
        guard digits.count == 2 else { throw MPDError(.arg, "Failed to parse time zone offset") }
        guard i < s.count && s[i] == UInt8(ascii: ":") else { return (value, 0) }
        i += 1
        let minuteStart = i
        while i < s.count && s[i] >= 0x30 && s[i] <= 0x39 { i += 1 }
        guard i - minuteStart == 2 else { throw MPDError(.arg, "Failed to parse time zone offset") }
        return (value, Int(s[minuteStart] - 0x30) * 10 + Int(s[minuteStart + 1] - 0x30))
    }

    private static func literal(_ s: [UInt8], _ i: inout Int, _ c: Character) -> Bool {
        guard i < s.count, s[i] == c.asciiValue! else { return false }
        i += 1
        return true
    }

    /// glibc strptime's get_number: blanks skipped, at least one digit, more
    /// only while they fit `maximum` and `width`; nil when out of range.
    private static func number(_ s: [UInt8], _ i: inout Int, _ minimum: Int, _ maximum: Int, _ width: Int) -> Int? {
        var k = i
        while k < s.count && (s[k] == 0x20 || (s[k] >= 0x09 && s[k] <= 0x0D)) { k += 1 }
        guard k < s.count, s[k] >= 0x30 && s[k] <= 0x39 else { return nil }
        var value = 0
        var left = width
        repeat {
            value = value * 10 + Int(s[k] - 0x30)
            k += 1
            left -= 1
        } while left > 0 && value * 10 <= maximum && k < s.count && s[k] >= 0x30 && s[k] <= 0x39
        guard value >= minimum && value <= maximum else { return nil }
        i = k
        return value
    }
}

/// An `AudioFormat` filter value: `RATE:FORMAT:CHANNELS` (format 8, 16, 24,
/// 24_3, 32, f or dsd), or `dsdNN:CHANNELS`; with `=~`, any field may be `*`.
public struct MPDAudioFormat: Sendable, Equatable {
    /// The fields as MPD prints them; nil for `*`.
    public var sampleRate: String?
    public var sampleFormat: String?
    public var channels: String?
    /// A `dsdNN` value ("dsd64").
    public var dsdPrefix: String?

    /// How a song's `format` must compare: equal, or a regular expression
    /// when a field is `*`.
    public var match: TagMatch {
        if let dsdPrefix { return TagMatch(.equals, "\(dsdPrefix):\(channels ?? "")") }
        let fields = [sampleRate, sampleFormat, channels]
        if fields.allSatisfy({ $0 != nil }) { return TagMatch(.equals, fields.map { $0! }.joined(separator: ":")) }
        return TagMatch(.regex, "^" + fields.map { $0 ?? "[^:]+" }.joined(separator: ":") + "$")
    }

    /// - Throws: ACK ARG with MPD's messages: `Failed to parse the sample
    ///   rate`, `Invalid sample rate: N`, `Sample format missing`, `Invalid
    ///   sample format: N`, `Channel count missing`, `Invalid channel count:
    ///   N`, `Extra data after channel count: X`, …
    public static func parse(_ text: String, mask: Bool) throws(MPDError) -> MPDAudioFormat {
        let s = Array(text.utf8)
        var i = 0
        var result = MPDAudioFormat()
        if s.starts(with: Array("dsd".utf8)) {
            var k = 3
            let dsd = digits(s, &k)
            if let dsd, k < s.count, s[k] == UInt8(ascii: ":"), dsd >= 32, dsd <= 4096, dsd % 2 == 0 {
                i = k + 1
                result.dsdPrefix = "dsd\(dsd)"
                result.channels = try channelCount(s, &i, mask)
                try expectEnd(s, i)
                return result
            }
        }
        if mask && i < s.count && s[i] == UInt8(ascii: "*") {
            i += 1
        } else {
            guard let rate = digits(s, &i) else { throw MPDError(.arg, "Failed to parse the sample rate") }
            guard rate > 0 && rate < (1 << 30) else { throw MPDError(.arg, "Invalid sample rate: \(rate)") }
            result.sampleRate = String(rate)
        }
        guard i < s.count, s[i] == UInt8(ascii: ":") else { throw MPDError(.arg, "Sample format missing") }
        i += 1
        if mask && i < s.count && s[i] == UInt8(ascii: "*") {
            i += 1
        } else if i < s.count && s[i] == UInt8(ascii: "f") {
            i += 1
            result.sampleFormat = "f"
        } else if s[i...].starts(with: Array("dsd".utf8)) {
            i += 3
            result.sampleFormat = "dsd"
        } else {
            guard let bits = digits(s, &i) else { throw MPDError(.arg, "Failed to parse the sample format") }
            guard [8, 16, 24, 32].contains(bits) else { throw MPDError(.arg, "Invalid sample format: \(bits)") }
            if bits == 24 && s[i...].starts(with: Array("_3".utf8)) { i += 2 }
            result.sampleFormat = String(bits)
        }
        guard i < s.count, s[i] == UInt8(ascii: ":") else { throw MPDError(.arg, "Channel count missing") }
        i += 1
        result.channels = try channelCount(s, &i, mask)
        try expectEnd(s, i)
        return result
    }

    private static func channelCount(_ s: [UInt8], _ i: inout Int, _ mask: Bool) throws(MPDError) -> String? {
        if mask && i < s.count && s[i] == UInt8(ascii: "*") {
            i += 1
            return nil
        }
        guard let count = digits(s, &i) else { throw MPDError(.arg, "Failed to parse the channel count") }
        guard count >= 1 && count <= 8 else { throw MPDError(.arg, "Invalid channel count: \(count)") }
        return String(count)
    }

    private static func expectEnd(_ s: [UInt8], _ i: Int) throws(MPDError) {
        guard i == s.count else {
            throw MPDError(.arg, "Extra data after channel count: \(String(decoding: s[i...], as: UTF8.self))")
        }
    }

    /// Decimal digits (capped, never traps); nil when there is none.
    private static func digits(_ s: [UInt8], _ i: inout Int) -> Int? {
        let start = i
        var value = 0
        while i < s.count && s[i] >= 0x30 && s[i] <= 0x39 {
            value = min(value * 10 + Int(s[i] - 0x30), 1 << 40)
            i += 1
        }
        return i > start ? value : nil
    }
}
