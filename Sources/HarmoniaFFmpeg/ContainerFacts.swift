// ContainerFacts: what a container's own headers declare that FFmpeg does not
// pass on, read from the raw bytes. Used only to tell a complete file from a
// truncated one.

enum ContainerFacts {
    /// Frames a RIFF/WAVE file's `data` chunk declares (size / block align),
    /// or nil when it has none or a placeholder size (0 or 0xFFFFFFFF, as
    /// streaming writers leave it).
    static func wavDeclaredFrames(header bytes: [UInt8]) -> Int64? {
        guard bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WAVE".utf8) else {
            return nil
        }
        var offset = 12
        var blockAlign: UInt32 = 0
        while offset + 8 <= bytes.count {
            let id = bytes[offset..<offset + 4]
            let size = littleEndian(bytes, offset + 4)
            if id.elementsEqual("fmt ".utf8), offset + 8 + 14 <= bytes.count {
                blockAlign = UInt32(bytes[offset + 8 + 12]) | UInt32(bytes[offset + 8 + 13]) << 8
            } else if id.elementsEqual("data".utf8) {
                guard blockAlign > 0, size != 0, size != 0xFFFF_FFFF else { return nil }
                return Int64(size / blockAlign)
            }
            offset += 8 + Int(size) + Int(size & 1)
        }
        return nil
    }

    /// Whether the last complete Ogg page in `tail` (the file's last bytes)
    /// carries the end-of-stream flag. nil when no page header is found.
    static func oggEndsWithEndOfStream(tail bytes: [UInt8]) -> Bool? {
        var index = bytes.count - 27
        while index >= 0 {
            if bytes[index] == 0x4F, bytes[index + 1] == 0x67, bytes[index + 2] == 0x67, bytes[index + 3] == 0x53,
               bytes[index + 4] == 0 {
                let segments = Int(bytes[index + 26])
                let tableEnd = index + 27 + segments
                if tableEnd <= bytes.count {
                    let bodySize = bytes[(index + 27)..<tableEnd].reduce(0) { $0 + Int($1) }
                    if tableEnd + bodySize <= bytes.count {  // a complete page
                        return bytes[index + 5] & 0x04 != 0
                    }
                }
            }
            index -= 1
        }
        return nil
    }

    private static func littleEndian(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }
}
