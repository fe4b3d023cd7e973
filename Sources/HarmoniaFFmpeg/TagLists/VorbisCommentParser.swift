// Vorbis comments in FLAC and Ogg — specs/ports.md §TagReaderPort (Value lists)
//
// A Vorbis comment block: vendor string, count, then `KEY=value` strings,
// each with a little-endian length (the Vorbis I spec §5; FLAC's
// VORBIS_COMMENT block; Opus' OpusTags, RFC 7845 §5.2). A key may repeat:
// every repetition is one more value.

/// Pure functions over a byte source; any thread.
enum VorbisCommentParser {
    /// The most FLAC metadata blocks walked, and Ogg pages read, before giving up.
    static let maxBlocks = 1024
    static let maxPages = 4096

    /// The comments of the FLAC stream whose "fLaC" marker is at `start`.
    static func readFLAC(from source: any TagByteSource, at start: Int64) -> NativeTagLists? {
        var offset = start + 4
        for _ in 0..<maxBlocks {
            guard let header = source.bytes(at: offset, count: 4) else { return nil }
            let last = header[0] & 0x80 != 0
            let type = header[0] & 0x7F
            let length = Int(header[1...3].bigEndianValue)
            offset += 4
            if type == 4 {
                guard let block = source.bytes(at: offset, count: length) else { return nil }
                return parse(block)
            }
            guard type != 127, !last else { return nil }
            offset += Int64(length)
        }
        return nil
    }

    /// The comments of the first logical stream of the Ogg file whose first
    /// page is at `start`: Vorbis, Opus, FLAC or Speex in Ogg.
    static func readOgg(from source: any TagByteSource, at start: Int64) -> NativeTagLists? {
        var reader = OggPacketReader(source: source, offset: start)
        guard let first = reader.nextPacket(), let second = reader.nextPacket() else { return nil }
        var cursor = ByteCursor(second)
        if first.starts(with: [0x01] + Array("vorbis".utf8)) {
            guard cursor.take(7)?.elementsEqual([0x03] + Array("vorbis".utf8)) == true else { return nil }
        } else if first.starts(with: Array("OpusHead".utf8)) {
            guard cursor.take(8)?.elementsEqual("OpusTags".utf8) == true else { return nil }
        } else if first.starts(with: [0x7F] + Array("FLAC".utf8)) {
            // The second packet is a FLAC metadata block: VORBIS_COMMENT (4).
            guard let header = cursor.take(4), header.first.map({ $0 & 0x7F }) == 4 else { return nil }
        } else if !first.starts(with: Array("Speex   ".utf8)) {
            return nil
        }
        return parse(Array(cursor.take(cursor.remaining) ?? []))
    }

    /// The list-valued comments of a comment block (vendor, count, comments).
    static func parse(_ block: [UInt8]) -> NativeTagLists? {
        var cursor = ByteCursor(block)
        guard let vendorLength = cursor.u32le(), cursor.skip(Int(vendorLength)),
              let count = cursor.u32le() else { return nil }
        var lists = NativeTagLists(format: .vorbisComment)
        for _ in 0..<Int(count) {
            guard let length = cursor.u32le(), let comment = cursor.take(Int(length)) else { break }
            guard let equals = comment.firstIndex(of: UInt8(ascii: "=")),
                  let name = comment[comment.startIndex..<equals].asciiText,
                  let key = NativeTagLists.canonicalKey(vorbisOrAPE: name) else { continue }
            guard lists.add(canonical: key, utf8Text(comment[(equals + 1)...])) else { break }
        }
        return lists
    }
}

/// Packets of the first logical stream of an Ogg file (RFC 3533): pages are
/// read one by one, other streams' pages skipped, lacing values joined.
struct OggPacketReader {
    let source: any TagByteSource
    private(set) var offset: Int64
    private var serial: UInt32?
    private var pending: [UInt8] = []
    private var ready: [[UInt8]] = []
    private var pagesRead = 0

    init(source: any TagByteSource, offset: Int64) {
        self.source = source
        self.offset = offset
    }

    /// The next whole packet; nil at the end, on a malformed page, or past the bounds.
    mutating func nextPacket() -> [UInt8]? {
        while ready.isEmpty {
            guard readPage() else { return nil }
        }
        return ready.removeFirst()
    }

    private mutating func readPage() -> Bool {
        guard pagesRead < VorbisCommentParser.maxPages,
              let header = source.bytes(at: offset, count: 27), header.starts(with: Array("OggS".utf8)) else { return false }
        pagesRead += 1
        let pageSerial = UInt32(header[14...17].reversed().bigEndianValue)
        let segments = Int(header[26])
        guard let lacing = source.bytes(at: offset + 27, count: segments) else { return false }
        let bodyLength = lacing.reduce(0) { $0 + Int($1) }
        let bodyStart = offset + 27 + Int64(segments)
        offset = bodyStart + Int64(bodyLength)
        if serial == nil { serial = pageSerial }
        guard pageSerial == serial else { return true }
        guard let body = source.bytes(at: bodyStart, count: bodyLength) else { return false }
        var position = 0
        for value in lacing {
            pending += body[position..<(position + Int(value))]
            position += Int(value)
            guard pending.count <= NativeTagLists.maxBlockBytes else { return false }
            if value < 255 {
                ready.append(pending)
                pending = []
            }
        }
        return true
    }
}
