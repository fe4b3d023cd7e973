// ID3v2.2, 2.3 and 2.4 text lists — specs/ports.md §TagReaderPort (Value lists)
//
// A text frame holds one or more strings separated by NUL (id3v2.4.0-
// structure §4.2; taggers write v2.3 lists the same way). TXXX frames carry
// the MusicBrainz identifiers by description, UFID the recording id.
// ID3v2.3's TCON keeps only its first string, as MPD 0.23 (libid3tag) reads it.

/// Pure functions over a byte source; any thread.
enum ID3v2ListParser {
    /// The lists of the ID3v2 tag at the start of `source`, and the offset
    /// where the tag ends (where the audio, or a "fLaC" marker, begins).
    static func read(from source: any TagByteSource) -> (NativeTagLists, end: Int64)? {
        guard let header = source.bytes(at: 0, count: 10), header.starts(with: Array("ID3".utf8)) else { return nil }
        let major = header[3]
        let flags = header[5]
        guard (2...4).contains(major), header[6..<10].allSatisfy({ $0 < 0x80 }) else { return nil }
        let size = Int(syncsafe(header[6..<10]))
        let end = Int64(10 + size + (major == 4 && flags & 0x10 != 0 ? 10 : 0))
        guard var body = source.bytes(at: 10, count: size) else { return nil }
        if flags & 0x80 != 0, major < 4 { body = resynchronised(body) }
        var cursor = ByteCursor(body)
        if flags & 0x40 != 0, major >= 3 {
            guard let extended = cursor.u32be() else { return nil }
            let skip = major == 4 ? Int(syncsafe(UInt32(extended))) - 4 : Int(extended)
            guard skip >= 0, cursor.skip(skip) else { return nil }
        }
        var lists = NativeTagLists(format: .id3v2)
        frames(of: &cursor, major: major) { id, data in
            add(frame: id, data: data, major: major, to: &lists)
        }
        return (lists, end)
    }

    /// Calls `body` with each frame's id and (decoded) data, in tag order;
    /// stops at padding, at the end, or at a malformed frame.
    static func frames(of cursor: inout ByteCursor, major: UInt8, _ body: (String, [UInt8]) -> Void) {
        let idLength = major == 2 ? 3 : 4
        let headerLength = major == 2 ? 6 : 10
        while cursor.remaining >= headerLength {
            guard let idBytes = cursor.take(idLength), isFrameID(idBytes), let id = idBytes.asciiText else { return }
            var size: Int
            var frameFlags: UInt8 = 0
            if major == 2 {
                size = Int(cursor.take(3)!.bigEndianValue)
            } else {
                let raw = cursor.u32be()!
                size = Int(major == 4 ? syncsafe(raw) : raw)
                if major == 4, raw & 0x8080_8080 == 0, !isFrameBoundary(cursor.bytes, cursor.position + 2 + size),
                   isFrameBoundary(cursor.bytes, cursor.position + 2 + Int(raw)) {
                    size = Int(raw)  // a v2.4 writer that wrote a plain size (iTunes did)
                }
                frameFlags = cursor.take(2)!.last!
            }
            guard var data = cursor.take(size).map(Array.init) else { return }
            if major == 4 {
                if frameFlags & 0x0C != 0 { continue }  // compressed or encrypted
                var prefix = 0
                if frameFlags & 0x40 != 0 { prefix += 1 }  // group id
                if frameFlags & 0x01 != 0 { prefix += 4 }  // data length indicator
                guard prefix <= data.count else { continue }
                data.removeFirst(prefix)
                if frameFlags & 0x02 != 0 { data = resynchronised(data) }
            } else if major == 3 {
                if frameFlags & 0xC0 != 0 { continue }  // compressed or encrypted
                if frameFlags & 0x20 != 0 {
                    guard !data.isEmpty else { continue }
                    data.removeFirst()
                }
            }
            body(id, data)
        }
    }

    /// Adds the values of a frame that holds a list field.
    static func add(frame id: String, data: [UInt8], major: UInt8, to lists: inout NativeTagLists) {
        switch id {
        case "TPE1", "TP1": addText(data, key: "ARTIST", to: &lists)
        case "TPE2", "TP2": addText(data, key: "ALBUMARTIST", to: &lists)
        case "TCOM", "TCM": addText(data, key: "COMPOSER", to: &lists)
        case "TCON", "TCO": addText(data, key: "GENRE", firstOnly: major < 4, to: &lists)
        case "TXXX", "TXX":
            guard let encoding = data.first else { return }
            let strings = textStrings(Array(data.dropFirst()), encoding: encoding)
            guard strings.count >= 2, let key = NativeTagLists.canonicalKey(musicBrainzDescription: strings[0]) else { return }
            for value in strings.dropFirst() { lists.add(canonical: key, value) }
        case "UFID", "UFI":
            guard let nul = data.firstIndex(of: 0), utf8Text(data[..<nul]) == "http://musicbrainz.org" else { return }
            lists.add(canonical: "MUSICBRAINZ_TRACKID", utf8Text(data[(nul + 1)...]))
        default:
            return
        }
    }

    private static func addText(_ data: [UInt8], key: String, firstOnly: Bool = false, to lists: inout NativeTagLists) {
        guard let encoding = data.first else { return }
        let strings = textStrings(Array(data.dropFirst()), encoding: encoding)
        for value in firstOnly ? Array(strings.prefix(1)) : strings { lists.add(canonical: key, value) }
    }

    /// The NUL-separated strings of a text field in `encoding` (0 Latin-1,
    /// 1 UTF-16 with BOM, 2 UTF-16BE, 3 UTF-8); a final terminator ends the
    /// last string and adds none.
    static func textStrings(_ bytes: [UInt8], encoding: UInt8) -> [String] {
        var strings: [String] = []
        switch encoding {
        case 1, 2:
            var bigEndian = encoding == 2
            var units: [UInt16] = []
            var index = 0
            func flush() {
                strings.append(String(decoding: units, as: UTF16.self))
                units = []
            }
            while index + 1 < bytes.count {
                let pair = (bytes[index], bytes[index + 1])
                index += 2
                if encoding == 1, units.isEmpty, pair == (0xFF, 0xFE) || pair == (0xFE, 0xFF) {
                    bigEndian = pair.0 == 0xFE
                    continue
                }
                let unit = bigEndian ? UInt16(pair.0) << 8 | UInt16(pair.1) : UInt16(pair.1) << 8 | UInt16(pair.0)
                if unit == 0 { flush() } else { units.append(unit) }
            }
            if !units.isEmpty { flush() }
        case 0, 3:
            let parts = bytes.split(separator: 0, omittingEmptySubsequences: false)
            for (offset, part) in parts.enumerated() {
                if offset == parts.count - 1, part.isEmpty, offset > 0 { break }
                strings.append(encoding == 3 ? utf8Text(part) : String(String.UnicodeScalarView(part.map { Unicode.Scalar($0) })))
            }
        default:
            break
        }
        return strings
    }

    /// A 28-bit syncsafe integer from four 7-bit bytes.
    static func syncsafe<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> UInt32 {
        bytes.reduce(0) { $0 << 7 | UInt32($1 & 0x7F) }
    }

    static func syncsafe(_ raw: UInt32) -> UInt32 {
        (raw & 0x7F) | (raw >> 8 & 0x7F) << 7 | (raw >> 16 & 0x7F) << 14 | (raw >> 24 & 0x7F) << 21
    }

    /// `bytes` with the unsynchronisation scheme undone (FF 00 → FF).
    static func resynchronised(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var previous: UInt8 = 0
        for byte in bytes {
            if !(previous == 0xFF && byte == 0) { out.append(byte) }
            previous = byte
        }
        return out
    }

    static func isFrameID<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> Bool {
        bytes.allSatisfy { ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x30 && $0 <= 0x39) }
    }

    /// True at the end of the tag, at padding, or at a frame id.
    private static func isFrameBoundary(_ bytes: [UInt8], _ position: Int) -> Bool {
        guard position >= 0 else { return false }
        if position >= bytes.count || bytes[position] == 0 { return position <= bytes.count }
        return position + 4 <= bytes.count && isFrameID(bytes[position..<(position + 4)])
    }
}
