// LAMEGaplessInfo: the encoder delay and padding in an MP3's Xing/Info + LAME
// header. FFmpeg uses them to trim the decode but does not export them, and
// the stream's duration counts whole MPEG frames; this gives the exact length.

/// Gapless facts of an MP3 from its first frame's Xing/Info and LAME headers.
struct LAMEGaplessInfo: Equatable {
    /// MPEG frames in the stream (the Xing "frames" field).
    let frameCount: Int64
    let samplesPerFrame: Int64
    /// Encoder delay and end padding, in samples (12 bits each in the LAME tag).
    let encoderDelay: Int64
    let endPadding: Int64

    /// Frames a gapless decode delivers: what the encoder was given.
    var originalFrames: Int64 { frameCount * samplesPerFrame - encoderDelay - endPadding }

    /// Parses `bytes`, which start at the first MPEG audio frame (after any
    /// ID3v2 tag). Returns nil when there is no Xing/Info header with a frame
    /// count and a LAME (or FFmpeg "Lavc"/"Lavf") extension.
    init?(firstFrame bytes: [UInt8]) {
        guard bytes.count >= 4, bytes[0] == 0xFF, bytes[1] & 0xE0 == 0xE0 else { return nil }
        let versionBits = (bytes[1] >> 3) & 0x3      // 3 = MPEG-1, 2 = MPEG-2, 0 = MPEG-2.5
        let layerBits = (bytes[1] >> 1) & 0x3        // 1 = Layer III
        guard versionBits != 1, layerBits == 1 else { return nil }
        let mpeg1 = versionBits == 3
        guard let xing = MP3Headers.XingHeader(frame: bytes, lowSamplingFrequency: !mpeg1, mono: (bytes[3] >> 6) == 3) else {
            return nil
        }
        let offset = xing.end
        // LAME extension: 9-byte encoder string, then delay/padding at +21.
        guard bytes.count >= offset + 24 else { return nil }
        let encoder = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
        guard ["LAME", "Lavf", "Lavc"].contains(encoder) else { return nil }
        let packed = Self.bigEndian(bytes, offset + 21, 3)
        frameCount = Int64(xing.frames)
        samplesPerFrame = mpeg1 ? 1152 : 576
        encoderDelay = Int64(packed >> 12)
        endPadding = Int64(packed & 0xFFF)
        guard frameCount > 0, originalFrames > 0 else { return nil }
    }

    /// Size of an ID3v2 tag at the start of `header` (10 bytes), footer included; 0 if none.
    static func id3v2Size(_ header: [UInt8]) -> Int {
        guard header.count >= 10, header[0] == 0x49, header[1] == 0x44, header[2] == 0x33 else { return 0 }
        let size = header[6..<10].reduce(0) { $0 << 7 | Int($1 & 0x7F) }
        return 10 + size + (header[5] & 0x10 != 0 ? 10 : 0)
    }

    private static func bigEndian(_ bytes: [UInt8], _ offset: Int, _ count: Int) -> UInt32 {
        bytes[offset..<offset + count].reduce(0) { $0 << 8 | UInt32($1) }
    }
}
