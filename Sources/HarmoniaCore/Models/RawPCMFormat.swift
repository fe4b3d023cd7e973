// RawPCMFormat — specs/models.md §RawPCMFormat

/// The format of headerless PCM, which no probe can tell from the bytes:
/// given with a track by whoever knows it (slimproto's `strm` with format
/// `p` and its PCM fields). Signed integer samples, interleaved.
public struct RawPCMFormat: Sendable, Equatable, Hashable, Codable {
    /// Bits per sample: 8, 16, 24 or 32.
    public let bitsPerSample: Int
    /// Frames per second, 1…768,000.
    public let sampleRate: Int
    /// Interleaved channels, 1…8.
    public let channels: Int
    /// Big-endian samples (else little-endian; meaningless for 8 bits).
    public let bigEndian: Bool

    /// Nil when a value is outside the ranges above (values from outside
    /// are checked here, before any arithmetic).
    public init?(bitsPerSample: Int, sampleRate: Int, channels: Int, bigEndian: Bool) {
        guard [8, 16, 24, 32].contains(bitsPerSample), (1...768_000).contains(sampleRate), (1...8).contains(channels) else {
            return nil
        }
        self.bitsPerSample = bitsPerSample
        self.sampleRate = sampleRate
        self.channels = channels
        self.bigEndian = bigEndian
    }

    /// FFmpeg's name for this sample layout's raw demuxer (`s16le`, `s24be`, `s8`…).
    public var demuxerName: String {
        bitsPerSample == 8 ? "s8" : "s\(bitsPerSample)\(bigEndian ? "be" : "le")"
    }
}
