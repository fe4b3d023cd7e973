// MP4 `ilst` lists — specs/ports.md §TagReaderPort (Value lists)
//
// iTunes-style metadata: moov/udta/meta/ilst, one atom per item (©ART, aART,
// ©wrt, ©gen, and `----` freeform items named by `mean`/`name`), each
// holding one or more `data` atoms. Every `data` atom, and every repetition
// of an item, is one more value. (MPD 0.23 shows only the first ©ART.)

/// Pure functions over a byte source; any thread.
enum MP4ListParser {
    /// The most atoms walked at one level.
    static let maxAtoms = 10_000

    struct Atom {
        let type: [UInt8]
        /// Where its content starts and where it ends.
        let content: Int64
        let end: Int64
    }

    static func read(from source: any TagByteSource) -> NativeTagLists? {
        guard let moov = children(source, 0, source.size).first(where: { $0.type == Array("moov".utf8) }),
              let udta = children(source, moov.content, moov.end).first(where: { $0.type == Array("udta".utf8) }),
              let meta = children(source, udta.content, udta.end).first(where: { $0.type == Array("meta".utf8) })
        else { return nil }
        // `meta` is a full box (version and flags first) in MP4; QuickTime's is not.
        let plain = source.bytes(at: meta.content + 4, count: 4) == Array("hdlr".utf8)
        guard let ilst = children(source, meta.content + (plain ? 0 : 4), meta.end).first(where: { $0.type == Array("ilst".utf8) }),
              ilst.end - ilst.content <= Int64(NativeTagLists.maxBlockBytes),
              let body = source.bytes(at: ilst.content, count: Int(ilst.end - ilst.content)) else { return nil }
        var lists = NativeTagLists(format: .mp4)
        let memory = TagMemorySource(data: body)
        for item in children(memory, 0, memory.size) {
            let parts = children(memory, item.content, item.end)
            let key: String?
            if item.type == Array("----".utf8) {
                let name = parts.first { $0.type == Array("name".utf8) }.flatMap { text(memory, $0, skip: 4) }
                key = name.flatMap(NativeTagLists.canonicalKey(musicBrainzDescription:))
            } else {
                key = canonicalKey(item.type)
            }
            guard let key else { continue }
            for data in parts where data.type == Array("data".utf8) {
                guard let header = memory.bytes(at: data.content, count: 8) else { continue }
                let type = header[1...3].bigEndianValue
                guard type == 1 || type == 2, let value = text(memory, data, skip: 8, utf16: type == 2) else { continue }
                lists.add(canonical: key, value)
            }
        }
        return lists
    }

    /// The canonical key of an ilst item's four-character code.
    static func canonicalKey(_ type: [UInt8]) -> String? {
        switch type {
        case [0xA9] + Array("ART".utf8): "ARTIST"
        case Array("aART".utf8): "ALBUMARTIST"
        case [0xA9] + Array("wrt".utf8): "COMPOSER"
        case [0xA9] + Array("gen".utf8): "GENRE"
        default: nil
        }
    }

    /// The atoms between `start` and `end`, in order; stops at a malformed header.
    static func children(_ source: any TagByteSource, _ start: Int64, _ end: Int64) -> [Atom] {
        var atoms: [Atom] = []
        var offset = start
        while offset + 8 <= end, atoms.count < maxAtoms, let header = source.bytes(at: offset, count: 8) {
            var size = Int64(header[0..<4].bigEndianValue)
            var headerLength: Int64 = 8
            if size == 1 {
                guard let large = source.bytes(at: offset + 8, count: 8) else { break }
                let value = large.bigEndianValue
                guard value <= UInt64(Int64.max) else { break }
                size = Int64(value)
                headerLength = 16
            } else if size == 0 {
                size = end - offset
            }
            guard size >= headerLength, size <= end - offset else { break }
            atoms.append(Atom(type: Array(header[4..<8]), content: offset + headerLength, end: offset + size))
            offset += size
        }
        return atoms
    }

    /// The text of `atom` after `skip` bytes (UTF-8, or UTF-16BE).
    private static func text(_ source: any TagByteSource, _ atom: Atom, skip: Int64, utf16: Bool = false) -> String? {
        let length = atom.end - atom.content - skip
        guard length >= 0, let bytes = source.bytes(at: atom.content + skip, count: Int(length)) else { return nil }
        guard utf16 else { return utf8Text(bytes) }
        return ID3v2ListParser.textStrings(bytes, encoding: 2).first ?? ""
    }
}
