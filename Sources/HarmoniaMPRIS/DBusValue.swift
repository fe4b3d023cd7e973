// The D-Bus values MPRIS needs, in Swift — specs/mpris.md §Types
//
// Pure Swift: DBusCalls.swift turns these into libdbus appends and back.

/// A D-Bus value of the types the MPRIS interfaces use: the basic types,
/// variants, arrays and string-keyed dictionaries (`a{sv}`).
indirect enum DBusValue: Equatable, Sendable {
    case boolean(Bool)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(String)
    case variant(DBusValue)
    /// An array whose elements all have `element` as signature (kept for empty arrays).
    case array(element: String, [DBusValue])
    /// `a{sv}`: keys in the order given.
    case dictionary([DBusDictEntry])

    /// `as`.
    static func strings(_ values: [String]) -> DBusValue { .array(element: "s", values.map(DBusValue.string)) }

    /// The value's D-Bus type signature (`s`, `a{sv}`, …).
    var signature: String {
        switch self {
        case .boolean: "b"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .variant: "v"
        case .array(let element, _): "a" + element
        case .dictionary: "a{sv}"
        }
    }

    /// The type code of a single complete type (its signature's first letter).
    var typeCode: Int32 { Int32(signature.utf8.first!) }

    var stringValue: String? { if case .string(let s) = self { s } else { nil } }
    var objectPathValue: String? { if case .objectPath(let s) = self { s } else { nil } }
    var int64Value: Int64? { if case .int64(let v) = self { v } else { nil } }
    var booleanValue: Bool? { if case .boolean(let v) = self { v } else { nil } }
    var doubleValue: Double? { if case .double(let v) = self { v } else { nil } }
    var variantValue: DBusValue? { if case .variant(let v) = self { v } else { nil } }

    /// The entry's value for `key` in an `a{sv}` (unwrapped from its variant).
    subscript(key: String) -> DBusValue? {
        guard case .dictionary(let entries) = self else { return nil }
        return entries.first { $0.key == key }?.value
    }
}

/// One entry of an `a{sv}` dictionary; `value` is wrapped in a variant on the wire.
struct DBusDictEntry: Equatable, Sendable {
    let key: String
    let value: DBusValue
}

/// Type codes: a single ASCII letter each (the C macros are cast expressions
/// Swift does not import).
enum DBusTypeCode {
    static let invalid: Int32 = 0
    static let boolean = code("b"), int32 = code("i"), uint32 = code("u"), int64 = code("x"), uint64 = code("t")
    static let double = code("d"), string = code("s"), objectPath = code("o"), signature = code("g")
    static let variant = code("v"), array = code("a"), dictEntry = code("e"), structure = code("r")
    static let byte = code("y"), int16 = code("n"), uint16 = code("q"), unixFD = code("h")

    private static func code(_ letter: Unicode.Scalar) -> Int32 { Int32(letter.value) }
}
