// FFmpegTagReaderAdapter — specs/ports.md §TagReaderPort
import CFFmpeg
import Foundation
import HarmoniaCore

/// `TagReaderPort` on libavformat's metadata: ID3v1/ID3v2, Vorbis comments
/// (FLAC, Ogg Vorbis, Opus), MP4 atoms and APEv2, which FFmpeg normalises to
/// common keys. The technical fields come from the same decode session the
/// decoder uses, so `duration` is the exact decoded length.
///
/// ReplayGain: REPLAYGAIN_* comments and ID3 TXXX frames as they are; Opus
/// R128_TRACK_GAIN/R128_ALBUM_GAIN (Q7.8 dB relative to -23 LUFS) are moved to
/// the ReplayGain reference level (-18 LUFS) by adding 5 dB.
///
/// Threads: any, concurrently (each call opens its own session).
public struct FFmpegTagReaderAdapter: TagReaderPort {
    public init() {}

    public func read(url: String) throws(CoreError) -> TagBundle {
        try readWithStreamInfo(url: url).tags
    }

    /// The tags and the decoder's `StreamInfo` (bit depth, exact frame count)
    /// from one open of `url`, for callers that want both (`harmonia-play info`).
    /// - Throws: as `read(url:)`.
    public func readWithStreamInfo(url: String) throws(CoreError) -> (tags: TagBundle, stream: StreamInfo) {
        let session = try FFmpegDecodeSession(url: url, logger: NoopLoggerAdapter())
        defer { session.close() }
        return (Self.tags(of: session), session.info)
    }

    /// What `readWithStreamInfo(url:)` returns, from the container's headers
    /// alone: the same open, probe, stream analysis and first packet, the
    /// same exact length (`FFmpegDecodeSession.gaplessInfo`), but no decoder
    /// opened and no frame decoded or converted. For the library scan
    /// (specs/library.md §Scanner), where that decode was most of the cost of
    /// a file. A file whose headers are sound but whose first frame does not
    /// decode is read here and refused by `readWithStreamInfo` (and by playback).
    /// - Throws: as `read(url:)`, less the decoder's own failures.
    public func readHeaders(url: String) throws(CoreError) -> (tags: TagBundle, stream: StreamInfo) {
        // A plain FLAC or MP3 file's headers say it all (FLACHeaders, MP3Headers); anything else is FFmpeg's.
        if !url.contains("://") || url.hasPrefix("file://"), let file = TagFileSource(path: FFmpegInput.ffmpegLocation(of: url)),
           let read = FLACHeaders.read(from: file) ?? MP3Headers.read(from: file) {
            return read
        }
        return try ffmpegHeaders(url: url)
    }

    /// `readHeaders(url:)` by FFmpeg alone: what the native readers must equal.
    package func ffmpegHeaders(url: String) throws(CoreError) -> (tags: TagBundle, stream: StreamInfo) {
        let input = try FFmpegInput(url: url, headersOnly: true)
        defer { input.close() }
        _ = try FFmpegDecodeSession.decoder(for: input)
        // The first packet, as the decoder reads it: a file without one is refused here too.
        var packet = av_packet_alloc()
        guard packet != nil else { throw .ioError("\(url): out of memory allocating a packet") }
        defer { av_packet_free(&packet) }
        let first = try FFmpegDecodeSession.readFirstPacket(input: input, packet: packet!)
        av_packet_unref(packet)
        let totalFrames = FFmpegDecodeSession.gaplessInfo(of: input, firstPacketSkip: first.skip).totalFrames
        let info = FFmpegDecodeSession.streamInfo(of: input, totalFrames: totalFrames)
        return (Self.tags(of: input, info: info), info)
    }

    /// `readWithStreamInfo(url:)` over `bytes` in memory (a custom
    /// AVIOContext); `name` stands for the file in messages. For the fuzz targets.
    package func readWithStreamInfo(bytes: [UInt8], name: String) throws(CoreError) -> (tags: TagBundle, stream: StreamInfo) {
        let session = try FFmpegDecodeSession(url: name, logger: NoopLoggerAdapter(), memory: FFmpegMemorySource(bytes: bytes))
        defer { session.close() }
        var tags = Self.tags(of: session, lists: false)
        NativeTagLists.read(from: TagMemorySource(data: bytes))?.apply(to: &tags)
        return (tags, session.info)
    }

    /// The list fields alone, read from `bytes` as from a file's native tag
    /// blocks (`NativeTagLists`), nothing from FFmpeg. For the fuzz targets.
    package static func listTags(fromBytes bytes: [UInt8]) -> TagBundle {
        var tags = TagBundle()
        NativeTagLists.read(from: TagMemorySource(data: bytes))?.apply(to: &tags)
        return tags
    }

    /// TagBundle fields from metadata entries (key, value) in file order, as
    /// `read(url:)` maps a file's metadata. For the fuzz targets.
    package static func tags(fromMetadata entries: [(key: String, value: String)]) -> TagBundle {
        tags(from: MetadataLookup(entries))
    }

    /// The tags of an open session: what `read(url:)` returns, without
    /// opening anything (`FFmpegDecoderAdapter.tags(_:)` serves them too).
    /// For a local file, the list fields (artists, genres, …) come from the
    /// file's own tag blocks (`NativeTagLists`) when it has them: FFmpeg's
    /// dictionary joins or cuts lists. `lists: false` leaves them to the caller.
    static func tags(of session: FFmpegDecodeSession, lists: Bool = true) -> TagBundle {
        tags(of: session.input, info: session.info, lists: lists)
    }

    /// The tags of an open input whose stream is described by `info`.
    static func tags(of input: FFmpegInput, info: StreamInfo, lists: Bool = true) -> TagBundle {
        let url = input.url
        var tags = Self.tags(from: MetadataLookup(input.metadataEntries()))
        if lists, url.hasPrefix("file://") || !url.contains("://") {
            NativeTagLists.read(path: FFmpegInput.ffmpegLocation(of: url))?.apply(to: &tags)
        }

        tags.artworkData = Self.attachedPicture(input)
        var encoding: String? = nil
        if let descriptor = avcodec_descriptor_get(input.parameters.pointee.codec_id) {
            let props = descriptor.pointee.props
            encoding = props & AV_CODEC_PROP_LOSSLESS != 0 ? "lossless" : props & AV_CODEC_PROP_LOSSY != 0 ? "lossy" : nil
        }
        var fileSize: Int? = nil
        if let io = input.format?.pointee.pb, avio_size(io) > 0,
           !(url.hasPrefix("http:") || url.hasPrefix("https:")) {
            fileSize = Int(avio_size(io))
        }
        describe(&tags, stream: info, encoding: encoding, fileSize: fileSize)
        return tags
    }

    /// Sets the technical fields of `tags`: length, bit rate, rate, channels
    /// and codec from `stream`; "lossless"/"lossy"; the file's size.
    static func describe(_ tags: inout TagBundle, stream info: StreamInfo, encoding: String?, fileSize: Int?) {
        tags.duration = info.duration.isFinite ? info.duration : nil
        tags.bitrate = info.bitrate
        tags.sampleRate = info.sampleRate
        tags.channels = info.channels
        tags.codec = info.codec
        tags.encoding = encoding
        tags.fileSize = fileSize
    }

    /// Maps FFmpeg's normalised metadata keys to TagBundle fields.
    static func tags(from m: MetadataLookup) -> TagBundle {
        var tags = TagBundle()
        tags.title = m["title"]
        tags.artist = m["artist"]
        tags.album = m["album"]
        tags.albumArtist = m["album_artist", "albumartist", "album artist"]
        tags.composer = m["composer"]
        tags.genre = m["genre"]
        tags.comment = m["comment", "description"]
        tags.year = m["date", "year", "originaldate", "tdrc", "tyer"].flatMap(Self.leadingYear)

        let track = m["track", "tracknumber"].map(Self.numberAndTotal)
        tags.trackNumber = track?.number
        tags.trackTotal = track?.total ?? m["tracktotal", "totaltracks"].flatMap(Self.integer)
        let disc = m["disc", "discnumber"].map(Self.numberAndTotal)
        tags.discNumber = disc?.number
        tags.discTotal = disc?.total ?? m["disctotal", "totaldiscs"].flatMap(Self.integer)
        tags.bpm = m["tbpm", "bpm", "tmpo"].flatMap(Self.beatsPerMinute)

        tags.replayGainTrack = m["replaygain_track_gain"].flatMap(Self.decibels)
        tags.replayGainAlbum = m["replaygain_album_gain"].flatMap(Self.decibels)
        tags.replayGainTrackPeak = m["replaygain_track_peak"].flatMap(Self.peak)
        tags.replayGainAlbumPeak = m["replaygain_album_peak"].flatMap(Self.peak)
        if tags.replayGainTrack == nil {
            tags.replayGainTrack = m["r128_track_gain"].flatMap(Self.integer).flatMap(Self.replayGain(fromR128:))
        }
        if tags.replayGainAlbum == nil {
            tags.replayGainAlbum = m["r128_album_gain"].flatMap(Self.integer).flatMap(Self.replayGain(fromR128:))
        }

        let lyrics = m.lyrics()
        tags.lyrics = lyrics.isEmpty ? nil : lyrics
        return tags
    }

    /// R128 gain (Q7.8 fixed point, dB relative to -23 LUFS) to ReplayGain dB
    /// (relative to ReplayGain 2's -18 LUFS reference): one is 5 dB quieter.
    /// nil outside the field's 16-bit range (RFC 7845 §5.2.1).
    static func replayGain(fromR128 q78: Int) -> Double? {
        guard (Int(Int16.min)...Int(Int16.max)).contains(q78) else { return nil }
        return Double(q78) / 256 + 5
    }

    // Numbers read from tags are checked before use: specs/hardening.md §Clamping —
    // text that is not a finite number in the field's plausible range is no tag.

    /// The largest ReplayGain adjustment taken from a tag, in dB either way.
    static let maxReplayGainDB = 64.0
    /// The largest ReplayGain peak taken from a tag (+20 dBFS).
    static let maxReplayGainPeak = 10.0
    /// The largest tempo taken from a tag.
    static let maxBeatsPerMinute = 1000.0

    /// A tempo tag: a finite number in (0, 1000], rounded.
    static func beatsPerMinute(_ text: String) -> Int? {
        guard let value = decimal(text), value > 0, value <= maxBeatsPerMinute else { return nil }
        return Int(value.rounded())
    }

    /// A peak tag: a finite amplitude in [0, 10].
    static func peak(_ text: String) -> Double? {
        guard let value = decimal(text), value >= 0, value <= maxReplayGainPeak else { return nil }
        return value
    }

    /// "3/12" → (3, 12). Negative numbers are no number.
    static func numberAndTotal(_ text: String) -> (number: Int?, total: Int?) {
        let parts = text.split(separator: "/", maxSplits: 1)
        let count = { (text: Substring) in integer(text).flatMap { $0 >= 0 ? $0 : nil } }
        return (parts.first.flatMap(count), parts.count > 1 ? count(parts[1]) : nil)
    }

    /// A decimal integer; nil for text or a number beyond Int.
    static func integer<Text: StringProtocol>(_ text: Text) -> Int? { Int(trimmingWhitespace(text)) }

    /// A finite decimal number; nil for text, NaN and infinities.
    static func decimal<Text: StringProtocol>(_ text: Text) -> Double? {
        Double(trimmingWhitespace(text)).flatMap { $0.isFinite ? $0 : nil }
    }

    /// "-6.50 dB" → -6.5; nil beyond ±64 dB or not a finite number.
    static func decibels(_ text: String) -> Double? {
        var t = trimmingWhitespace(text)
        if t.lowercased().hasSuffix("db") { t = trimmingWhitespace(t.dropLast(2)) }
        guard let value = decimal(t), abs(value) <= maxReplayGainDB else { return nil }
        return value
    }

    /// "2024", "2024-05-17", "2024-05-17T10:00" → 2024.
    static func leadingYear(_ text: String) -> Int? {
        let digits = trimmingWhitespace(text).prefix(4)
        guard digits.count == 4, digits.allSatisfy(\.isNumber) else { return nil }
        return Int(digits)
    }

    /// `text` without the white space around it, as Foundation's
    /// `trimmingCharacters(in: .whitespaces)` trims (scalar by scalar: tab,
    /// the space separators and U+200B, CoreFoundation's set), without its
    /// bridging: a scan reads several numbers from each of 100,000 files.
    static func trimmingWhitespace<Text: StringProtocol>(_ text: Text) -> Substring {
        let scalars = Substring(text).unicodeScalars
        let isWhite = { (scalar: Unicode.Scalar) in
            switch scalar.value {
            case 0x09, 0x20, 0xA0, 0x1680, 0x2000...0x200B, 0x202F, 0x205F, 0x3000: true
            default: false
            }
        }
        guard let first = scalars.firstIndex(where: { !isWhite($0) }), let last = scalars.lastIndex(where: { !isWhite($0) }) else {
            return Substring()
        }
        return Substring(scalars[first...last])
    }

    /// The bytes of the first attached picture (cover art), if any.
    static func attachedPicture(_ input: FFmpegInput) -> Data? {
        guard let format = input.format else { return nil }
        for index in 0..<Int(format.pointee.nb_streams) {
            guard let stream = format.pointee.streams[index],
                  stream.pointee.disposition & AV_DISPOSITION_ATTACHED_PIC != 0 else { continue }
            let picture = stream.pointee.attached_pic
            guard let data = picture.data, picture.size > 0 else { continue }
            return Data(bytes: data, count: Int(picture.size))
        }
        return nil
    }
}

/// Case-insensitive lookup over metadata entries in file order; a key that
/// is present with an empty value yields "" (present and empty), absent → nil.
struct MetadataLookup {
    let entries: [(key: String, value: String)]
    /// The first value of each lowercased key, built once: a file's tags are
    /// looked up under some sixty names.
    private let firstValue: [String: String]

    init(_ entries: [(key: String, value: String)]) {
        self.entries = entries
        var first: [String: String] = [:]
        for entry in entries {
            let key = entry.key.lowercased()
            if first[key] == nil { first[key] = entry.value }
        }
        firstValue = first
    }

    /// The first value under any of `keys`, each given in lower case.
    subscript(_ keys: String...) -> String? {
        for key in keys {
            if let hit = firstValue[key] { return hit }
        }
        return nil
    }

    /// Lyrics entries: FFmpeg names ID3 USLT frames `lyrics-LANG` or
    /// `lyrics-DESC-LANG`; MP4 ©lyr and Vorbis LYRICS arrive as `lyrics`.
    func lyrics() -> [LyricsLanguageVariant] {
        entries.compactMap { entry in
            let key = entry.key.lowercased()
            guard key == "lyrics" || key == "unsyncedlyrics" || key.hasPrefix("lyrics-") else { return nil }
            var language: String? = nil
            if key.hasPrefix("lyrics-"), let last = key.split(separator: "-").last, last.count == 3 {
                language = String(last)
            }
            if language == "und" || language == "xxx" { language = nil }
            return LyricsLanguageVariant(languageCode: language, text: entry.value)
        }
    }
}
