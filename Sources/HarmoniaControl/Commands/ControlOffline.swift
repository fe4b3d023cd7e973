// The offline store over the control protocol: offline/add, offline/list,
// offline/remove and their events — specs/control-protocol.md §Offline
import Foundation
import HarmoniaCore

/// The `offline/*` commands. Main loop: `add` only queues (the download runs
/// on `OfflineDownloads`' thread); `list` and `remove` are one index read or
/// write each.
public enum ControlOffline {
    public static let commands = ["offline/add", "offline/list", "offline/remove"]

    /// Runs an `offline/*` command on `downloads` (nil: the player has no store).
    public static func execute(_ command: String, _ args: ControlArgs, downloads: OfflineDownloads?) throws -> JSONValue {
        guard let downloads else {
            throw CoreError.unsupported("\(command): this player has no offline store (give --store DIR, or run serve)")
        }
        switch command {
        case "offline/add":
            let urls: [String]
            if args.has("urls") {
                guard case .array(let values)? = args.value["urls"] else { throw ControlFailure.invalidRequest("'urls' must be an array of strings") }
                urls = try values.map { value throws(ControlFailure) -> String in
                    guard case .string(let url) = value else { throw ControlFailure.invalidRequest("'urls' must be an array of strings") }
                    return url
                }
                if args.has("url") { throw ControlFailure.invalidRequest("give 'url' or 'urls', not both") }
            } else {
                urls = [try args.string("url")]
            }
            let queued = try downloads.add(urls: urls, key: try args.optionalString("key"))
            return .object([("queued", .array(queued.map { .object([("key", .string($0.key)), ("url", .string($0.url))]) }))])
        case "offline/list":
            return .object([("entries", .array(try downloads.port.list().map(copy)))])
        case "offline/remove":
            let name: String
            switch (try args.optionalString("key"), try args.optionalString("url")) {
            case (let key?, nil): name = key
            case (nil, let url?): name = url
            case (nil, nil): throw ControlFailure.invalidRequest("'key' is missing")
            default: throw ControlFailure.invalidRequest("give 'key' or 'url', not both")
            }
            return .object([("removed", EventJSON.strings(try downloads.remove(named: name)))])
        default:
            throw ControlFailure.unknownCommand(command)
        }
    }

    /// An entry as `offline list --json` and `offline/list` show it.
    public static func copy(_ copy: OfflineCopy) -> JSONValue {
        func text(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        return .object([
            ("key", .string(copy.key)), ("url", .string(copy.url)),
            ("size", copy.size.map(JSONValue.int) ?? .null), ("held", .int(copy.held)),
            ("complete", .bool(copy.complete)), ("pinned", .bool(copy.pinned)),
            ("added", .string(isoTime(copy.added))), ("last_played", copy.lastPlayed.map { .string(isoTime($0)) } ?? .null),
            ("etag", text(copy.etag)), ("last_modified", text(copy.lastModified)),
            ("sha256", text(copy.sha256)), ("file", .string(copy.file)), ("damaged", .bool(copy.damaged)),
        ])
    }

    /// `{"event": NAME, "data": {...}}` for an offline event.
    public static func line(_ event: OfflineEvent) -> JSONValue {
        let data: JSONValue = switch event {
        case .progress(let key, let url, let bytes, let total, let rate):
            .object([("key", .string(key)), ("url", .string(url)), ("bytes", .int(bytes)), ("total", .int(total)),
                     ("rate", EventJSON.number(rate.rounded()))])
        case .done(let copy):
            .object([("key", .string(copy.key)), ("url", .string(copy.url)), ("size", copy.size.map(JSONValue.int) ?? .null)])
        case .failed(let key, let url, let error):
            .object([("key", .string(key)), ("url", .string(url)), ("category", .string(error.category.rawValue)),
                     ("message", .string(Console.oneLine(error.message)))])
        case .removed(let keys):
            .object([("keys", EventJSON.strings(keys))])
        }
        return .object([("event", .string(event.name)), ("data", data)])
    }

    /// Seconds since 1970 as ISO 8601 UTC.
    public static func isoTime(_ seconds: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: seconds))
    }
}
