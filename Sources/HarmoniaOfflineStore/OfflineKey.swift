// The key that names a store entry — specs/offline.md §Keys
//
// One function derives every key (offline add, play's stream cache, serve,
// the control protocol's queue/add), so the same URL always finds the same
// entry whoever asks.
import HarmoniaCore
import Synchronization

/// Deriving the key of a store entry. Pure functions; threads: any.
public enum OfflineKey {
    /// The key of `url`'s entry.
    ///
    /// - `explicit` (`--key`, `queue/add`'s `"key"`) names the entry outright;
    ///   `dropping` is then not applied.
    /// - Otherwise the key is the URL exactly as given, less the query
    ///   parameters whose name matches one of `dropping` (`*` matches any run
    ///   of characters, so `X-Amz-*`; names compared ASCII case-insensitively,
    ///   as given, not percent-decoded). The remaining parameters keep their
    ///   order and spelling; a `?` left with none is dropped too; a fragment
    ///   stays.
    /// - Throws: `invalidArgument` for an empty explicit key.
    public static func make(url: String, explicit: String? = nil, dropping: [String] = []) throws(CoreError) -> String {
        if let explicit {
            guard !explicit.isEmpty else { throw .invalidArgument("an empty key names no entry; give --key a non-empty text") }
            return explicit
        }
        guard !dropping.isEmpty, let question = url.firstIndex(of: "?") else { return url }
        let afterQuery = url[url.index(after: question)...]
        let fragmentStart = afterQuery.firstIndex(of: "#") ?? url.endIndex
        let query = url[url.index(after: question)..<fragmentStart]
        let kept = query.split(separator: "&", omittingEmptySubsequences: false).filter { parameter in
            let name = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
            return !dropping.contains { pattern in matches(String(name), pattern: pattern) }
        }
        let base = url[..<question]
        let rest = kept.isEmpty ? "" : "?" + kept.joined(separator: "&")
        return String(base) + rest + String(url[fragmentStart...])
    }

    /// Whether the parameter `name` matches `pattern` (`*`: any run of
    /// characters, none included; ASCII letters compared case-insensitively).
    public static func matches(_ name: String, pattern: String) -> Bool {
        let text = Array(name.utf8).map(lowerASCII)
        let parts = pattern.utf8.split(separator: UInt8(ascii: "*"), omittingEmptySubsequences: false)
            .map { $0.map(lowerASCII) }
        guard parts.count > 1 else { return text == parts[0] }
        // Anchored first and last pieces; the middle ones found greedily left to right.
        let first = parts[0], last = parts[parts.count - 1]
        guard text.count >= first.count + last.count, text.starts(with: first),
              Array(text.suffix(last.count)) == last else { return false }
        var at = first.count
        let end = text.count - last.count
        for middle in parts.dropFirst().dropLast() where !middle.isEmpty {
            guard let found = find(middle, in: text, from: at, before: end) else { return false }
            at = found + middle.count
        }
        return true
    }

    private static func lowerASCII(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte + 0x20 : byte }

    /// The first index ≥ `from` where `needle` starts and ends by `before`.
    private static func find(_ needle: [UInt8], in text: [UInt8], from: Int, before: Int) -> Int? {
        guard before - from >= needle.count else { return nil }
        for start in from...(before - needle.count) where text[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}

/// The key rules of one player: the parameters `--cache-key-drop` leaves
/// out, and the keys given outright for single URLs (`--key`, `queue/add`'s
/// `"key"`). Threads: any (a lock guards the named keys).
public final class OfflineKeyPolicy: Sendable {
    /// Query-parameter patterns left out of every derived key.
    public let dropping: [String]
    private let named = Mutex<[String: String]>([:])

    public init(dropping: [String] = []) { self.dropping = dropping }

    /// From now on `url` is the entry `key` (the last naming wins).
    /// - Throws: `invalidArgument` for an empty key.
    public func name(url: String, key: String) throws(CoreError) {
        let key = try OfflineKey.make(url: url, explicit: key)
        named.withLock { $0[url] = key }
    }

    /// The key named for `url` with `name(url:key:)`, if any.
    public func namedKey(for url: String) -> String? { named.withLock { $0[url] } }

    /// The key of `url`: the one named for it, else `OfflineKey.make(url:dropping:)`.
    public func key(for url: String) -> String {
        if let key = named.withLock({ $0[url] }) { return key }
        return (try? OfflineKey.make(url: url, dropping: dropping)) ?? url
    }
}
