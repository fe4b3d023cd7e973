// FFmpegInput: an opened container and its chosen audio stream. Shared by the
// decoder (which adds a codec) and the tag reader (which only reads metadata),
// so both map open failures to the same CoreError categories.
import CFFmpeg
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// An open libavformat input with one audio stream selected.
///
/// Not thread-safe: the owner serialises all calls. `close()` is idempotent.
final class FFmpegInput {
    let url: String
    private(set) var format: UnsafeMutablePointer<AVFormatContext>?
    /// Custom I/O: opened by us, closed by us (avformat_close_input leaves it).
    private var io: UnsafeMutablePointer<AVIOContext>?
    /// Set when the bytes come from a `ByteSource` (the engine's network
    /// policy) instead of FFmpeg's own protocols; it owns `io` then.
    let byteSourceIO: FFmpegByteSourceIO?
    private(set) var streamIndex: Int32 = -1
    /// Bounds the bytes read without a packet coming out (specs/hardening.md
    /// §Bounds) and carries the interrupt flag; outlives `format` and `io`,
    /// which call into it.
    let readGuard: FFmpegReadGuard
    /// Bytes in memory read instead of `url` (the fuzz targets); it owns its
    /// AVIOContext, so `io` stays nil for it.
    private let memory: FFmpegMemorySource?
    /// ICY titles the source reported ahead of the decoder, held until the
    /// demuxer reads the packet they apply to (`packetRead(at:)`).
    private let titles: StreamTitleQueue
    /// Where titles go once due (the adapter's network observers).
    private let networkObserver: (@Sendable (String, NetworkEvent) -> Void)?

    var stream: UnsafeMutablePointer<AVStream> { format!.pointee.streams[Int(streamIndex)]! }
    var parameters: UnsafeMutablePointer<AVCodecParameters> { stream.pointee.codecpar }

    /// Opens `url`, identifies its container by content (not by name alone),
    /// reads its headers and stream info, and selects the best audio stream.
    /// - Throws: CoreError as in specs/ports.md §open(url:).
    /// - Parameter network: how network URLs are read: through a
    ///   `ByteSourcePort` that handles them (the engine's policy), else by
    ///   FFmpeg's own protocols with `network`'s options.
    /// - Parameter interrupt: once set, the open and every later read fail
    ///   at FFmpeg's next check (specs/ports.md §DecoderPort (Interrupting I/O)).
    /// - Parameter memory: when given, its bytes are the source and `url`
    ///   only names them in messages.
    /// - Parameter headersOnly: skip FFmpeg's stream analysis (which decodes
    ///   frames) when the container's headers describe the stream completely
    ///   (`hasCompleteAudioHeader`): for reading tags, never for a decoder.
    /// - Parameter rawPCM: the source is raw PCM in this format unless it
    ///   starts with a WAV or AIFF header (FFmpeg's raw demuxer by name,
    ///   with its rate and channels; no probe can tell raw PCM's format).
    init(url: String, network: FFmpegNetworkSettings = FFmpegNetworkSettings(),
         interrupt: FFmpegInterruptFlag = FFmpegInterruptFlag(),
         memory: FFmpegMemorySource? = nil, headersOnly: Bool = false, rawPCM: RawPCMFormat? = nil) throws(CoreError) {
        _ = ffmpegProcessSettings
        guard !url.isEmpty else { throw .invalidArgument("url is empty: give a file path or an http(s) URL") }
        self.url = url
        self.readGuard = FFmpegReadGuard(interrupt: interrupt)
        self.memory = memory
        let titles = StreamTitleQueue()
        self.titles = titles
        networkObserver = network.observer
        let location = Self.ffmpegLocation(of: url)
        // --- special files and byte names (specs/inputs.md §Inputs (Special files, Names)) ---
        if memory == nil, url.hasPrefix("file://") || !url.contains("://") {
            try LocalFileCheck.requireRegularFile(location, url: url)
        }
        var interruptCallback = readGuard.interruptCallback
        // --- end special files ---

        // 1. Open the byte stream: missing files, permissions, network.
        var io: UnsafeMutablePointer<AVIOContext>? = nil
        if let memory {
            byteSourceIO = nil
            guard let context = memory.context else { throw .ioError("\(url): out of memory allocating the input") }
            io = context
        } else if let port = network.sourcePort, port.handles(url: url) {
            var sourceObserver: (@Sendable (NetworkEvent) -> Void)? = nil
            if let observe = network.observer {
                sourceObserver = { @Sendable event in
                    // A title arrives seconds before its audio is decoded: it waits for its packet.
                    if case .streamTitle(let title, let byte) = event { titles.add(title, byte: byte) } else { observe(url, event) }
                }
            }
            let source = try port.open(url: url, observer: sourceObserver, interrupted: { interrupt.isSet })
            do throws(CoreError) {
                byteSourceIO = try FFmpegByteSourceIO(source: source)
            } catch {
                source.cancel()
                throw error
            }
            io = byteSourceIO!.context
            // While FFmpeg probes and reads headers, no far seeks: a demuxer
            // would fetch the end of the file for a tag or a duration (a
            // second request); MP4 may need its index there (step 2).
            byteSourceIO!.seekable = false
            self.io = io
        } else {
            byteSourceIO = nil
            var options = network.ffmpegOptions(for: location)
            defer { av_dict_free(&options) }
            do {
                // The name's exact bytes (PathBytes), and the guard's interrupt callback.
                try check(PathBytes.withCString(location) { avio_open2(&io, $0, AVIO_FLAG_READ, &interruptCallback, &options) }, "avio_open2")
            } catch {
                throw error.coreError(url: url, while: "opening")
            }
            self.io = io
        }
        readGuard.io = io
        if let io, avio_size(io) == 0 {
            closeIO()
            throw .unsupported("\(url): the file is empty (0 bytes); it is not an audio file")
        }

        // 2. Identify the container from its content. A weak guess (from the
        //    file name alone) that then fails to open means "not media".
        var probed: UnsafePointer<AVInputFormat>? = nil
        var score = av_probe_input_buffer2(io, &probed, location, nil, 0, 0)
        // Raw PCM: unless its content is a WAV or AIFF header, FFmpeg's raw
        // demuxer for the format given (the probe rewound the input).
        var demuxerOptions: OpaquePointer? = nil
        defer { av_dict_free(&demuxerOptions) }
        if let rawPCM, !(score > AVPROBE_SCORE_EXTENSION && probed.map({ ["wav", "aiff"].contains(String(cString: $0.pointee.name)) }) == true) {
            probed = av_find_input_format(rawPCM.demuxerName)
            score = AVPROBE_SCORE_MAX
            av_dict_set(&demuxerOptions, "sample_rate", String(rawPCM.sampleRate), 0)
            av_dict_set(&demuxerOptions, "ch_layout", "\(rawPCM.channels)c", 0)
        }
        guard score >= 0, let probed else {
            closeIO()
            if let networkError { throw networkError }
            let error = FFmpegError(function: "av_probe_input_buffer2", code: score)
            if let e = error.posixErrno, e != EINVAL {
                throw error.coreError(url: url, while: "reading")
            }
            throw .unsupported("\(url): not an audio file FFmpeg recognises (unknown format)")
        }
        let recognisedByContent = score > AVPROBE_SCORE_EXTENSION
        let containerName = String(cString: probed.pointee.name)
        // An MP4's index may follow its media: a Range request fetches it.
        if containerName.hasPrefix("mov,") { byteSourceIO?.seekable = true }

        // 3. Read the headers with that demuxer.
        var format = avformat_alloc_context()
        format?.pointee.pb = io
        format?.pointee.flags |= AVFMT_FLAG_CUSTOM_IO
        format?.pointee.interrupt_callback = readGuard.interruptCallback
        // A network source's stream parameters come from its first bytes:
        // FFmpeg's default (5 MB, 5 s) reads about 22 KB of an MP3 first —
        // 11 s at 2 KB/s before a note; 8 KiB is enough for every container
        // we stream; specs/network.md §Decoding gives the figures.
        if byteSourceIO != nil { format?.pointee.probesize = Self.networkProbeBytes }
        // FFmpeg's wav demuxer asks for 16-bit PCM to be probed as a codec
        // (DTS or AC-3 hidden in PCM): the first read then runs every codec
        // probe over 32 packets — 7 ms of CPU for a 2 s WAV, most of the
        // time `info` spends on one (benchmarks/RESULTS.md §Library scan).
        // We open the decoder from the header before that read, so the
        // probe's answer was never used: skip it.
        if containerName == "wav" { format?.pointee.max_probe_packets = 0 }
        do {
            try check(avformat_open_input(&format, location, probed, &demuxerOptions), "avformat_open_input")
        } catch {
            // avformat_open_input freed `format`; the I/O is ours to close.
            closeIO()
            if let networkError { throw networkError }
            if readGuard.tripped { throw readGuard.nothingFound(url, containerName) }
            if !recognisedByContent {
                throw .unsupported("\(url): not an audio file FFmpeg recognises (it looked like \(containerName) only by its name)")
            }
            if let e = error.posixErrno, e != EINVAL {
                throw error.coreError(url: url, while: "reading the headers")
            }
            throw .decodeError("\(url): the \(containerName) headers are corrupt or truncated (\(error.text))")
        }
        self.format = format

        do {
            // PCM needs no analysis: its header says everything. FFmpeg would
            // read (and "decode") up to five seconds of it first — a 1 s WAV
            // cost about 12 ms more to open than a FLAC; now about the same.
            if !Self.isPCMWithCompleteHeader(format!), !(headersOnly && Self.hasCompleteAudioHeader(format!)) {
                try check(avformat_find_stream_info(format, nil), "avformat_find_stream_info")
            }
        } catch {
            close()
            if let networkError { throw networkError }
            if readGuard.tripped { throw readGuard.nothingFound(url, containerName) }
            throw .decodeError("\(url): could not read the stream parameters; the file is corrupt or truncated (\(error.text))")
        }

        byteSourceIO?.seekable = true  // headers read: seeks are the user's now

        // 4. The audio stream.
        let index = av_find_best_stream(format, AVMEDIA_TYPE_AUDIO, -1, -1, nil, 0)
        guard index >= 0 else {
            // Read before close() frees them.
            let streams = Int(format!.pointee.nb_streams)
            let audio = (0..<streams).filter { format!.pointee.streams[$0]!.pointee.codecpar.pointee.codec_type == AVMEDIA_TYPE_AUDIO }.count
            close()
            if readGuard.tripped { throw readGuard.nothingFound(url, containerName) }
            if audio > 0 {
                throw .unsupported("\(url): FFmpeg found \(audio) audio stream(s) in this \(containerName) file but no frame it can decode; it is not a playable audio file")
            }
            throw .unsupported("\(url): contains no audio stream (a \(containerName) file with \(streams) other stream(s))")
        }
        streamIndex = index
        let rate = parameters.pointee.sample_rate, channels = parameters.pointee.ch_layout.nb_channels
        let timeBase = stream.pointee.time_base
        guard rate > 0, channels > 0, timeBase.num > 0, timeBase.den > 0 else {
            close()
            throw .decodeError("\(url): the audio stream declares \(rate) Hz, \(channels) channel(s) and time base "
                + "\(timeBase.num)/\(timeBase.den); the file is corrupt")
        }
        guard channels <= Self.maxChannels else {
            close()
            throw .unsupported("\(url): the audio stream has \(channels) channels; at most \(Self.maxChannels) are supported")
        }
        guard rate <= Self.maxSampleRate else {
            close()
            throw .unsupported("\(url): the audio stream's sample rate is \(rate) Hz; at most \(Self.maxSampleRate) Hz is supported")
        }
    }

    deinit { close() }

    /// The most channels a stream may have (libswresample's limit): more is `unsupported`.
    static let maxChannels: Int32 = 64
    /// The highest sample rate accepted (PulseAudio's limit, 16 × 48 kHz): higher is `unsupported`.
    static let maxSampleRate: Int32 = 768_000

    /// Whether every stream is PCM with its rate, channels and sample size
    /// known from the header (WAV, AIFF, CAF, raw-header formats).
    static func isPCMWithCompleteHeader(_ format: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        let count = Int(format.pointee.nb_streams)
        guard count > 0, let streams = format.pointee.streams else { return false }
        for i in 0..<count {
            guard let parameters = streams[i]?.pointee.codecpar?.pointee else { return false }
            let id = parameters.codec_id.rawValue
            guard parameters.codec_type == AVMEDIA_TYPE_AUDIO,
                  id >= AV_CODEC_ID_PCM_S16LE.rawValue, id < AV_CODEC_ID_ADPCM_IMA_QT.rawValue,
                  parameters.sample_rate > 0, parameters.ch_layout.nb_channels > 0,
                  av_get_bits_per_sample(parameters.codec_id) > 0 else { return false }
        }
        return true
    }

    /// Whether the headers alone describe the one audio stream completely:
    /// a FLAC whose STREAMINFO gives its rate, channels and length, so tags
    /// can be read without that analysis. Other containers keep it: without
    /// it an Opus file's bit rate and a truncated WavPack's error changed
    /// (FFmpegTagReaderAdapterTests, BadInputTests).
    static func hasCompleteAudioHeader(_ format: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        guard format.pointee.nb_streams == 1, let stream = format.pointee.streams?[0],
              let parameters = stream.pointee.codecpar?.pointee else { return false }
        return parameters.codec_type == AVMEDIA_TYPE_AUDIO && parameters.codec_id == AV_CODEC_ID_FLAC
            && parameters.sample_rate > 0 && parameters.ch_layout.nb_channels > 0 && stream.pointee.duration > 0
    }

    /// Bytes `avformat_find_stream_info` may read from a network source.
    static let networkProbeBytes: Int64 = 8 << 10

    /// Closes the container and the I/O. Idempotent.
    func close() {
        if format != nil { avformat_close_input(&format) }
        closeIO()
        memory?.release()
    }

    /// Closes the byte stream (ours when it is a ByteSource's). Idempotent.
    private func closeIO() {
        if let byteSourceIO {
            byteSourceIO.free()
            io = nil
        } else if io != nil {
            avio_closep(&io)
        }
    }

    /// The demuxer delivered a packet that starts at byte `position` (-1:
    /// unknown, then the reader's position counts): titles that apply from
    /// there on are due now, and go to the network observer. Cheap when
    /// there are none (one lock).
    func packetRead(at position: Int64) {
        guard let networkObserver, let byteSourceIO else { return }
        for (title, byte) in titles.take(upTo: position >= 0 ? position : byteSourceIO.source.position) {
            networkObserver(url, .streamTitle(title, byte: byte))
        }
    }

    /// The network source's own error for the last failed read, which says
    /// what happened better than FFmpeg's code for it.
    var networkError: CoreError? { byteSourceIO?.error }

    /// The container's short name (`"flac"`, `"mov,mp4,m4a,3gp,3g2,mj2"`, …).
    var containerName: String { String(cString: format!.pointee.iformat.pointee.name) }

    /// Container-level then stream-level metadata, as (key, value) in order.
    func metadataEntries() -> [(key: String, value: String)] {
        var entries: [(String, String)] = []
        for dictionary in [format!.pointee.metadata, stream.pointee.metadata] {
            var entry: UnsafeMutablePointer<AVDictionaryEntry>? = nil
            while let next = av_dict_get(dictionary, "", entry, AV_DICT_IGNORE_SUFFIX) {
                entries.append((String(cString: next.pointee.key), String(cString: next.pointee.value)))
                entry = next
            }
        }
        return entries
    }

    /// The first value of `key` (case-insensitive) in container then stream metadata.
    func metadata(_ key: String) -> String? {
        for dictionary in [format!.pointee.metadata, stream.pointee.metadata] {
            if let entry = av_dict_get(dictionary, key, nil, 0) { return String(cString: entry.pointee.value) }
        }
        return nil
    }

    /// The source's size in bytes, when known (local files, most http).
    var size: Int64? {
        guard let io = format?.pointee.pb ?? self.io else { return nil }
        let size = avio_size(io)
        return size > 0 ? size : nil
    }

    /// Reads `count` bytes at byte `offset` of the source, restoring the
    /// demuxer's position afterwards. Fewer bytes at the end of the file.
    func bytes(at offset: Int64, count: Int) -> [UInt8] {
        guard let io = format?.pointee.pb ?? self.io else { return [] }
        let saved = avio_tell(io)
        defer {
            avio_seek(io, saved, SEEK_SET)
            readGuard.packetDelivered()  // our own reads are bounded by `count`
        }
        guard avio_seek(io, offset, SEEK_SET) >= 0 else { return [] }
        var buffer = [UInt8](repeating: 0, count: count)
        let read = buffer.withUnsafeMutableBufferPointer { avio_read(io, $0.baseAddress, Int32(count)) }
        return read > 0 ? Array(buffer.prefix(Int(read))) : []
    }

    /// The MP3 gapless header of this input, when it is an MP3 with one.
    func lameGaplessInfo() -> LAMEGaplessInfo? {
        guard containerName == "mp3" else { return nil }
        let start = Int64(LAMEGaplessInfo.id3v2Size(bytes(at: 0, count: 10)))
        let head = bytes(at: start, count: 4096)
        // The first frame normally starts right after the tag; allow a little junk.
        guard let sync = head.indices.first(where: { $0 + 1 < head.count && head[$0] == 0xFF && head[$0 + 1] & 0xE0 == 0xE0 }) else { return nil }
        return LAMEGaplessInfo(firstFrame: Array(head[sync...]))
    }

    /// The frames of this MP4/QuickTime input's audio track by its own boxes
    /// (`ContainerFacts.mp4EditedFrames`): nil for other containers, without
    /// a single plain edit, or when the boxes cannot be read.
    func mp4EditedFrames() -> Int64? {
        guard containerName.hasPrefix("mov,"), let moov = movieBox(),
              let track = ContainerFacts.mp4TrackTiming(moov: moov, trackID: Int(stream.pointee.id)) else { return nil }
        return ContainerFacts.mp4EditedFrames(track, sampleRate: Int64(parameters.pointee.sample_rate))
    }

    /// The whole top-level `moov` box, found by walking the top-level box
    /// headers (before or after `mdat`); nil when absent, malformed or over 64 MiB.
    private func movieBox() -> [UInt8]? {
        var offset: Int64 = 0
        for _ in 0..<1024 {
            let header = bytes(at: offset, count: 16)
            guard header.count >= 8 else { return nil }
            let size32 = UInt32(header[0]) << 24 | UInt32(header[1]) << 16 | UInt32(header[2]) << 8 | UInt32(header[3])
            var size = Int64(size32)
            if size32 == 1 {
                guard header.count >= 16 else { return nil }
                size = header[8..<16].reduce(Int64(0)) { $0 << 8 | Int64($1) }
            } else if size32 == 0 {
                guard let total = self.size else { return nil }
                size = total - offset
            }
            guard size >= 8 else { return nil }
            if header[4..<8].elementsEqual("moov".utf8) {
                guard size <= 64 << 20 else { return nil }
                let box = bytes(at: offset, count: Int(size))
                return box.count == Int(size) ? box : nil
            }
            // A forged 64-bit size: past the end of any file.
            let (next, overflow) = offset.addingReportingOverflow(size)
            guard !overflow else { return nil }
            offset = next
        }
        return nil
    }

    /// `file://` URLs become paths; anything else is passed to FFmpeg as is.
    static func ffmpegLocation(of url: String) -> String {
        if url.hasPrefix("file://") {
            let path = String(url.dropFirst("file://".count))
            return path.removingPercentEncodingIfPossible
        }
        return url
    }
}

private extension String {
    /// Decodes %XX escapes of a file URL's path; leaves malformed ones alone.
    var removingPercentEncodingIfPossible: String {
        guard contains("%") else { return self }
        var bytes: [UInt8] = []
        var iterator = PathBytes.bytes(self).makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%"), let h = iterator.next(), let l = iterator.next(),
               let value = UInt8(String(decoding: [h, l], as: UTF8.self), radix: 16) {
                bytes.append(value)
            } else {
                bytes.append(byte)
            }
        }
        return PathBytes.string(bytes)  // lossless: %FF stays byte 0xFF
    }
}

/// How an FFmpeg input reads network URLs — specs/network.md §Decoding.
struct FFmpegNetworkSettings: Sendable {
    /// The engine's network policy, for the URLs it handles.
    var sourcePort: (any ByteSourcePort)?
    /// Receives the network events of every source opened (its URL, the event).
    var observer: (@Sendable (String, NetworkEvent) -> Void)?
    /// For URLs FFmpeg opens itself (no port, or one that leaves them, as
    /// HLS playlists): seconds without data before a read fails.
    var timeout: Double = FFmpegDecoderAdapter.defaultNetworkTimeout
    var verifyTLS = true
    var headers: [String] = []

    /// FFmpeg protocol options for `location` when FFmpeg reads it itself:
    /// a bounded reconnect (not FFmpeg's two-minute default), the timeout,
    /// certificate verification against the system store, the headers.
    func ffmpegOptions(for location: String) -> OpaquePointer? {
        var options: OpaquePointer? = nil
        let lower = location.lowercased()
        guard lower.hasPrefix("http:") || lower.hasPrefix("https:") else { return nil }
        av_dict_set(&options, "rw_timeout", String(Int64(clampingFrames: min(timeout, 1e6) * 1e6)), 0)
        av_dict_set(&options, "reconnect", "1", 0)
        av_dict_set(&options, "reconnect_delay_max", "2", 0)
        if verifyTLS {
            av_dict_set(&options, "tls_verify", "1", 0)
            av_dict_set(&options, "ca_file", "/etc/ssl/certs/ca-certificates.crt", 0)
        }
        if !headers.isEmpty { av_dict_set(&options, "headers", headers.map { $0 + "\r\n" }.joined(), 0) }
        return options
    }
}

/// ICY titles waiting for their audio. Threads: `add` from the source's
/// transfer thread, `take` from the decoder's.
final class StreamTitleQueue: @unchecked Sendable {
    private let lock = ConditionLock()
    private var waiting: [(String, Int64)] = []

    func add(_ title: String, byte: Int64) { lock.withLock { waiting.append((title, byte)) } }

    /// The titles that apply from `byte` or before, in order; removed.
    func take(upTo byte: Int64) -> [(String, Int64)] {
        lock.withLock {
            guard let first = waiting.first, first.1 <= byte else { return [] }
            let due = waiting.prefix { $0.1 <= byte }
            waiting.removeFirst(due.count)
            return Array(due)
        }
    }
}
