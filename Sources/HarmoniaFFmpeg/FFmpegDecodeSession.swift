// FFmpegDecodeSession — specs/ports.md §DecoderPort (Exact length, Exact seek, Damaged data)
//
// One open source: container, codec, converter and the buffers the decode
// loop reuses. Positions are frames of the straight decode's timeline:
// frame 0 is the first frame of the encoded source, after encoder delay.
//
// How the timeline is kept exact:
// - `origin` is the timestamp of frame 0, taken from the first decoded frame
//   (FFmpeg moves a frame's timestamp forward when it drops encoder delay).
//   Frames are counted from there, and each frame's timestamp is checked
//   against the count: a jump forward is lost data (filled with silence up
//   to 5 s), a jump back is repeated data (dropped).
// - Frames before 0 are dropped (priming FFmpeg does not drop itself: an
//   iTunSMPB delay, Opus pre-skip after seeking back to the start), and so
//   are frames at or past `totalFrames` (end padding the container excludes,
//   as MP4 edit lists do and FFmpeg does not). `gaplessInfo` says where the
//   exact length comes from for each format.
// - seek(f) seeks the demuxer to f − preroll (the codec's warm-up; possibly
//   before the first packet, then from the first packet), flushes the codec,
//   decodes, and drops frames until f. When the demuxer cannot seek or the
//   stream has no timestamps, it decodes from the start, counting.
// - A stream that ends before its declared length (or an Ogg stream without
//   its end-of-stream page) makes read throw decodeError: truncated or damaged.
import CFFmpeg
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// One decode session. Not thread-safe: `FFmpegDecoderAdapter` serialises
/// every call on it. `close()` is idempotent.
final class FFmpegDecodeSession {
    let input: FFmpegInput
    let info: StreamInfo
    private let logger: any LoggerPort

    /// The codec, packet, frame, converter and buffers, reused by every
    /// iteration of the decode loop. Owned by an object of their own so that
    /// an init that throws half-way frees them.
    private let r: FFmpegDecodeResources
    private var codec: UnsafeMutablePointer<AVCodecContext>? { r.codec }
    private var packet: UnsafeMutablePointer<AVPacket>? { r.packet }
    private var frame: UnsafeMutablePointer<AVFrame>? { r.frame }

    private let channels: Int
    private let sampleRate: Int32
    private let sampleTimeBase: AVRational
    private let streamTimeBase: AVRational
    /// Decoder warm-up before a seek target, in frames.
    private let preroll: Int64
    /// Exact length; nil when unknown (then nothing is trimmed at the end).
    private let totalFrames: Int64?
    /// Frames dropped at the start that FFmpeg does not drop (iTunSMPB delay).
    private let startDelay: Int64
    /// Timestamp (stream time base) of the stream's first packet: seeking
    /// there restarts the decode exactly as open did.
    private let firstPacketTimestamp: Int64

    // Decode state.
    /// Stream timestamp (in samples) of frame 0; nil until the first frame.
    private var origin: Int64?
    /// Position of the next decoded frame when counting; nil = take it from the timestamp.
    private var nextDecodedPosition: Int64?
    /// Frames before this position are dropped (0, or a seek target).
    private var lowerBound: Int64 = 0
    private var pendingStart = 0
    private var pendingEnd = 0
    /// The pending frames were converted straight into the caller's buffer
    /// (`read`), where they already are: [0, pendingEnd) there.
    private var pendingInCallerBuffer = false
    /// Position of converted[0].
    private var pendingPosition: Int64 = 0
    /// Start of a gap to fill with silence before converted[pendingStart]:
    /// frames [silenceStart, pendingPosition) are owed (none when equal).
    private var silenceStart: Int64 = 0
    /// A timestamp within this many frames of the running count agrees with it
    /// (one tick of the stream's time base, in frames).
    private let timestampTolerance: Int64
    /// The frame the next read delivers.
    private(set) var position: Int64 = 0
    private var flushedDecoder = false
    private var lastFrameHadTimestamp = true
    private var consecutiveErrors = 0
    /// How often the converter was set up, and the output buffer grown: once
    /// each for a stream whose format never changes (the loop reuses both).
    private(set) var converterConfigurations = 0
    private(set) var outputBufferGrowths = 0
    /// True once close() has freed every FFmpeg object.
    var isClosed: Bool { closed && r.isFreed && input.format == nil }
    private var closed = false
    private var oggEndChecked = false
    private var oggTruncated = false

    // MARK: Open

    /// - Parameter memory: bytes to decode instead of opening `url` (see `FFmpegInput`).
    /// - Parameter rawPCM: the source's format if it is raw PCM (see `FFmpegInput`).
    init(url: String, logger: any LoggerPort, network: FFmpegNetworkSettings = FFmpegNetworkSettings(),
         interrupt: FFmpegInterruptFlag = FFmpegInterruptFlag(), memory: FFmpegMemorySource? = nil,
         rawPCM: RawPCMFormat? = nil) throws(CoreError) {
        let input = try FFmpegInput(url: url, network: network, interrupt: interrupt, memory: memory, rawPCM: rawPCM)
        self.input = input
        self.logger = logger
        let parameters = input.parameters.pointee
        channels = Int(parameters.ch_layout.nb_channels)
        sampleRate = parameters.sample_rate
        sampleTimeBase = AVRational(num: 1, den: sampleRate)
        streamTimeBase = input.stream.pointee.time_base
        // One tick of the stream's time base, in frames: at most a second
        // (a forged time base must not make every timestamp agree).
        let tick = av_rescale_q_rnd(1, input.stream.pointee.time_base, AVRational(num: 1, den: parameters.sample_rate), AV_ROUND_UP)
        timestampTolerance = 1 + min(max(tick, 0), Int64(parameters.sample_rate))

        r = FFmpegDecodeResources(channels: channels)

        let decoder: UnsafePointer<AVCodec>
        do {
            decoder = try Self.decoder(for: input)
        } catch {
            throw Self.fail(input, error)
        }
        r.codec = avcodec_alloc_context3(decoder)
        guard r.packet != nil, r.frame != nil, r.codec != nil else {
            throw Self.fail(input, .ioError("\(url): out of memory allocating the decoder"))
        }
        do {
            try check(avcodec_parameters_to_context(r.codec, input.parameters), "avcodec_parameters_to_context")
            r.codec!.pointee.pkt_timebase = streamTimeBase
            r.codec!.pointee.thread_count = 1
            try check(avcodec_open2(r.codec, decoder, nil), "avcodec_open2")
        } catch {
            throw Self.fail(input, .unsupported("\(url): the \(String(cString: decoder.pointee.name)) decoder cannot open this stream (\(error.text))"))
        }
        if parameters.ch_layout.order == AV_CHANNEL_ORDER_NATIVE {
            av_channel_layout_copy(&r.outputLayout, &input.parameters.pointee.ch_layout)
        } else {
            av_channel_layout_default(&r.outputLayout, Int32(channels))
        }

        preroll = Self.preroll(for: parameters)
        let firstPacket: (timestamp: Int64, skip: Int64)
        do {
            firstPacket = try Self.sendFirstPacket(input: input, codec: r.codec!, packet: r.packet!)
        } catch {
            throw Self.fail(input, error)
        }
        firstPacketTimestamp = firstPacket.timestamp
        let firstPacketSkip = firstPacket.skip
        let gapless = Self.gaplessInfo(of: input, firstPacketSkip: firstPacketSkip)
        startDelay = gapless.startDelay
        totalFrames = gapless.totalFrames
        nextDecodedPosition = -startDelay

        self.info = Self.streamInfo(of: input, totalFrames: totalFrames)

        // Decode the first frame now: a stream that cannot produce any audio
        // fails at open, and the timeline gets its origin.
        do {
            _ = try produce()
        } catch {
            close()
            throw error
        }
    }

    /// The decoder for `input`'s stream.
    /// - Throws: `unsupported` when the installed FFmpeg has none for its codec.
    static func decoder(for input: FFmpegInput) throws(CoreError) -> UnsafePointer<AVCodec> {
        let id = input.parameters.pointee.codec_id
        guard let decoder = avcodec_find_decoder(id) else {
            throw .unsupported("\(input.url): no decoder for codec '\(String(cString: avcodec_get_name(id)))' in the installed FFmpeg")
        }
        return decoder
    }

    /// The `StreamInfo` of `input`'s stream, whose exact length is
    /// `totalFrames` (`gaplessInfo`), from its parameters alone: what the
    /// session reports, without a codec (`FFmpegTagReaderAdapter.readHeaders`).
    static func streamInfo(of input: FFmpegInput, totalFrames: Int64?) -> StreamInfo {
        let parameters = input.parameters.pointee
        let codecName = String(cString: avcodec_get_name(parameters.codec_id))
        var bitrate = parameters.bit_rate > 0 ? parameters.bit_rate : input.format!.pointee.bit_rate
        // Without FFmpeg's stream analysis (`FFmpegInput(headersOnly:)`), the
        // container's rate is the file's size over its length, as that analysis computes it.
        if bitrate <= 0, let frames = totalFrames, let io = input.format!.pointee.pb,
           let estimate = Self.bitrate(fileBytes: avio_size(io), frames: frames, sampleRate: parameters.sample_rate) {
            bitrate = estimate
        }
        let estimated = input.format!.pointee.duration
        var info = StreamInfo(totalFrames: totalFrames, sampleRate: Double(parameters.sample_rate),
                              channels: Int(parameters.ch_layout.nb_channels),
                              bitDepth: Self.bitDepth(parameters), codec: codecName, bitrate: Self.kilobits(bitrate))
        if totalFrames == nil, estimated > 0, estimated / Int64(AV_TIME_BASE) <= Self.maxDeclaredSeconds {
            info.duration = Double(estimated) / Double(AV_TIME_BASE)  // an estimate, for display only
        }
        return info
    }

    /// A container's bit rate as FFmpeg's stream analysis estimates it: the
    /// file's bits over its length; nil when either is unknown or absurd.
    static func bitrate(fileBytes: Int64, frames: Int64, sampleRate: Int32) -> Int64? {
        guard fileBytes > 0, frames > 0, sampleRate > 0 else { return nil }
        let estimate = Double(fileBytes) * 8 * Double(sampleRate) / Double(frames)
        return estimate < 1e12 ? Int64(estimate) : nil  // a forged length cannot overflow it
    }

    /// `StreamInfo.bitrate` (kbit/s, rounded) of bits per second; nil below 500.
    static func kilobits(_ bitsPerSecond: Int64) -> Int? {
        bitsPerSecond >= 500 ? Int((Double(bitsPerSecond) / 1000).rounded()) : nil
    }

    /// Closes `input` and returns `error`, for failures inside init.
    private static func fail(_ input: FFmpegInput, _ error: CoreError) -> CoreError {
        input.close()
        return error
    }

    deinit { close() }

    /// Releases every FFmpeg object. Idempotent.
    func close() {
        guard !closed else { return }
        closed = true
        r.free()
        input.close()
    }

    // MARK: Read

    /// Copies up to `maxFrames` frames into `buffer`. Allocates nothing in the
    /// steady state (the converter's buffer grows only for a larger frame).
    func read(into buffer: UnsafeMutablePointer<Float>, maxFrames: Int) throws(CoreError) -> Int {
        var written = 0
        while written < maxFrames {
            if silenceStart < silenceEnd {
                let count = Int(min(silenceEnd - silenceStart, Int64(maxFrames - written)))
                (buffer + written * channels).update(repeating: 0, count: count * channels)
                silenceStart += Int64(count)
                written += count
                position += Int64(count)
                continue
            }
            if pendingStart == pendingEnd {
                // A whole frame that fits is converted where it goes: one copy less.
                guard try produce(into: buffer + written * channels, capacity: maxFrames - written) else {
                    if written == 0 { try checkComplete() }
                    break
                }
                if pendingInCallerBuffer {
                    pendingInCallerBuffer = false
                    written += pendingEnd
                    position += Int64(pendingEnd)
                    pendingStart = pendingEnd
                }
                continue
            }
            let count = min(pendingEnd - pendingStart, maxFrames - written)
            (buffer + written * channels).update(from: r.converted + pendingStart * channels, count: count * channels)
            pendingStart += count
            written += count
            position += Int64(count)
        }
        return written
    }

    /// At the end of the stream: throws when the stream ended before the
    /// length its headers declare (a truncated or damaged file).
    private func checkComplete() throws(CoreError) {
        // Over the network the source itself tells a body cut short (ioError);
        // fetching the tail would cost a request.
        if input.containerName == "ogg", !oggEndChecked, input.byteSourceIO == nil {
            oggEndChecked = true
            if let size = input.size, size > 0,
               ContainerFacts.oggEndsWithEndOfStream(tail: input.bytes(at: max(0, size - 65536), count: 65536)) == false {
                oggTruncated = true
            }
        }
        if oggTruncated {
            throw .decodeError("\(input.url): the Ogg stream stops at \(Self.time(position, sampleRate)) without its "
                + "end-of-stream page: the file is truncated")
        }
        guard let totalFrames, position < totalFrames else { return }
        throw .decodeError("\(input.url): the file declares \(Self.time(totalFrames, sampleRate)) (\(totalFrames) frames) "
            + "but its audio runs out at \(Self.time(position, sampleRate)) (frame \(position)): "
            + "it is truncated or has corrupt data")
    }

    // MARK: Seek

    /// Moves so the next read delivers exactly `target`.
    func seek(to target: Int64) throws(CoreError) {
        guard target >= 0 else {
            throw .invalidArgument("\(input.url): seek position \(target) is negative; positions start at 0")
        }
        if let totalFrames, target > totalFrames {
            throw .invalidArgument("\(input.url): seek position \(Self.time(target, sampleRate)) is past the end "
                + "(\(Self.time(totalFrames, sampleRate))); seek to at most the duration")
        }
        guard input.format!.pointee.pb.pointee.seekable != 0 else {
            return try seekWithoutRandomAccess(to: target)
        }
        var preroll = self.preroll
        for _ in 0..<4 {
            // May be negative: warming up for frame 0 means decoding the
            // priming packets before it, from the stream's first packet.
            let start = target - preroll
            // A demuxer that cannot seek there (FFmpeg's FLAC bisection fails
            // on some files) is not an error: decode from the start instead.
            guard let atStreamStart = try? seekDemuxer(toFrame: start) else { break }
            lowerBound = Int64.min
            guard try produce() else {
                // Nothing decodable from there on: at the end.
                return finishSeek(at: target)
            }
            guard lastFrameHadTimestamp else { break }
            if pendingPosition <= start || atStreamStart {
                return finishSeek(at: target)
            }
            // Landed after the warm-up point (a coarse index): go further back.
            preroll = max(preroll * 4, Int64(sampleRate))
        }
        // Timestamps missing or unusable, or the demuxer cannot seek there:
        // decode from the start, counting frames (exact, linear in time).
        logger.debug("\(input.url): seeking to frame \(target) by decoding from the start")
        try seekDemuxer(toFrame: Int64.min / 2)
        nextDecodedPosition = -startDelay
        lowerBound = target
        position = target
    }

    /// A source without random access (a server that ignores Range, a live
    /// stream): forward, decode and drop frames up to `target`; backward,
    /// read again from the start (a network source asks the server again)
    /// and count frames to `target`. Exact either way.
    private func seekWithoutRandomAccess(to target: Int64) throws(CoreError) {
        if target == position { return }
        if target > position {
            lowerBound = max(lowerBound, target)
            position = target
            clampPendingToBounds()
            return
        }
        guard input.byteSourceIO != nil else {
            throw .invalidArgument("\(input.url): this source is not seekable (a live or non-seekable stream); "
                + "it cannot go back to \(Self.time(target, sampleRate))")
        }
        try seekDemuxer(toFrame: Int64.min / 2)
        nextDecodedPosition = -startDelay
        lowerBound = target
        position = target
    }

    private func finishSeek(at target: Int64) {
        lowerBound = max(target, 0)
        position = target
        clampPendingToBounds()
    }

    /// Seeks the demuxer to the last packet at or before frame `start` (or
    /// the stream's first packet when `start` precedes it, then returns true)
    /// and flushes the codec.
    @discardableResult
    private func seekDemuxer(toFrame start: Int64) throws(CoreError) -> Bool {
        // `start` is at most the length (≤ 2^53 when known) or a caller's
        // frame; `origin` within ±2^61 (samplePosition): the sum cannot overflow.
        let clampedStart = min(max(start, -(Int64(1) << 40)), maxFramePosition)
        var timestamp = av_rescale_q(clampedStart + (origin ?? 0), sampleTimeBase, streamTimeBase)
        let atStreamStart = timestamp <= firstPacketTimestamp
        if atStreamStart { timestamp = firstPacketTimestamp }
        input.readGuard.packetDelivered()  // a seek may read (an index search): a fresh budget
        var result = av_seek_frame(input.format, input.streamIndex, timestamp, AVSEEK_FLAG_BACKWARD)
        if result < 0 {
            result = avformat_seek_file(input.format, input.streamIndex, Int64.min, timestamp, timestamp, 0)
        }
        if result < 0 {
            let error = FFmpegError(function: "av_seek_frame", code: result)
            if error.posixErrno != nil { throw error.coreError(url: input.url, while: "seeking to \(Self.time(start, sampleRate))") }
            throw .unsupported("\(input.url): the \(input.containerName) demuxer cannot seek to \(Self.time(start, sampleRate)) (\(error.text))")
        }
        avcodec_flush_buffers(codec)
        flushedDecoder = false
        pendingStart = 0
        pendingEnd = 0
        silenceStart = pendingPosition
        nextDecodedPosition = nil
        consecutiveErrors = 0
        return atStreamStart
    }

    // MARK: The decode loop

    /// Decodes the next frame that has frames inside [lowerBound, totalFrames)
    /// into `converted`, or into `destination` when all of it fits there and
    /// is delivered whole (then `pendingInCallerBuffer`). Returns false at
    /// the end of the stream.
    private func produce(into destination: UnsafeMutablePointer<Float>? = nil, capacity: Int = 0) throws(CoreError) -> Bool {
        while true {
            guard try receiveFrame() else { return false }
            defer { av_frame_unref(frame) }
            let frameCount = Int64(frame!.pointee.nb_samples)
            guard frameCount > 0 else { continue }

            let samples = Self.samplePosition(of: frame!.pointee.best_effort_timestamp, streamTimeBase, sampleTimeBase)
            lastFrameHadTimestamp = samples != nil
            var framePosition: Int64
            var gap: Int64 = 0
            if let counted = nextDecodedPosition {
                framePosition = counted
                if origin == nil, let samples { origin = samples - counted }
                if let samples, let origin {
                    // The timestamp says where this frame belongs. A jump
                    // means data was lost (a gap: filled with silence so the
                    // timeline stays the file's) or repeated (an overlap: dropped).
                    let stamped = samples - origin
                    if abs(stamped - counted) > timestampTolerance {
                        if stamped > counted, stamped - counted <= Int64(sampleRate) * 5 {
                            gap = stamped - counted
                        } else if stamped < counted {
                            lowerBound = max(lowerBound, counted)  // never deliver a frame twice
                        }
                        logger.warn("\(input.url): \(stamped > counted ? "lost" : "repeated") \(abs(stamped - counted)) frames near \(Self.time(counted, sampleRate)) (corrupt data)")
                        framePosition = stamped
                    }
                }
            } else if let samples, let origin {
                framePosition = samples - origin
            } else {
                // No timestamp to anchor on: the caller falls back to counting.
                framePosition = 0
            }
            if origin == nil { origin = 0 }

            let (produced, inDestination) = try convert(into: destination, capacity: capacity)
            nextDecodedPosition = framePosition + Int64(produced)
            pendingPosition = framePosition
            pendingStart = 0
            pendingEnd = produced
            silenceStart = framePosition - gap
            if let totalFrames, framePosition >= totalFrames, silenceStart >= totalFrames { return false }
            if clampPendingToBounds() {
                if let destination, inDestination {
                    if pendingStart == 0 && silenceStart >= silenceEnd {
                        pendingInCallerBuffer = true
                    } else {
                        // Trimmed at the start, or silence owed first (rare:
                        // after a seek, at frame 0, at a gap): from `converted`.
                        ensureConvertedCapacity(produced)
                        r.converted.update(from: destination, count: produced * channels)
                    }
                }
                return true
            }
        }
    }

    /// A frame's timestamp in samples, or nil when it has none or when it
    /// is beyond ±2^60 samples (24,000 years at 1.5 MHz: a forged Ogg granule
    /// or WebM cluster time). Bounding it keeps every difference the
    /// bookkeeping takes within Int64 — specs/hardening.md §Clamping.
    static func samplePosition(of timestamp: Int64, _ streamTimeBase: AVRational, _ sampleTimeBase: AVRational) -> Int64? {
        guard timestamp != hc_nopts_value() else { return nil }
        let samples = av_rescale_q(timestamp, streamTimeBase, sampleTimeBase)  // INT64_MIN when out of range
        guard samples > -maxTimestampSamples, samples < maxTimestampSamples else { return nil }
        return samples
    }

    /// Timestamps beyond this many samples either way are treated as missing.
    static let maxTimestampSamples: Int64 = 1 << 60

    /// Drops pending frames outside [lowerBound, totalFrames). Returns true
    /// when some remain.
    @discardableResult
    private func clampPendingToBounds() -> Bool {
        silenceStart = min(max(silenceStart, lowerBound), pendingPosition)
        let first = pendingPosition + Int64(pendingStart)
        if first < lowerBound {
            let drop = min(Int64(pendingEnd - pendingStart), lowerBound - first)
            pendingStart += Int(drop)
        }
        if let totalFrames {
            let end = pendingPosition + Int64(pendingEnd)
            if end > totalFrames { pendingEnd = max(pendingStart, pendingEnd - Int(end - totalFrames)) }
        }
        return pendingStart < pendingEnd || silenceStart < silenceEnd
    }

    /// Silence owed before the pending frames: [silenceStart, pendingPosition),
    /// clipped to the bounds (a gap in the timestamps).
    private var silenceEnd: Int64 {
        min(pendingPosition, totalFrames ?? .max)
    }

    /// Receives the next decoded AVFrame into `frame`, feeding packets as the
    /// codec asks. Corrupt packets are skipped and logged; the next frame's
    /// timestamp re-anchors the position. Returns false at the end.
    private func receiveFrame() throws(CoreError) -> Bool {
        while true {
            let received = avcodec_receive_frame(codec, frame)
            if received >= 0 {
                consecutiveErrors = 0
                return true
            }
            if received == hc_averror_eof() { return false }
            if received != hc_averror(EAGAIN) {
                try skipCorrupt(FFmpegError(function: "avcodec_receive_frame", code: received))
                continue
            }
            if flushedDecoder { return false }

            let read = av_read_frame(input.format, packet)
            if read < 0 {
                if let networkError = input.networkError { throw networkError }
                if input.readGuard.tripped {
                    throw input.readGuard.nothingDecodable(input.url, at: Self.time(nextDecodedPosition ?? position, sampleRate))
                }
                let error = FFmpegError(function: "av_read_frame", code: read)
                if let e = error.posixErrno, e != EINVAL, e != ENOSPC {
                    throw error.coreError(url: input.url, while: "reading at \(Self.time(nextDecodedPosition ?? position, sampleRate))")
                }
                // End of data (or data the demuxer cannot parse further): drain the codec.
                flushedDecoder = true
                _ = avcodec_send_packet(codec, nil)
                continue
            }
            defer { av_packet_unref(packet) }
            input.readGuard.packetDelivered()
            guard packet!.pointee.stream_index == input.streamIndex else { continue }
            input.packetRead(at: packet!.pointee.pos)
            let sent = avcodec_send_packet(codec, packet)
            if sent < 0, sent != hc_averror(EAGAIN) {
                try skipCorrupt(FFmpegError(function: "avcodec_send_packet", code: sent))
            }
        }
    }

    private func skipCorrupt(_ error: FFmpegError) throws(CoreError) {
        let at = Self.time(nextDecodedPosition ?? position, sampleRate)
        // Interrupted (a signal, quit): the packet was cut short by us, not
        // damaged; nothing to report, and nothing more to read.
        if input.readGuard.interrupt.isSet { throw .ioError("\(input.url): reading was interrupted") }
        // The network gave up mid-packet: the packet is cut short, not
        // damaged; the network's error is the one to report.
        if let networkError = input.networkError { throw networkError }
        consecutiveErrors += 1
        // The next good frame's timestamp shows the gap (filled with silence).
        logger.warn("\(input.url): skipped corrupt data near \(at) (\(error))")
        if consecutiveErrors >= 64 || origin == nil {
            throw .decodeError("\(input.url): corrupt data near \(at) that the decoder cannot get past (\(error.text))")
        }
    }

    /// Converts `frame` to interleaved Float32 at the stream's rate and
    /// layout: into `destination` when `capacity` frames surely hold it,
    /// otherwise into `converted`. Returns the frames produced and where.
    private func convert(into destination: UnsafeMutablePointer<Float>?, capacity: Int) throws(CoreError) -> (frames: Int, inDestination: Bool) {
        let f = frame!.pointee
        if r.resampler == nil || f.format != r.resamplerInput.format || f.sample_rate != r.resamplerInput.rate
            || av_channel_layout_compare(&frame!.pointee.ch_layout, &r.resamplerInput.layout) != 0 {
            try configureResampler()
        }
        let needed = Int(swr_get_out_samples(r.resampler, f.nb_samples))
        let inDestination = destination != nil && capacity >= needed
        if !inDestination { ensureConvertedCapacity(needed) }
        let out = inDestination ? destination! : r.converted
        r.outputPlane.pointee = UnsafeMutableRawPointer(out).assumingMemoryBound(to: UInt8.self)
        let inputPlanes = UnsafeMutableRawPointer(f.extended_data).assumingMemoryBound(to: UnsafePointer<UInt8>?.self)
        let produced = swr_convert(r.resampler, r.outputPlane, Int32(inDestination ? capacity : r.convertedCapacity),
                                   inputPlanes, f.nb_samples)
        if produced < 0 {
            throw .decodeError("\(input.url): sample conversion failed (\(FFmpegError(function: "swr_convert", code: produced).text))")
        }
        return (Int(produced), inDestination)
    }

    /// Grows `converted` to hold `frames` (only for a frame larger than any before).
    private func ensureConvertedCapacity(_ frames: Int) {
        guard frames > r.convertedCapacity else { return }
        r.converted.deallocate()
        outputBufferGrowths += 1
        r.convertedCapacity = frames
        r.converted = .allocate(capacity: r.convertedCapacity * channels)
    }

    private func configureResampler() throws(CoreError) {
        if r.resampler != nil { swr_free(&r.resampler) }
        converterConfigurations += 1
        var inLayout = AVChannelLayout()
        if frame!.pointee.ch_layout.order == AV_CHANNEL_ORDER_UNSPEC || frame!.pointee.ch_layout.nb_channels == 0 {
            av_channel_layout_default(&inLayout, frame!.pointee.ch_layout.nb_channels > 0 ? frame!.pointee.ch_layout.nb_channels : Int32(channels))
        } else {
            av_channel_layout_copy(&inLayout, &frame!.pointee.ch_layout)
        }
        defer { av_channel_layout_uninit(&inLayout) }
        let format = AVSampleFormat(rawValue: frame!.pointee.format)
        let rate = frame!.pointee.sample_rate > 0 ? frame!.pointee.sample_rate : sampleRate
        let result = swr_alloc_set_opts2(&r.resampler, &r.outputLayout, AV_SAMPLE_FMT_FLT, sampleRate,
                                         &inLayout, format, rate, 0, nil)
        if result < 0 || swr_init(r.resampler) < 0 {
            let name = av_get_sample_fmt_name(format).map { String(cString: $0) } ?? "unknown"
            throw .decodeError("\(input.url): cannot convert the decoder's sample format (\(name)) to float")
        }
        av_channel_layout_uninit(&r.resamplerInput.layout)
        av_channel_layout_copy(&r.resamplerInput.layout, &frame!.pointee.ch_layout)
        r.resamplerInput.format = frame!.pointee.format
        r.resamplerInput.rate = frame!.pointee.sample_rate
    }
}
