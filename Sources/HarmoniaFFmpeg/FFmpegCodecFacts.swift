// FFmpegDecodeSession's per-codec facts — specs/ports.md §DecoderPort (Exact length, Exact seek)
//
// What a session needs to know of each codec and container before and while
// it decodes: the warm-up frames a seek needs (preroll), where a stream's
// exact length and encoder delay come from (gaplessInfo, iTunSMPB), the first
// packet, bit depth. Static: they read an input, they hold no state.
import CFFmpeg
import HarmoniaCore

extension FFmpegDecodeSession {
    /// Frames a codec must decode before a seek target for its output there to
    /// equal a straight decode: overlap-add windows, MP3's bit reservoir,
    /// Opus's declared seek preroll. Intra-frame codecs need none.
    static func preroll(for parameters: AVCodecParameters) -> Int64 {
        let declared = Int64(parameters.seek_preroll)
        switch parameters.codec_id {
        case AV_CODEC_ID_FLAC, AV_CODEC_ID_ALAC, AV_CODEC_ID_WAVPACK, AV_CODEC_ID_TTA, AV_CODEC_ID_APE:
            return declared
        case AV_CODEC_ID_MP1, AV_CODEC_ID_MP2, AV_CODEC_ID_MP3:
            // The bit reservoir reaches 511 bytes back: at the smallest frames
            // (32 kbit/s MPEG-1: ≥ 96 bytes; 8 kbit/s MPEG-2/2.5: ≥ 24 bytes)
            // that is 6 or 22 frames, plus two for the overlap to settle.
            return parameters.sample_rate >= 32000 ? max(declared, 8 * 1152) : max(declared, 24 * 576)
        case AV_CODEC_ID_AAC, AV_CODEC_ID_AAC_LATM:
            return max(declared, 3 * 1024)       // one frame of overlap, one of margin
        case AV_CODEC_ID_OPUS:
            // RFC 7845's 80 ms leaves differences up to 1e-3; measured on six
            // files (20, 10 and 60 ms frames, 32–256 kbit/s, mono and
            // stereo; 40 random targets each) the output is bit-identical
            // from 750 ms on (specs/ports.md §DecoderPort (Exact seek)): 1 s, with margin.
            return max(declared, Int64(parameters.sample_rate))
        case AV_CODEC_ID_VORBIS:
            return max(declared, 2 * 8192)       // the largest block, twice
        default:
            if let descriptor = avcodec_descriptor_get(parameters.codec_id),
               descriptor.pointee.props & AV_CODEC_PROP_INTRA_ONLY != 0 {
                return declared                  // PCM and other intra-only codecs
            }
            return max(declared, 2 * 8192)
        }
    }

    /// The stream's exact length and the start delay FFmpeg leaves to us.
    ///
    /// - MP3: FFmpeg trims the LAME delay and padding but its duration counts
    ///   whole MPEG frames: the length comes from the LAME header.
    /// - MP4 with iTunSMPB: FFmpeg takes the priming from the tag (or an edit
    ///   list) but not the length: the length comes from the tag, and any
    ///   priming FFmpeg did not skip (`firstPacketSkip` short of the tag's
    ///   delay) is ours to drop.
    /// - MP4 with one edit: FFmpeg skips the edit's start, but takes the length
    ///   from the edit's duration, which is in whole ticks of the movie
    ///   timescale (milliseconds from FFmpeg's muxer): the length is the
    ///   media's own, from the edit's start (`ContainerFacts.mp4EditedFrames`).
    /// - Ogg Opus: the stream duration includes the pre-skip.
    /// - Otherwise the container's duration, unless it is only an estimate
    ///   from the bitrate (then the length is unknown).
    static func gaplessInfo(of input: FFmpegInput, firstPacketSkip: Int64) -> (totalFrames: Int64?, startDelay: Int64) {
        let stream = input.stream.pointee
        let parameters = input.parameters.pointee
        let rate = parameters.sample_rate
        if let lame = input.lameGaplessInfo(), let frames = plausibleLength(lame.originalFrames, sampleRate: rate) {
            return (frames, 0)
        }
        if input.containerName.hasPrefix("mov,"), let smpb = input.metadata("iTunSMPB").flatMap(ITunesGaplessInfo.init),
           let frames = plausibleLength(smpb.originalFrames, sampleRate: rate), smpb.encoderDelay <= Int64(rate) * 60 {
            return (frames, max(0, smpb.encoderDelay - firstPacketSkip))
        }
        if let frames = plausibleLength(input.mp4EditedFrames(), sampleRate: rate) {
            return (frames, 0)
        }
        if input.containerName == "wav",
           let declared = plausibleLength(ContainerFacts.wavDeclaredFrames(header: input.bytes(at: 0, count: 4096)), sampleRate: rate) {
            return (declared, 0)
        }
        let method = input.format!.pointee.duration_estimation_method
        guard stream.duration > 0, stream.duration != hc_nopts_value(), method != AVFMT_DURATION_FROM_BITRATE else {
            return (nil, 0)
        }
        let frames = av_rescale_q(stream.duration, stream.time_base, AVRational(num: 1, den: parameters.sample_rate))
        let preSkip = parameters.codec_id == AV_CODEC_ID_OPUS ? Int64(max(parameters.initial_padding, 0)) : 0
        // A pre-skip longer than the stream (a forged OpusHead) leaves no known length.
        return (plausibleLength(frames - preSkip, sampleRate: parameters.sample_rate), 0)
    }

    /// The longest length a header may declare: 2^24 seconds (194 days).
    static let maxDeclaredSeconds: Int64 = 1 << 24

    /// `frames` when it is a plausible declared length — positive and at most
    /// `maxDeclaredSeconds` — else nil: the length is unknown and the stream
    /// plays to its real end — specs/hardening.md §Clamping.
    static func plausibleLength(_ frames: Int64?, sampleRate: Int32) -> Int64? {
        guard let frames, frames > 0, frames <= maxDeclaredSeconds * Int64(sampleRate) else { return nil }
        return frames
    }

    /// Reads up to the stream's first packet, sends it to the codec and
    /// returns its timestamp (or the stream's start time when it has none)
    /// and the start skip FFmpeg attached to it (the priming it drops).
    /// - Throws: `decodeError` when there is no packet.
    static func sendFirstPacket(input: FFmpegInput, codec: UnsafeMutablePointer<AVCodecContext>,
                                        packet: UnsafeMutablePointer<AVPacket>) throws(CoreError) -> (timestamp: Int64, skip: Int64) {
        let first = try readFirstPacket(input: input, packet: packet)
        defer { av_packet_unref(packet) }
        _ = avcodec_send_packet(codec, packet)  // a bad first packet shows up in receive
        return first
    }

    /// Reads up to the stream's first packet, left in `packet` (the caller
    /// unreferences it); returns its timestamp (or the stream's start time
    /// when it has none) and the start skip FFmpeg attached to it.
    /// - Throws: `decodeError` when there is no packet.
    static func readFirstPacket(input: FFmpegInput,
                                packet: UnsafeMutablePointer<AVPacket>) throws(CoreError) -> (timestamp: Int64, skip: Int64) {
        while true {
            let read = av_read_frame(input.format, packet)
            if read < 0 {
                if let networkError = input.networkError { throw networkError }
                if input.readGuard.tripped { throw input.readGuard.nothingFound(input.url, input.containerName) }
                let error = FFmpegError(function: "av_read_frame", code: read)
                if error.isEOF || error.isInvalidData {
                    throw .decodeError("\(input.url): the audio stream has no data; the file is truncated or corrupt")
                }
                throw error.coreError(url: input.url, while: "reading the first packet")
            }
            input.readGuard.packetDelivered()
            guard packet.pointee.stream_index == input.streamIndex else {
                av_packet_unref(packet)
                continue
            }
            var size = 0
            var skip: Int64 = 0
            if let side = av_packet_get_side_data(packet, AV_PKT_DATA_SKIP_SAMPLES, &size), size >= 4 {
                skip = Int64(UInt32(side[0]) | UInt32(side[1]) << 8 | UInt32(side[2]) << 16 | UInt32(side[3]) << 24)
            }
            var timestamp = packet.pointee.pts != hc_nopts_value() ? packet.pointee.pts : packet.pointee.dts
            if timestamp == hc_nopts_value() {
                let start = input.stream.pointee.start_time
                timestamp = start != hc_nopts_value() ? start : 0
            }
            return (timestamp, skip)
        }
    }

    /// Bits per sample of the source: coded depth for PCM and lossless codecs,
    /// the decoder's sample width otherwise.
    static func bitDepth(_ parameters: AVCodecParameters) -> Int {
        if parameters.bits_per_raw_sample > 0 { return Int(parameters.bits_per_raw_sample) }
        if let descriptor = avcodec_descriptor_get(parameters.codec_id),
           descriptor.pointee.props & AV_CODEC_PROP_LOSSLESS != 0, parameters.bits_per_coded_sample > 0 {
            return Int(parameters.bits_per_coded_sample)
        }
        let bytes = av_get_bytes_per_sample(AVSampleFormat(rawValue: parameters.format))
        return bytes > 0 ? Int(bytes) * 8 : 32
    }

    static func time(_ frame: Int64, _ rate: Int32) -> String {
        let seconds = Double(frame) / Double(rate)
        return "\((seconds * 1000).rounded() / 1000) s"
    }
}

/// iTunes' `iTunSMPB` gapless tag: ` 00000000 DDDDDDDD PPPPPPPP NNNNNNNNNNNNNNNN …`
/// (hex: encoder delay, end padding, original frame count).
struct ITunesGaplessInfo: Equatable {
    let encoderDelay: Int64
    let endPadding: Int64
    let originalFrames: Int64

    init?(_ text: String) {
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" })
        guard fields.count >= 4, let delay = Int64(fields[1], radix: 16), let padding = Int64(fields[2], radix: 16),
              let frames = Int64(fields[3], radix: 16), frames > 0, delay >= 0, padding >= 0 else { return nil }
        encoderDelay = delay
        endPadding = padding
        originalFrames = frames
    }
}

