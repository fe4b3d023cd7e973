// Argument parsing — specs/mpd-protocol.md §Arguments
//
// MPD's argument helpers (src/protocol/ArgParser.cxx) with its messages,
// checked against MPD 0.23.12. They use the C library's strtol/strtoul/
// strtof as MPD does, so what is accepted (leading blanks, a sign, hex
// floats, "inf") is exactly MPD's.
#if canImport(Glibc)
import Glibc
#endif

/// A `START:END` range argument (MPD's RangeArg): `end` nil means open
/// ("5:" or "-1", which is everything).
public struct MPDRange: Sendable, Equatable, Hashable {
    public var start: UInt32
    public var end: UInt32?

    public init(start: UInt32, end: UInt32?) {
        self.start = start
        self.end = end
    }

    /// "-1": every position.
    public static let all = MPDRange(start: 0, end: nil)
    /// A single position "N" (N..<N+1).
    public static func single(_ n: UInt32) -> MPDRange { MPDRange(start: n, end: n + 1) }
}

/// Parsers for one argument. Each throws `MPDError(.arg, "<what>: <value>")`
/// with MPD's words; none blocks.
public enum MPDArgument {
    /// An unsigned 32-bit integer (ParseCommandArgU32): `Integer expected: x`.
    /// As MPD, a larger value wraps (strtoul, then cast).
    public static func uint32(_ s: String) throws(MPDError) -> UInt32 {
        let (value, ok) = cULong(s)
        guard ok else { throw bad("Integer expected", s) }
        return UInt32(truncatingIfNeeded: value)
    }

    /// An unsigned integer at most `max` (ParseCommandArgUnsigned):
    /// `Integer expected: x`, `Number too large: x`.
    public static func unsigned(_ s: String, max: UInt32 = .max) throws(MPDError) -> UInt32 {
        let (value, ok) = cULong(s)
        guard ok else { throw bad("Integer expected", s) }
        guard value <= UInt(max) else { throw bad("Number too large", s) }
        return UInt32(value)
    }

    /// A signed integer in `range` (ParseCommandArgInt): `Integer expected: x`,
    /// and `Number too large: x` outside the range (below it too, as MPD says).
    public static func int(_ s: String, in range: ClosedRange<Int32> = .min ... .max) throws(MPDError) -> Int32 {
        let (value, ok) = cLong(s)
        guard ok else { throw bad("Integer expected", s) }
        guard value >= Int(range.lowerBound) && value <= Int(range.upperBound) else { throw bad("Number too large", s) }
        return Int32(value)
    }

    /// `N`, `START:END`, `START:` or `-1` (ParseCommandArgRange):
    /// `Integer or range expected: x`, `Number is negative: x`,
    /// `Number too large: x`, `Malformed range: x` (end before start).
    public static func range(_ s: String) throws(MPDError) -> MPDRange {
        let result = s.withCString { text -> Result<MPDRange, MPDError> in
            var end: UnsafeMutablePointer<CChar>?
            let value = strtol(text, &end, 10)
            guard let stop = end, stop != UnsafeMutablePointer(mutating: text), stop.pointee == 0 || stop.pointee == 0x3A else {
                return .failure(bad("Integer or range expected", s))
            }
            if value == -1 && stop.pointee == 0 { return .success(.all) }
            guard value >= 0 else { return .failure(bad("Number is negative", s)) }
            guard value <= Int(Int32.max) else { return .failure(bad("Number too large", s)) }
            let start = UInt32(value)
            guard stop.pointee == 0x3A else { return .success(.single(start)) }
            let second = stop + 1
            var end2: UnsafeMutablePointer<CChar>?
            let value2 = strtol(second, &end2, 10)
            guard let stop2 = end2, stop2.pointee == 0 else { return .failure(bad("Integer or range expected", s)) }
            if stop2 == second { return .success(MPDRange(start: start, end: nil)) }
            guard value2 >= 0 else { return .failure(bad("Number is negative", s)) }
            guard value2 <= Int(Int32.max) else { return .failure(bad("Number too large", s)) }
            guard start <= UInt32(value2) else { return .failure(bad("Malformed range", s)) }
            return .success(MPDRange(start: start, end: UInt32(value2)))
        }
        return try result.get()
    }

    /// `0` or `1` (ParseCommandArgBool): `Boolean (0/1) expected: x`.
    public static func bool(_ s: String) throws(MPDError) -> Bool {
        let (value, ok) = cLong(s)
        guard ok, value == 0 || value == 1 else { throw bad("Boolean (0/1) expected", s) }
        return value == 1
    }

    /// A float as strtof reads it (ParseCommandArgFloat): `Float expected: x`.
    public static func float(_ s: String) throws(MPDError) -> Float {
        let result = s.withCString { text -> Float? in
            var end: UnsafeMutablePointer<CChar>?
            let value = strtof(text, &end)
            guard let stop = end, stop != UnsafeMutablePointer(mutating: text), stop.pointee == 0 else { return nil }
            return value
        }
        guard let value = result else { throw bad("Float expected", s) }
        return value
    }

    /// Seconds ≥ 0 (ParseCommandArgSongTime): `Float expected: x`,
    /// `Negative value not allowed: x`.
    public static func songTime(_ s: String) throws(MPDError) -> Double {
        let value = try float(s)
        guard !(value < 0) else { throw bad("Negative value not allowed", s) }
        return Double(value)
    }

    /// Seconds, possibly negative (ParseCommandArgSignedSongTime).
    public static func signedSongTime(_ s: String) throws(MPDError) -> Double {
        Double(try float(s))
    }

    /// `what: value`, ACK ARG (MPD's MakeArgError; its 256-byte buffer cuts long values).
    static func bad(_ what: String, _ value: String) -> MPDError {
        var text = "\(what): \(value)"
        if text.utf8.count > 255 { text = String(decoding: text.utf8.prefix(255), as: UTF8.self) }
        return MPDError(.arg, text)
    }

    /// strtol over the whole string: (value, whole string was a number).
    static func cLong(_ s: String) -> (Int, Bool) {
        s.withCString { text in
            var end: UnsafeMutablePointer<CChar>?
            let value = strtol(text, &end, 10)
            guard let stop = end else { return (0, false) }
            return (value, stop != UnsafeMutablePointer(mutating: text) && stop.pointee == 0)
        }
    }

    /// strtoul over the whole string (a "-1" wraps to the largest value, as in C).
    static func cULong(_ s: String) -> (UInt, Bool) {
        s.withCString { text in
            var end: UnsafeMutablePointer<CChar>?
            let value = strtoul(text, &end, 10)
            guard let stop = end else { return (0, false) }
            return (value, stop != UnsafeMutablePointer(mutating: text) && stop.pointee == 0)
        }
    }
}

extension MPDError {
    /// `Bad song index` (ACK ARG): a queue position that does not exist.
    public static let badSongIndex = MPDError(.arg, "Bad song index")
    /// `No such song` (ACK NO_EXIST): a queue id that does not exist.
    public static let noSuchSong = MPDError(.noExist, "No such song")
}
