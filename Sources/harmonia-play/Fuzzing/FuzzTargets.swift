// The fuzz targets — specs/testing.md §Fuzzing
//
// One entry function per target, called with one input by both the libFuzzer
// build (FuzzDriver, `make fuzz`) and the regression replay that `make test`
// runs over Tests/Fixtures/fuzz/<target>/ (FuzzRegressionTests), so a fixed
// crasher cannot come back unnoticed. A target's finding is a trap: a Swift
// runtime trap in our code, an ASan report, or one of the invariants below.
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaLibrary
import HarmoniaFFmpeg

enum FuzzTarget: String, CaseIterable, Sendable {
    /// The bytes as a file, opened from memory by the FFmpeg decoder adapter:
    /// read to the end in chunks, seek to positions taken from the bytes,
    /// read again, read the tags.
    case decode
    /// The bytes as a file through the tag reader, `info`'s output and the
    /// ReplayGain factor.
    case tags
    /// The bytes as a file through the parsers of native tag blocks alone
    /// (Vorbis comments, ID3v2, MP4 ilst, APEv2: the value lists), then as
    /// `tags` uses the result; no FFmpeg, so many more inputs a second.
    case taglists
    /// The bytes as `key=value` metadata lines through the tag mapping alone
    /// (what FFmpeg's metadata becomes), then as `tags` uses the result.
    case metadata
    /// The bytes as text through the M3U, PLS and CUE parsers.
    case playlist
    /// The bytes as control-protocol request lines, dispatched in order to a
    /// playback service with a scripted decoder and a silent output.
    case control

    /// Runs the target on one input. Returns a one-line account of what the
    /// input led to (for the replay's log). Traps when an invariant breaks.
    func run(_ data: [UInt8]) -> String {
        switch self {
        case .decode: FuzzTargets.decode(data)
        case .tags: FuzzTargets.tags(data)
        case .taglists: FuzzTargets.tagLists(data)
        case .metadata: FuzzTargets.metadata(data)
        case .playlist: FuzzTargets.playlist(data)
        case .control: FuzzTargets.control(data)
        }
    }
}

enum FuzzTargets {
    /// The name an input from memory goes by in messages.
    static let inputName = "fuzz-input"
    /// Frames one read pass may deliver before it stops: bounds the work an
    /// input that declares hours of audio can make, not what is checked.
    static let maxFramesPerPass: Int64 = 1 << 21

    // MARK: decode

    static func decode(_ data: [UInt8]) -> String {
        let decoder = FFmpegDecoderAdapter()
        let handle: DecodeHandle
        do {
            handle = try decoder.open(bytes: data, name: inputName)
        } catch {
            return outcome(error)
        }
        defer {
            decoder.close(handle)
            precondition(decoder.openSessionCount == 0, "close left a session open")
        }
        guard let info = try? decoder.info(handle) else { preconditionFailure("info failed on an open handle") }
        precondition(info.channels > 0 && info.sampleRate > 0, "opened with \(info.channels) channels at \(info.sampleRate) Hz")
        var choices = ByteChoices(data)
        // A chunk size from the bytes, so reads split frames in many ways.
        let chunk = 1 + Int(choices.next() % 4096)
        var buffer = [Float](repeating: 0, count: chunk * info.channels)

        var summary = "\(info.codec ?? "?") \(info.channels) ch"
        let (straight, straightEnd) = readPass(decoder, handle, &buffer, chunk: chunk, from: 0)
        summary += ", read \(straight) frames" + (straightEnd.map { " then \($0)" } ?? "")

        // Seeks inside the known length (or what was read), its end, and past it.
        let length = info.totalFrames ?? straight
        var targets: [Int64] = [0, length]
        for _ in 0..<3 where length > 0 { targets.append(Int64(choices.next64() % UInt64(length + 1))) }
        if let total = info.totalFrames { targets.append(total + 1 + Int64(choices.next() % 1000)) }
        targets.append(-1 - Int64(choices.next()))
        for target in targets {
            do {
                try decoder.seek(handle, toFrame: target)
            } catch {
                summary += "; seek \(target): \(outcome(error))"
                if target < 0 || (info.totalFrames.map { target > $0 } ?? false) {
                    precondition(error.category == .invalidArgument, "seek to \(target) failed as \(error.category)")
                }
                continue
            }
            precondition(target >= 0, "seek to \(target) succeeded")
            let position = try? decoder.position(handle)
            precondition(position == target, "seek to \(target) left the position at \(position.map(String.init) ?? "nil")")
            let (frames, end) = readPass(decoder, handle, &buffer, chunk: chunk, from: target, limit: 8)
            summary += "; seek \(target): \(frames) frames" + (end.map { " then \($0)" } ?? "")
        }
        _ = try? decoder.tags(handle)
        return summary
    }

    /// Reads chunks (at most `limit` of them) until the end, an error or the
    /// frame cap. Returns the frames read and how the pass ended, when not at the cap.
    private static func readPass(_ decoder: FFmpegDecoderAdapter, _ handle: DecodeHandle, _ buffer: inout [Float],
                                 chunk: Int, from start: Int64, limit: Int = .max) -> (Int64, String?) {
        var total: Int64 = 0
        for _ in 0..<limit {
            guard total < maxFramesPerPass else { return (total, nil) }
            let frames: Int
            do {
                frames = try buffer.withUnsafeMutableBufferPointer { b throws(CoreError) in
                    try decoder.read(handle, into: b.baseAddress!, maxFrames: chunk)
                }
            } catch {
                return (total, outcome(error))
            }
            precondition((0...chunk).contains(frames), "read returned \(frames) frames for at most \(chunk)")
            total += Int64(frames)
            let position = try? decoder.position(handle)
            precondition(position == start + total, "position \(position.map(String.init) ?? "nil") after reading \(total) frames from \(start)")
            if frames == 0 { return (total, "end") }
        }
        return (total, nil)
    }

    // MARK: tags

    static func tags(_ data: [UInt8]) -> String {
        do {
            let (tags, stream) = try FFmpegTagReaderAdapter().readWithStreamInfo(bytes: data, name: inputName)
            use(tags: tags, stream: stream)
            return "tags of a \(stream.codec ?? "?") stream"
        } catch {
            return outcome(error)
        }
    }

    // MARK: metadata

    static func metadata(_ data: [UInt8]) -> String {
        let text = String(decoding: data, as: UTF8.self)
        let entries = text.split(separator: "\n", omittingEmptySubsequences: true).prefix(256).map { line in
            let parts = line.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (key: String(parts[0]), value: parts.count > 1 ? String(parts[1]) : "")
        }
        let tags = FFmpegTagReaderAdapter.tags(fromMetadata: entries)
        use(tags: tags, stream: StreamInfo(totalFrames: 44_100, sampleRate: 44_100, channels: 2, bitDepth: 16, codec: "pcm_s16le"))
        return "\(entries.count) metadata entries"
    }

    // MARK: taglists

    static func tagLists(_ data: [UInt8]) -> String {
        let tags = FFmpegTagReaderAdapter.listTags(fromBytes: data)
        for list in [tags.artists, tags.albumArtists, tags.composers, tags.genres, tags.performers, tags.musicBrainz.artistIDs] {
            precondition(list.count <= 4096, "more values than the bound: \(list.count)")
        }
        use(tags: tags, stream: StreamInfo(totalFrames: 44_100, sampleRate: 44_100, channels: 2, bitDepth: 16, codec: "flac"))
        return "\(tags.artists.count) artists, \(tags.genres.count) genres"
    }

    /// Everything the player does with a file's tags: `info` in both forms and the ReplayGain factor.
    private static func use(tags: TagBundle, stream: StreamInfo) {
        _ = InfoCommand.readable(url: inputName, tags: tags, stream: stream)
        _ = JSONValue.object(EventJSON.info(url: inputName, tags: tags, stream: stream)).serialized
        for mode in [ReplayGainMode.track, .album] {
            _ = ReplayGainSettings(mode: mode, preampDB: 0, preventClipping: true).linearGain(for: tags)
        }
    }

    // MARK: playlist

    static func playlist(_ data: [UInt8]) -> String {
        let text = TextFile.decode(Data(data))
        let playlist = "/music/list"
        let m3u = PlaylistParsers.m3u(text, playlist: playlist + ".m3u")
        var summary = "m3u \(m3u.count)"
        do {
            summary += ", pls \(try PlaylistParsers.pls(text, playlist: playlist + ".pls").count)"
        } catch {
            summary += ", pls: \(outcome(error))"
        }
        do {
            let sheet = try CueSheetFileAdapter.parse(text: text, path: playlist + ".cue")
            let tracks = sheet.queueTracks()
            for track in tracks {
                if let start = track.start, let end = track.end {
                    precondition(start <= end, "a CUE track starts at \(start) after its end \(end)")
                }
            }
            summary += ", cue \(tracks.count)"
        } catch {
            summary += ", cue: \(outcome(error))"
        }
        _ = m3u.map(\.location).sorted(by: NaturalOrder.less)
        return summary
    }

    // MARK: control

    static func control(_ data: [UInt8]) -> String {
        let service = DefaultPlaybackService(decoder: FuzzDecoder(), output: NullAudioOutput(pace: .manual), clock: ManualClock())
        let dispatcher = ControlDispatcher(service: service, actions: PlayerActions(service: service),
                                           readInfo: FuzzDecoder.info(url:))
        var replies = 0
        for line in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).prefix(64) {
            let outcome = dispatcher.handle(line: Array(line))
            let reply = outcome.reply.serialized
            precondition(!reply.contains("\n"), "a reply spans lines: \(reply)")
            guard case .object = try? JSONValue.parse(Array(reply.utf8)) else {
                preconditionFailure("a reply is not a JSON object: \(reply)")
            }
            replies += 1
            if outcome.quit { break }
        }
        service.stop()
        let status = dispatcher.status().serialized
        return "\(replies) replies; \(status.prefix(80))"
    }

    // MARK: Helpers

    /// `category: message`, checking that the message is one line and says something.
    static func outcome(_ error: CoreError) -> String {
        precondition(!error.message.isEmpty, "a \(error.category) error without a message")
        precondition(!error.message.contains(where: \.isNewline), "a multi-line error: \(error.message)")
        return "\(error.category.rawValue)"
    }
}

/// Deterministic choices taken from an input's bytes (its end first, where
/// the fuzzer's changes affect the file's meaning least).
struct ByteChoices {
    private let data: [UInt8]
    private var index: Int

    init(_ data: [UInt8]) {
        self.data = data
        index = data.count
    }

    /// Two bytes, 0 once the input is used up.
    mutating func next() -> UInt16 {
        (0..<2).reduce(UInt16(0)) { value, _ in
            guard index > 0 else { return value << 8 }
            index -= 1
            return value << 8 | UInt16(data[index])
        }
    }

    mutating func next64() -> UInt64 {
        (0..<4).reduce(UInt64(0)) { value, _ in value << 16 | UInt64(next()) }
    }
}
