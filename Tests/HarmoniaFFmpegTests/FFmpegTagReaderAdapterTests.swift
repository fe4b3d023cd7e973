// FFmpegTagReaderAdapter against tagged fixtures: specs/ports.md §TagReaderPort.
import Foundation
import HarmoniaCore
@testable import HarmoniaFFmpeg
import HarmoniaTestSupport
import Testing

@Suite("FFmpegTagReaderAdapter")
struct FFmpegTagReaderTests {
    /// Tags FFmpeg 5.1 does not expose although the file carries them.
    static func unreadable(_ fixture: Fixture) -> Set<String> {
        fixture.container == "mp4" ? ["bpm"] : []  // MP4 'tmpo' is not exported
    }

    @Test("every tag in the file is read, and no other", arguments: Fixtures.all)
    func tags(fixture: Fixture) throws {
        let tags = try FFmpegTagReaderAdapter().read(url: fixture.path)
        let expected = (fixture.tags ?? [:]).filter { !Self.unreadable(fixture).contains($0.key) }
        func check<T: Equatable>(_ key: String, _ actual: T?, _ value: (TagValue) -> T?) {
            if let want = expected[key] {
                #expect(actual == value(want), "\(fixture): \(key)")
            } else {
                #expect(actual == nil, "\(fixture): \(key) should be nil, got \(String(describing: actual))")
            }
        }
        check("title", tags.title, \.string)
        check("artist", tags.artist, \.string)
        check("album", tags.album, \.string)
        check("albumArtist", tags.albumArtist, \.string)
        check("composer", tags.composer, \.string)
        check("genre", tags.genre, \.string)
        check("year", tags.year, \.int)
        check("trackNumber", tags.trackNumber, \.int)
        check("trackTotal", tags.trackTotal, \.int)
        check("discNumber", tags.discNumber, \.int)
        check("discTotal", tags.discTotal, \.int)
        check("bpm", tags.bpm, \.int)
        check("replayGainTrack", tags.replayGainTrack, \.double)
        check("replayGainAlbum", tags.replayGainAlbum, \.double)
        check("replayGainTrackPeak", tags.replayGainTrackPeak, \.double)
        check("replayGainAlbumPeak", tags.replayGainAlbumPeak, \.double)
        check("comment", tags.comment, \.string)
        check("artworkBytes", tags.artworkData?.count, \.int)
        check("lyrics", tags.lyrics?.first?.text, \.string)
        if let lyrics = tags.lyrics {
            #expect(lyrics.count == 1)
            #expect(lyrics[0].languageCode == (fixture.container == "mp3" ? "eng" : nil), "\(fixture)")
        }
        #expect(tags.isEmpty == expected.isEmpty)
    }

    @Test("DecoderPort.tags of an open handle equals the tag reader's bundle, every field, cover art included", arguments: Fixtures.all)
    func decoderTags(fixture: Fixture) throws {
        let decoder = FFmpegDecoderAdapter()
        let handle = try decoder.open(url: fixture.path)
        let fromDecoder = try #require(try decoder.tags(handle), "\(fixture): the FFmpeg decoder gives tags")
        #expect(fromDecoder == (try FFmpegTagReaderAdapter().read(url: fixture.path)), "\(fixture)")
        decoder.close(handle)
        #expect(throws: CoreError.self) { try decoder.tags(handle) }
    }

    @Test("readHeaders (the library scan's, no audio decoded) gives what readWithStreamInfo gives, every field",
          arguments: Fixtures.all)
    func headersEqualFullRead(fixture: Fixture) throws {
        let reader = FFmpegTagReaderAdapter()
        let headers = try reader.readHeaders(url: fixture.path)
        let full = try reader.readWithStreamInfo(url: fixture.path)
        #expect(headers.stream == full.stream, "\(fixture)")
        #expect(headers.tags == full.tags, "\(fixture)")
        #expect(headers.stream.totalFrames == Int64(fixture.frames), "\(fixture)")
    }

    @Test("technical fields come from the stream: exact duration, rate, channels, codec, size", arguments: Fixtures.all)
    func technical(fixture: Fixture) throws {
        let tags = try FFmpegTagReaderAdapter().read(url: fixture.path)
        #expect(tags.duration == Double(fixture.frames) / Double(fixture.sampleRate))
        #expect(tags.sampleRate == Double(fixture.sampleRate))
        #expect(tags.channels == fixture.channels)
        #expect(tags.codec == fixture.codec)
        #expect(tags.encoding == (fixture.lossless ? "lossless" : "lossy"))
        let size = try FileManager.default.attributesOfItem(atPath: fixture.path)[.size] as? Int
        #expect(tags.fileSize == size)
        #expect((tags.bitrate ?? 0) > 0)
    }

    @Test("the cover art is the embedded PNG, the same bytes from every container")
    func artwork() throws {
        var covers: [Data] = []
        for name in ["flac_s16_stereo_44k.flac", "mp3_cbr_stereo_44k.mp3", "aac_stereo_44k.m4a",
                     "opus_stereo_48k.opus", "vorbis_stereo_44k.ogg"] {
            let art = try FFmpegTagReaderAdapter().read(url: Fixtures.named(name).path).artworkData
            #expect(art?.count == Fixtures.manifest.artwork.bytes, "\(name)")
            #expect(art?.prefix(8) == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]), "\(name): a PNG")
            if let art { covers.append(art) }
        }
        #expect(covers.count == 5 && Set(covers).count == 1)
    }
}

@Suite("Tag and header parsing")
struct TagParsingTests {
    @Test("number/total, decibels, years, R128")
    func fieldParsers() {
        #expect(FFmpegTagReaderAdapter.numberAndTotal("3/12") == (3, 12))
        #expect(FFmpegTagReaderAdapter.numberAndTotal(" 7 ") == (7, nil))
        #expect(FFmpegTagReaderAdapter.numberAndTotal("x/2") == (nil, 2))
        #expect(FFmpegTagReaderAdapter.decibels("-6.50 dB") == -6.5)
        #expect(FFmpegTagReaderAdapter.decibels("+1.2dB") == 1.2)
        #expect(FFmpegTagReaderAdapter.decibels("loud") == nil)
        #expect(FFmpegTagReaderAdapter.leadingYear("2024-05-17") == 2024)
        #expect(FFmpegTagReaderAdapter.leadingYear("1999") == 1999)
        #expect(FFmpegTagReaderAdapter.leadingYear("99") == nil)
        // R128 is Q7.8 dB relative to -23 LUFS; ReplayGain's reference is 5 dB louder.
        #expect(FFmpegTagReaderAdapter.replayGain(fromR128: -1792) == -2.0)
        #expect(FFmpegTagReaderAdapter.replayGain(fromR128: 0) == 5.0)
    }

    @Test("white space around a number is trimmed as Foundation's .whitespaces trims it")
    func whitespaceAsFoundationTrimsIt() {
        let pieces = ["7", " ", "\t", "\u{A0}", "\u{2003}", "\u{3000}", "\n", "\u{301}", "x", "\u{200B}", "\u{1680}", "\u{202F}"]
        var texts = [""]
        var last = [""]
        for _ in 1...4 {
            last = last.flatMap { prefix in pieces.map { prefix + $0 } }
            texts += last
        }
        for text in texts {
            #expect(String(FFmpegTagReaderAdapter.trimmingWhitespace(text)) == text.trimmingCharacters(in: .whitespaces),
                    "\(text.unicodeScalars.map(\.value))")
        }
        #expect(FFmpegTagReaderAdapter.numberAndTotal("\u{A0}3 /\t12\u{3000}") == (3, 12))
    }

    @Test("numbers in tags that are not finite or not plausible are no tag (specs/hardening.md §Clamping)")
    func hostileNumbers() {
        for text in ["nan", "inf", "-inf", "1e400", "99999999999999999999999", "-5", "0", "1001"] {
            #expect(FFmpegTagReaderAdapter.beatsPerMinute(text) == nil, "BPM \(text)")
        }
        #expect(FFmpegTagReaderAdapter.beatsPerMinute("128.4") == 128)
        for text in ["nan dB", "inf dB", "-inf", "1e23 dB", "+64.5 dB", "-1e400 dB"] {
            #expect(FFmpegTagReaderAdapter.decibels(text) == nil, "gain \(text)")
        }
        #expect(FFmpegTagReaderAdapter.decibels("-64 dB") == -64)
        for text in ["nan", "-0.5", "1e-300x", "11", "inf"] {
            #expect(FFmpegTagReaderAdapter.peak(text) == nil, "peak \(text)")
        }
        #expect(FFmpegTagReaderAdapter.peak("0.98") == 0.98)
        #expect(FFmpegTagReaderAdapter.replayGain(fromR128: 32768) == nil)
        #expect(FFmpegTagReaderAdapter.replayGain(fromR128: -32769) == nil)
        #expect(FFmpegTagReaderAdapter.numberAndTotal("99999999999999999999999/-3") == (nil, nil))
        let tags = FFmpegTagReaderAdapter.tags(from: MetadataLookup([
            ("BPM", "nan"), ("REPLAYGAIN_TRACK_GAIN", "inf dB"), ("REPLAYGAIN_TRACK_PEAK", "nan"),
            ("R128_ALBUM_GAIN", "99999999999999999999"), ("TRACK", "-1/1e9"),
        ]))
        #expect(tags.bpm == nil && tags.replayGainTrack == nil && tags.replayGainTrackPeak == nil)
        #expect(tags.replayGainAlbum == nil && tags.trackNumber == nil && tags.trackTotal == nil)
    }

    @Test("missing tags are nil; a present empty tag is the empty string")
    func nilVersusEmpty() {
        let tags = FFmpegTagReaderAdapter.tags(from: MetadataLookup([("title", ""), ("ARTIST", "A")]))
        #expect(tags.title == "")
        #expect(tags.artist == "A")
        #expect(tags.album == nil)
        #expect(tags.lyrics == nil)
    }

    @Test("lyrics keys: language from USLT, und is nil")
    func lyrics() {
        let lookup = MetadataLookup([("lyrics-eng", "one"), ("lyrics-desc-jpn", "two"), ("lyrics-und", "three"), ("LYRICS", "four")])
        #expect(lookup.lyrics() == [
            LyricsLanguageVariant(languageCode: "eng", text: "one"),
            LyricsLanguageVariant(languageCode: "jpn", text: "two"),
            LyricsLanguageVariant(languageCode: nil, text: "three"),
            LyricsLanguageVariant(languageCode: nil, text: "four"),
        ])
    }

    @Test("iTunSMPB")
    func iTunSMPB() {
        let info = ITunesGaplessInfo(" 00000000 00000840 000001CA 00000000003F31F6 00000000 00000000")
        #expect(info == nil || (info!.encoderDelay == 2112 && info!.endPadding == 458 && info!.originalFrames == 0x3F31F6))
        #expect(info != nil)
        #expect(ITunesGaplessInfo("garbage") == nil)
        #expect(ITunesGaplessInfo(" 00000000 00000840 000001CA 0000000000000000") == nil)  // no length
    }

    @Test("LAME header: delay and padding give the exact length")
    func lame() {
        var frame = [UInt8](repeating: 0, count: 417)
        frame[0] = 0xFF; frame[1] = 0xFB; frame[2] = 0x90; frame[3] = 0x64   // MPEG-1 L3 128k 44.1k joint stereo
        let xing = 4 + 32
        frame.replaceSubrange(xing..<xing + 4, with: Array("Info".utf8))
        frame[xing + 7] = 0x0F                                                // frames, bytes, TOC, quality
        frame.replaceSubrange(xing + 8..<xing + 12, with: [0, 0, 0, 78])     // 78 frames
        let lame = xing + 8 + 4 + 4 + 100 + 4
        frame.replaceSubrange(lame..<lame + 9, with: Array("LAME3.100".utf8))
        frame.replaceSubrange(lame + 21..<lame + 24, with: [0x24, 0x04, 0x38]) // delay 576, padding 1080
        let info = LAMEGaplessInfo(firstFrame: frame)
        #expect(info?.encoderDelay == 576)
        #expect(info?.endPadding == 1080)
        #expect(info?.originalFrames == Int64(78 * 1152 - 576 - 1080))
        frame[lame] = UInt8(ascii: "X")
        #expect(LAMEGaplessInfo(firstFrame: frame) == nil)
        #expect(LAMEGaplessInfo.id3v2Size([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 2, 1]) == 10 + 257)
    }

    @Test("WAV data chunk and Ogg end-of-stream flag")
    func containerFacts() throws {
        let wav = try Data(contentsOf: URL(fileURLWithPath: Fixtures.named("wav_s16_stereo_44k.wav").path))
        #expect(ContainerFacts.wavDeclaredFrames(header: Array(wav.prefix(4096))) == 44100)
        #expect(ContainerFacts.wavDeclaredFrames(header: Array("not a wav file".utf8)) == nil)
        let ogg = try Data(contentsOf: URL(fileURLWithPath: Fixtures.named("vorbis_stereo_44k.ogg").path))
        #expect(ContainerFacts.oggEndsWithEndOfStream(tail: Array(ogg.suffix(65536))) == true)
        let cut = Fixtures.bad.first { $0.name == "truncated_opus_stereo_48k.opus" }!
        let truncated = try Data(contentsOf: URL(fileURLWithPath: cut.path))
        #expect(ContainerFacts.oggEndsWithEndOfStream(tail: Array(truncated.suffix(65536))) == false)
    }
}
