// An MP3 file's headers without FFmpeg, for the library scan — specs/library.md §Scanner
//
// A plain MP3 file as encoders write it is an ID3v2 tag, then a first MPEG
// frame holding a Xing/Info header with the frame count and LAME's encoder
// delay and padding, then the audio frames. That gives everything the scan's
// header read (`FFmpegTagReaderAdapter.readHeaders`) gives: the tags as
// FFmpeg's dictionary holds them (ID3v2Metadata), the exact length
// (LAMEGaplessInfo, as playback computes it), the rate, the channels and the
// bit rate as FFmpeg's demuxer and parser set it (libavformat/mp3dec.c,
// libavcodec/mpegaudio_parser.c). Read with a few `pread`s instead of
// FFmpeg's probe of every format, its demuxer and its stream analysis.
import Foundation
import HarmoniaCore

/// Pure functions over a byte source; any thread.
enum MP3Headers {
    /// The tags and stream facts of the MP3 file at `path`, as FFmpeg's
    /// header read gives them; nil when the file is not a plain MP3 file
    /// read here (no ID3v2 tag with metadata, no Xing/Info and LAME header,
    /// junk before or between the first frames, a VBRI header, a size that
    /// does not match, anything ID3v2Metadata refuses): FFmpeg then reads it.
    static func read(path: String) -> (tags: TagBundle, stream: StreamInfo)? {
        guard let file = TagFileSource(path: path) else { return nil }
        return read(from: file)
    }

    static func read(from source: any TagByteSource) -> (tags: TagBundle, stream: StreamInfo)? {
        guard let header = source.bytes(at: 0, count: 10), ID3v2Metadata.matchesHeader(header) else { return nil }
        let tagSize = Int(header[6..<10].reduce(0) { $0 << 7 | UInt32($1) })
        guard tagSize <= NativeTagLists.maxBlockBytes, let body = source.bytes(at: 10, count: tagSize),
              let metadata = ID3v2Metadata.read(header: header, body: body, bodyOffset: 10, file: source),
              !metadata.entries.isEmpty else { return nil }  // without ID3v2 metadata FFmpeg reads ID3v1
        let audioStart = Int64(10 + tagSize)
        // A second tag: FFmpeg reads it into the same dictionary.
        if let next = source.bytes(at: audioStart, count: 10), ID3v2Metadata.matchesHeader(next) { return nil }

        guard let firstBytes = source.bytes(at: audioStart, count: 4), let first = FrameHeader(firstBytes),
              let frame = source.bytes(at: audioStart, count: first.frameSize),
              frame.count >= 40, Array(frame[36..<40]) != Array("VBRI".utf8),
              let lame = LAMEGaplessInfo(firstFrame: frame), let xing = XingHeader(frame: frame, header: first) else { return nil }
        // The next two frames agree (FFmpeg's test that the audio starts right
        // after the Xing frame, which may differ from them in its mode bits).
        let secondAt = audioStart + Int64(first.frameSize)
        guard let secondBytes = source.bytes(at: secondAt, count: 4), let second = FrameHeader(secondBytes),
              let thirdBytes = source.bytes(at: secondAt + Int64(second.frameSize), count: 4), let third = FrameHeader(thirdBytes),
              second.word & FrameHeader.sameStreamMask == third.word & FrameHeader.sameStreamMask else { return nil }

        let size = source.size
        let rate = Int32(second.sampleRate)
        // FFmpeg drops a Xing frame count far below the file's size (a concatenated file).
        if let declared = xing.bytes, size > audioStart + 4 {
            let after = UInt64(max(0, size - audioStart - 4))
            let low = min(after, UInt64(declared)), delta = max(after, UInt64(declared)) - low
            if after > UInt64(declared), delta > low >> 4 { return nil }
        }
        let bitrate: Int64
        if !xing.isInfo, let bytes = xing.bytes, xing.frames > 0 {
            // FFmpeg's av_rescale: rounded to nearest.
            let denominator = Int64(xing.frames) * Int64(first.samplesPerFrame)
            bitrate = (Int64(bytes) * 8 * Int64(first.sampleRate) + denominator / 2) / denominator
        } else if xing.isInfo {
            bitrate = Int64(second.bitrate)  // the parser's first frame: a constant bit rate
        } else {
            return nil
        }
        guard let length = FFmpegDecodeSession.plausibleLength(lame.originalFrames, sampleRate: rate) else { return nil }

        var tags = FFmpegTagReaderAdapter.tags(from: MetadataLookup(metadata.entries))
        NativeTagLists.read(from: source)?.apply(to: &tags)
        tags.artworkData = metadata.picture.map { Data($0) }
        let info = StreamInfo(totalFrames: length, sampleRate: Double(rate), channels: second.channels, bitDepth: 32,
                              codec: "mp3", bitrate: FFmpegDecodeSession.kilobits(bitrate))
        FFmpegTagReaderAdapter.describe(&tags, stream: info, encoding: "lossy", fileSize: size > 0 ? Int(size) : nil)
        return (tags, info)
    }

    /// An MPEG audio Layer III frame header (libavcodec/mpegaudiodecheader.c),
    /// free format refused.
    struct FrameHeader {
        /// The header's 32 bits.
        let word: UInt32
        let sampleRate: Int
        let channels: Int
        let bitrate: Int
        let frameSize: Int
        /// MPEG-2 and 2.5: half the samples per frame.
        let lowSamplingFrequency: Bool
        var samplesPerFrame: Int { lowSamplingFrequency ? 576 : 1152 }

        /// The bits two frames of one stream share (FFmpeg's MP3_MASK).
        static let sameStreamMask: UInt32 = 0xFFFE_0CCF

        init?(_ bytes: [UInt8]) {
            guard bytes.count >= 4 else { return nil }
            let word = UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
            guard word & 0xFFE0_0000 == 0xFFE0_0000, word & (3 << 19) != 1 << 19,
                  (word >> 17) & 3 == 1,  // Layer III
                  (word >> 12) & 0xF != 0xF, (word >> 12) & 0xF != 0, (word >> 10) & 3 != 3 else { return nil }
            let mpeg25 = word & (1 << 20) == 0
            let lsf = mpeg25 || word & (1 << 19) == 0
            let shift = (lsf ? 1 : 0) + (mpeg25 ? 1 : 0)
            let rate = [44100, 48000, 32000][Int((word >> 10) & 3)] >> shift
            let kilobits = Self.bitrates[lsf ? 1 : 0][Int((word >> 12) & 0xF)]
            self.word = word
            sampleRate = rate
            channels = (word >> 6) & 3 == 3 ? 1 : 2
            bitrate = kilobits * 1000
            frameSize = kilobits * 144_000 / (rate << (lsf ? 1 : 0)) + Int((word >> 9) & 1)
            lowSamplingFrequency = lsf
        }

        /// Layer III bit rates in kbit/s: MPEG-1, then MPEG-2 and 2.5.
        private static let bitrates = [[0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320],
                                       [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]]
    }

    /// The Xing or Info header in a first frame: its frame count and byte
    /// count, and where what follows it (LAME's extension) starts.
    struct XingHeader {
        let isInfo: Bool
        let frames: UInt32
        let bytes: UInt32?
        /// The offset in the frame just past the header's fields (frames,
        /// bytes, seek table, quality: those its flags say are present).
        let end: Int

        init?(frame: [UInt8], header: FrameHeader) {
            self.init(frame: frame, lowSamplingFrequency: header.lowSamplingFrequency, mono: header.channels == 1)
        }

        /// The header after the side information of a Layer III frame of
        /// MPEG-2 or 2.5 (`lowSamplingFrequency`) or MPEG-1, mono or not;
        /// nil without the tag or a frame count.
        init?(frame: [UInt8], lowSamplingFrequency: Bool, mono: Bool) {
            let at = 4 + (lowSamplingFrequency ? (mono ? 9 : 17) : (mono ? 17 : 32))
            guard frame.count >= at + 16 else { return nil }
            let tag = Array(frame[at..<at + 4])
            guard tag == Array("Xing".utf8) || tag == Array("Info".utf8) else { return nil }
            let flags = UInt32(frame[at + 4..<at + 8].bigEndianValue)
            guard flags & 1 != 0 else { return nil }
            isInfo = tag == Array("Info".utf8)
            frames = UInt32(frame[at + 8..<at + 12].bigEndianValue)
            let count = flags & 2 != 0 ? UInt32(frame[at + 12..<at + 16].bigEndianValue) : 0
            bytes = count > 0 ? count : nil  // FFmpeg takes 0 as absent
            end = at + 12 + (flags & 2 != 0 ? 4 : 0) + (flags & 4 != 0 ? 100 : 0) + (flags & 8 != 0 ? 4 : 0)
        }
    }
}
