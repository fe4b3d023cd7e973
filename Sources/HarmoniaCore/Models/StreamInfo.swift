// StreamInfo — specs/models.md §StreamInfo

/// What a decoder produces for one opened source: the PCM it will deliver
/// (rate, channels) and facts about the source (codec, bit depth, bitrate).
///
/// `totalFrames` is the exact number of frames `DecoderPort.read` delivers
/// from the start to the end of the stream, after encoder delay and padding
/// are removed; `nil` when unknown (a live stream, or a length the container
/// only estimates). `duration` is `totalFrames / sampleRate` when the length
/// is known; otherwise the container's estimate for display, or `.infinity`.
public struct StreamInfo: Sendable, Equatable, Hashable {
    /// Seconds: exact when `totalFrames` is known, else an estimate or `.infinity`.
    public var duration: Double
    /// Frames per second of the decoded PCM (the stream's native rate).
    public var sampleRate: Double
    /// Interleaved channels of the decoded PCM.
    public var channels: Int
    /// Bits per sample of the source: the coded depth for PCM and lossless
    /// codecs, the decoder's sample width (32 for float decoders) otherwise.
    public var bitDepth: Int
    /// Codec name as the decoder reports it (`"flac"`, `"mp3"`, `"aac"`, …).
    public var codec: String?
    /// Average bitrate in kbit/s, when known (the unit TagBundle uses).
    public var bitrate: Int?
    /// Exact decoded length in frames; `nil` when unknown.
    public var totalFrames: Int64?

    /// Builds an info from its fields, stored as given; `validate()` checks
    /// them.
    public init(duration: Double, sampleRate: Double, channels: Int, bitDepth: Int,
                codec: String? = nil, bitrate: Int? = nil, totalFrames: Int64? = nil) {
        self.duration = duration
        self.sampleRate = sampleRate
        self.channels = channels
        self.bitDepth = bitDepth
        self.codec = codec
        self.bitrate = bitrate
        self.totalFrames = totalFrames
    }

    /// Builds the info of a stream whose exact length is `totalFrames`
    /// (or unknown), deriving `duration` from it.
    public init(totalFrames: Int64?, sampleRate: Double, channels: Int, bitDepth: Int,
                codec: String? = nil, bitrate: Int? = nil) {
        let duration = totalFrames.map { Double($0) / sampleRate } ?? .infinity
        self.init(duration: duration, sampleRate: sampleRate, channels: channels, bitDepth: bitDepth,
                  codec: codec, bitrate: bitrate, totalFrames: totalFrames)
    }

    /// Checks the invariants of specs/models.md.
    /// - Throws: `CoreError.invalidArgument` naming the field that is out of range.
    public func validate() throws {
        guard duration >= 0 else { throw CoreError.invalidArgument("StreamInfo.duration must be >= 0, got \(duration)") }
        guard sampleRate > 0 else { throw CoreError.invalidArgument("StreamInfo.sampleRate must be > 0, got \(sampleRate)") }
        guard channels >= 1 else { throw CoreError.invalidArgument("StreamInfo.channels must be >= 1, got \(channels)") }
        guard bitDepth >= 8 else { throw CoreError.invalidArgument("StreamInfo.bitDepth must be >= 8, got \(bitDepth)") }
        if let totalFrames, totalFrames < 0 {
            throw CoreError.invalidArgument("StreamInfo.totalFrames must be >= 0, got \(totalFrames)")
        }
    }
}

extension StreamInfo: Codable {
    private enum CodingKeys: String, CodingKey {
        case duration, sampleRate, channels, bitDepth, codec, bitrate, totalFrames
    }

    /// Decodes the form `encode(to:)` writes; a null or missing `duration`
    /// becomes `.infinity`.
    /// - Throws: `DecodingError` when a required field (`sampleRate`,
    ///   `channels`, `bitDepth`) is missing or mistyped.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        duration = try c.decodeIfPresent(Double.self, forKey: .duration) ?? .infinity
        sampleRate = try c.decode(Double.self, forKey: .sampleRate)
        channels = try c.decode(Int.self, forKey: .channels)
        bitDepth = try c.decode(Int.self, forKey: .bitDepth)
        codec = try c.decodeIfPresent(String.self, forKey: .codec)
        bitrate = try c.decodeIfPresent(Int.self, forKey: .bitrate)
        totalFrames = try c.decodeIfPresent(Int64.self, forKey: .totalFrames)
    }

    /// Encodes every field by name. JSON has no infinity: a duration that is
    /// not finite is encoded as null; nil optional fields are left out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        if duration.isFinite { try c.encode(duration, forKey: .duration) } else { try c.encodeNil(forKey: .duration) }
        try c.encode(sampleRate, forKey: .sampleRate)
        try c.encode(channels, forKey: .channels)
        try c.encode(bitDepth, forKey: .bitDepth)
        try c.encodeIfPresent(codec, forKey: .codec)
        try c.encodeIfPresent(bitrate, forKey: .bitrate)
        try c.encodeIfPresent(totalFrames, forKey: .totalFrames)
    }
}
