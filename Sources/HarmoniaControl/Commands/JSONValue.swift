// A small JSON value with ordered keys, for one-object-per-line output
// (info --json now; events and the control protocol later), and read back
// from JSON text (test vectors).
import Foundation

/// A JSON value whose objects keep their keys in insertion order.
public enum JSONValue: Equatable, Sendable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object([(String, JSONValue)])

    public static func == (a: JSONValue, b: JSONValue) -> Bool { a.serialized == b.serialized }

    /// Compact JSON text on one line.
    public var serialized: String {
        var out = ""
        write(to: &out)
        return out
    }

    private func write(to out: inout String) {
        switch self {
        case .string(let s): Self.writeString(s, to: &out)
        case .int(let i): out += String(i)
        case .double(let d): out += d.isFinite ? (d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) + ".0" : "\(d)") : "null"
        case .bool(let b): out += b ? "true" : "false"
        case .null: out += "null"
        case .array(let items):
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                Self.writeString(key, to: &out)
                out += ":"
                value.write(to: &out)
            }
            out += "}"
        }
    }

    private static func writeString(_ s: String, to out: inout String) {
        out += "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}

// MARK: - Reading (test vectors)

extension JSONValue: Decodable {
    /// Any JSON text. Object keys come back sorted (JSON gives them no order
    /// a reader may rely on).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let i = try? c.decode(Int64.self) {
            self = .int(i)
        } else if let d = try? c.decode(Double.self) {
            self = .double(d)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONValue].self) {
            self = .array(a)
        } else {
            let o = try c.decode([String: JSONValue].self)
            self = .object(o.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        }
    }

    /// Parses UTF-8 JSON text.
    public static func parse(_ data: [UInt8]) throws -> JSONValue {
        try JSONDecoder().decode(JSONValue.self, from: Data(data))
    }

    /// The member `key` of an object; nil for a missing key or a non-object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let members) = self else { return nil }
        return members.first { $0.0 == key }?.1
    }

    public var string: String? { if case .string(let s) = self { s } else { nil } }

    /// A number, integer or not.
    public var number: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }

    public var array: [JSONValue]? { if case .array(let a) = self { a } else { nil } }
    public var isNull: Bool { self == .null }

    /// The value as it was written, for messages.
    public var brief: String {
        let text = serialized
        return text.count > 60 ? String(text.prefix(57)) + "..." : text
    }
}
