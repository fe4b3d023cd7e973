// The control protocol's envelope: reading a request line, writing replies
// — specs/control-protocol.md §Envelope — nothing here touches the player.
import HarmoniaCore

/// Why a request failed: a `CoreError` category, `invalidRequest` or `unknownCommand`.
public struct ControlFailure: Error {
    public let code: String
    public let message: String

    public static func invalidRequest(_ message: String) -> ControlFailure { ControlFailure(code: "invalidRequest", message: message) }
    public static func unknownCommand(_ name: String) -> ControlFailure {
        ControlFailure(code: "unknownCommand", message: "unknown command '\(name.count > 60 ? String(name.prefix(57)) + "..." : name)'")
    }
    public init(code: String, message: String) {
        self.code = code
        self.message = message
    }
    public init(_ error: CoreError) {
        self.init(code: error.category.rawValue, message: error.message)
    }
}

/// One well-formed request: `{"message_id": ID, "command": NAME, "args": {...}}`.
public struct ControlRequest: Sendable {
    /// An integer or a string, echoed in the reply.
    public let id: JSONValue
    public let command: String
    public let args: ControlArgs
}

public enum ControlProtocol {
    /// Longer lines are refused (invalidRequest) without being parsed.
    public static let maxLineBytes = 1 << 20
    /// Deeper nesting of arrays and objects is refused before parsing.
    public static let maxDepth = 32

    /// Reads one line (without its newline). On failure, the id to reply
    /// with (null when it could not be read) and why.
    public enum Parsed {
        case request(ControlRequest)
        case invalid(id: JSONValue, ControlFailure)
    }

    public static func parse(_ line: [UInt8]) -> Parsed {
        func fail(_ id: JSONValue, _ message: String) -> Parsed {
            .invalid(id: id, .invalidRequest(message))
        }
        guard line.count <= maxLineBytes else { return fail(.null, "the line is longer than \(maxLineBytes) bytes") }
        guard nestingDepth(line) <= maxDepth else { return fail(.null, "JSON nested deeper than \(maxDepth) levels") }
        let value: JSONValue
        do {
            value = try JSONValue.parse(line)
        } catch {
            return fail(.null, "not valid JSON (one object per line, UTF-8)")
        }
        guard case .object = value else { return fail(.null, "a request is a JSON object") }
        let id: JSONValue
        switch value["message_id"] {
        case .int(let i)?: id = .int(i)
        case .string(let s)?: id = .string(s)
        case .double(let d)? where d == d.rounded() && abs(d) < 9e15: id = .int(Int64(d))
        case nil: return fail(.null, "'message_id' is missing")
        default: return fail(.null, "'message_id' must be an integer or a string")
        }
        guard let commandValue = value["command"] else { return fail(id, "'command' is missing") }
        guard case .string(let command) = commandValue else { return fail(id, "'command' must be a string") }
        let args: JSONValue
        switch value["args"] {
        case nil, .null?: args = .object([])
        case .object(let members)?: args = .object(members)
        default: return fail(id, "'args' must be an object")
        }
        return .request(ControlRequest(id: id, command: command, args: ControlArgs(args)))
    }

    /// The deepest nesting of `[` and `{` outside strings.
    public static func nestingDepth(_ bytes: [UInt8]) -> Int {
        var depth = 0, deepest = 0, inString = false, escaped = false
        for byte in bytes {
            if inString {
                if escaped { escaped = false }
                else if byte == UInt8(ascii: "\\") { escaped = true }
                else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                deepest = max(deepest, depth)
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return deepest
    }

    /// `{"message_id": ID, "result": RESULT}`.
    public static func reply(_ id: JSONValue, result: JSONValue) -> JSONValue {
        .object([("message_id", id), ("result", result)])
    }

    /// `{"message_id": ID, "error_code": CODE, "error": MESSAGE}`.
    public static func reply(_ id: JSONValue, failure: ControlFailure) -> JSONValue {
        .object([("message_id", id), ("error_code", .string(failure.code)), ("error", .string(failure.message))])
    }
}

/// A request's `args`, read with typed accessors that fail as invalidRequest.
public struct ControlArgs: Sendable {
    public let value: JSONValue

    public init(_ value: JSONValue) { self.value = value }

    public func has(_ key: String) -> Bool { value[key] != nil && value[key] != .null }

    public func number(_ key: String) throws(ControlFailure) -> Double {
        guard let v = value[key], v != .null else { throw .invalidRequest("'\(key)' is missing") }
        guard let n = v.number else { throw .invalidRequest("'\(key)' must be a number; got \(v.brief)") }
        guard n.isFinite else { throw ControlFailure(.invalidArgument("'\(key)' must be finite")) }
        return n
    }

    public func optionalNumber(_ key: String) throws(ControlFailure) -> Double? {
        has(key) ? try number(key) : nil
    }

    public func int(_ key: String) throws(ControlFailure) -> Int {
        guard let v = value[key], v != .null else { throw .invalidRequest("'\(key)' is missing") }
        switch v {
        case .int(let i) where i >= Int64(Int32.min) && i <= Int64(Int32.max): return Int(i)
        case .int: throw ControlFailure(.invalidArgument("'\(key)' is out of range"))
        case .double(let d) where d == d.rounded() && abs(d) <= Double(Int32.max): return Int(d)
        default: throw .invalidRequest("'\(key)' must be an integer; got \(v.brief)")
        }
    }

    public func optionalInt(_ key: String) throws(ControlFailure) -> Int? {
        has(key) ? try int(key) : nil
    }

    public func string(_ key: String) throws(ControlFailure) -> String {
        guard let v = value[key], v != .null else { throw .invalidRequest("'\(key)' is missing") }
        guard case .string(let s) = v else { throw .invalidRequest("'\(key)' must be a string; got \(v.brief)") }
        return s
    }

    public func optionalString(_ key: String) throws(ControlFailure) -> String? {
        has(key) ? try string(key) : nil
    }

    public func bool(_ key: String) throws(ControlFailure) -> Bool {
        guard let v = value[key], v != .null else { throw .invalidRequest("'\(key)' is missing") }
        guard case .bool(let b) = v else { throw .invalidRequest("'\(key)' must be true or false; got \(v.brief)") }
        return b
    }
}
