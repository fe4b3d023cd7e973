// APEv2 lists — specs/ports.md §TagReaderPort (Value lists)
//
// An APEv2 tag at the end of the file (before an ID3v1 tag, if any): a
// 32-byte footer "APETAGEX", then items of (value size, flags, key NUL,
// value). A UTF-8 item holds several values separated by NUL.

/// Pure functions over a byte source; any thread.
enum APEListParser {
    static func read(from source: any TagByteSource) -> NativeTagLists? {
        for trailer: Int64 in [0, 128] {
            let footerAt = source.size - trailer - 32
            guard footerAt >= 0, let footer = source.bytes(at: footerAt, count: 32),
                  footer.starts(with: Array("APETAGEX".utf8)) else { continue }
            var cursor = ByteCursor(footer, at: 8)
            guard let version = cursor.u32le(), version == 2000 || version == 1000,
                  let size = cursor.u32le(), let count = cursor.u32le(),
                  size >= 32, Int64(size) <= footerAt + 32, Int(size) <= NativeTagLists.maxBlockBytes,
                  let items = source.bytes(at: footerAt + 32 - Int64(size), count: Int(size) - 32) else { return nil }
            return parse(items, count: Int(count))
        }
        return nil
    }

    static func parse(_ items: [UInt8], count: Int) -> NativeTagLists {
        var lists = NativeTagLists(format: .ape)
        var cursor = ByteCursor(items)
        for _ in 0..<count {
            guard let length = cursor.u32le(), let flags = cursor.u32le() else { break }
            let keyStart = cursor.position
            guard let nul = items[keyStart...].firstIndex(of: 0) else { break }
            let key = items[keyStart..<nul].asciiText
            _ = cursor.skip(nul - keyStart + 1)
            guard let value = cursor.take(Int(length)) else { break }
            guard flags & 0x06 == 0, let name = key, let canonical = NativeTagLists.canonicalKey(vorbisOrAPE: name) else { continue }
            for part in value.split(separator: 0, omittingEmptySubsequences: false) {
                guard lists.add(canonical: canonical, utf8Text(part)) else { return lists }
            }
        }
        return lists
    }
}
