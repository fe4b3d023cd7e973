// A strict, small XML reader for what arrives from the network (SOAP
// bodies, DIDL-Lite metadata) — specs/upnp.md §Security
//
// No document type, no entities beyond XML's five and character
// references: a `<!DOCTYPE` (or any `<!` but a comment or CDATA) is refused
// outright, so there is nothing to expand and nothing external to fetch
// (no XXE, no billion laughs). Depth and element count are bounded.

/// One element: its local name, namespace URI (from the `xmlns`
/// declarations in scope), attributes by qualified name, children and the
/// text directly inside it.
public struct XMLElement: Sendable, Equatable {
    public var name: String
    public var namespace: String?
    public var attributes: [String: String] = [:]
    public var children: [XMLElement] = []
    public var text = ""

    /// The first child with local name `name`.
    public func child(_ name: String) -> XMLElement? { children.first { $0.name == name } }

    /// The first descendant (depth first) with local name `name`.
    public func descendant(_ name: String) -> XMLElement? {
        for element in children {
            if element.name == name { return element }
            if let found = element.descendant(name) { return found }
        }
        return nil
    }
}

/// Why a document was refused; `description` is one line.
public struct XMLRefusal: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

public enum UPnPXML {
    /// Parses one document of UTF-8 `bytes`.
    /// - Throws: `XMLRefusal` for a DOCTYPE or other markup declaration, an
    ///   unknown entity, malformed markup, more than `maxDepth` nested or
    ///   `maxElements` elements in all. Never traps, whatever the bytes.
    public static func parse(_ bytes: [UInt8], maxDepth: Int = 32, maxElements: Int = 4096) throws(XMLRefusal) -> XMLElement {
        var reader = Reader(bytes: bytes, maxDepth: maxDepth, maxElements: maxElements)
        return try reader.document()
    }

    /// `text` with `& < > " '` escaped, for element text and attribute values.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}

private struct Reader {
    let bytes: [UInt8]
    let maxDepth: Int
    let maxElements: Int
    var i = 0
    var elements = 0

    init(bytes: [UInt8], maxDepth: Int, maxElements: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
        self.maxElements = maxElements
    }

    mutating func document() throws(XMLRefusal) -> XMLElement {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        try skipMisc()
        guard i < bytes.count, bytes[i] == UInt8(ascii: "<") else { throw XMLRefusal("XML: no root element") }
        let root = try element(depth: 1, scope: ["xml": "http://www.w3.org/XML/1998/namespace"])
        try skipMisc()
        guard i == bytes.count else { throw XMLRefusal("XML: content after the root element") }
        return root
    }

    /// Whitespace, processing instructions and comments between elements.
    mutating func skipMisc() throws(XMLRefusal) {
        while i < bytes.count {
            if isSpace(bytes[i]) { i += 1; continue }
            if starts("<?") { try skip(past: "?>"); continue }
            if starts("<!--") { try skip(past: "-->"); continue }
            if starts("<!") { throw XMLRefusal("XML: document type declarations and entities are refused") }
            return
        }
    }

    mutating func element(depth: Int, scope: [String: String]) throws(XMLRefusal) -> XMLElement {
        guard depth <= maxDepth else { throw XMLRefusal("XML: nested deeper than \(maxDepth)") }
        elements += 1
        guard elements <= maxElements else { throw XMLRefusal("XML: more than \(maxElements) elements") }
        i += 1  // "<"
        let qualified = try name()
        var attributes: [String: String] = [:]
        var selfClosing = false
        while true {
            skipSpaces()
            guard i < bytes.count else { throw XMLRefusal("XML: unterminated tag <\(qualified)>") }
            if bytes[i] == UInt8(ascii: ">") { i += 1; break }
            if starts("/>") { i += 2; selfClosing = true; break }
            let attribute = try name()
            skipSpaces()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "=") else { throw XMLRefusal("XML: attribute \(attribute) without a value") }
            i += 1
            skipSpaces()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\"") || bytes[i] == UInt8(ascii: "'") else {
                throw XMLRefusal("XML: attribute \(attribute) not quoted")
            }
            let quote = bytes[i]
            i += 1
            let start = i
            while i < bytes.count && bytes[i] != quote {
                if bytes[i] == UInt8(ascii: "<") { throw XMLRefusal("XML: '<' in attribute \(attribute)") }
                i += 1
            }
            guard i < bytes.count else { throw XMLRefusal("XML: unterminated attribute \(attribute)") }
            guard attributes[attribute] == nil else { throw XMLRefusal("XML: attribute \(attribute) given twice") }
            attributes[attribute] = try decode(bytes[start..<i])
            i += 1
        }
        var inner = scope
        for (key, value) in attributes {
            if key == "xmlns" { inner[""] = value } else if key.hasPrefix("xmlns:") { inner[String(key.dropFirst(6))] = value }
        }
        let (prefix, local) = split(qualified)
        var node = XMLElement(name: local, namespace: inner[prefix ?? ""], attributes: attributes)
        if selfClosing { return node }
        var text: [UInt8] = []
        while true {
            guard i < bytes.count else { throw XMLRefusal("XML: <\(qualified)> not closed") }
            if bytes[i] != UInt8(ascii: "<") {
                let start = i
                while i < bytes.count && bytes[i] != UInt8(ascii: "<") { i += 1 }
                text += Array(try decode(bytes[start..<i]).utf8)
                continue
            }
            if starts("</") {
                i += 2
                let closing = try name()
                skipSpaces()
                guard closing == qualified, i < bytes.count, bytes[i] == UInt8(ascii: ">") else {
                    throw XMLRefusal("XML: <\(qualified)> closed by </\(closing)>")
                }
                i += 1
                node.text = String(decoding: text, as: UTF8.self)
                return node
            }
            if starts("<![CDATA[") {
                i += 9
                let start = i
                try skip(past: "]]>")
                text += bytes[start..<(i - 3)]
                continue
            }
            if starts("<!--") { try skip(past: "-->"); continue }
            if starts("<?") { try skip(past: "?>"); continue }
            if starts("<!") { throw XMLRefusal("XML: markup declarations are refused") }
            node.children.append(try element(depth: depth + 1, scope: inner))
        }
    }

    /// An XML name (letters, digits, `_ - . :` and any non-ASCII byte).
    mutating func name() throws(XMLRefusal) -> String {
        let start = i
        while i < bytes.count {
            let c = bytes[i]
            let ok = c >= 0x80 || (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
                || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9")) || c == UInt8(ascii: "_") || c == UInt8(ascii: "-")
                || c == UInt8(ascii: ".") || c == UInt8(ascii: ":")
            guard ok else { break }
            i += 1
        }
        guard i > start, i - start <= 256 else { throw XMLRefusal("XML: a name is expected at byte \(start)") }
        return String(decoding: bytes[start..<i], as: UTF8.self)
    }

    /// Character data with the five predefined entities and character references decoded.
    func decode(_ slice: ArraySlice<UInt8>) throws(XMLRefusal) -> String {
        guard slice.contains(UInt8(ascii: "&")) else { return String(decoding: slice, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(slice.count)
        var j = slice.startIndex
        while j < slice.endIndex {
            guard slice[j] == UInt8(ascii: "&") else { out.append(slice[j]); j += 1; continue }
            guard let semicolon = slice[j...].prefix(12).firstIndex(of: UInt8(ascii: ";")) else {
                throw XMLRefusal("XML: '&' that starts no entity")
            }
            let entity = String(decoding: slice[(j + 1)..<semicolon], as: UTF8.self)
            switch entity {
            case "lt": out.append(UInt8(ascii: "<"))
            case "gt": out.append(UInt8(ascii: ">"))
            case "amp": out.append(UInt8(ascii: "&"))
            case "quot": out.append(UInt8(ascii: "\""))
            case "apos": out.append(UInt8(ascii: "'"))
            default:
                let hex = entity.hasPrefix("#x") || entity.hasPrefix("#X")
                guard entity.hasPrefix("#"), let code = UInt32(entity.dropFirst(hex ? 2 : 1), radix: hex ? 16 : 10),
                      let scalar = Unicode.Scalar(code), code != 0 else {
                    throw XMLRefusal("XML: entity &\(entity.prefix(10)); is refused (only XML's five and character references)")
                }
                out += Array(String(Character(scalar)).utf8)
            }
            j = semicolon + 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    func split(_ qualified: String) -> (prefix: String?, local: String) {
        guard let colon = qualified.firstIndex(of: ":") else { return (nil, qualified) }
        return (String(qualified[..<colon]), String(qualified[qualified.index(after: colon)...]))
    }

    func starts(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - i >= count else { return false }
        let p = literal.utf8Start
        for k in 0..<count where bytes[i + k] != p[k] { return false }
        return true
    }

    mutating func skip(past literal: StaticString) throws(XMLRefusal) {
        while i < bytes.count {
            if starts(literal) { i += literal.utf8CodeUnitCount; return }
            i += 1
        }
        throw XMLRefusal("XML: unterminated \(literal)")
    }

    mutating func skipSpaces() { while i < bytes.count && isSpace(bytes[i]) { i += 1 } }

    func isSpace(_ c: UInt8) -> Bool { c == 0x20 || c == 0x09 || c == 0x0A || c == 0x0D }
}
