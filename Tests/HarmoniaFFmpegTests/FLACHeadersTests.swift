// The scan's FLAC header reader without FFmpeg — specs/library.md §Scanner
import Foundation
import HarmoniaCore
@testable import HarmoniaFFmpeg
import HarmoniaTestSupport
import Testing

@Suite("FLAC headers without FFmpeg")
struct FLACHeadersTests {
    static let flacFixtures = Fixtures.all.filter { $0.file.hasSuffix(".flac") }

    @Test("a plain FLAC file's blocks give what FFmpeg's full read gives, every field, cover art included",
          arguments: flacFixtures)
    func equalsFFmpeg(fixture: Fixture) throws {
        let native = try #require(FLACHeaders.read(path: fixture.path), "\(fixture): read without FFmpeg")
        let full = try FFmpegTagReaderAdapter().readWithStreamInfo(url: fixture.path)
        #expect(native.stream == full.stream, "\(fixture)")
        #expect(native.tags == full.tags, "\(fixture)")
        #expect(native.stream.totalFrames == Int64(fixture.frames), "\(fixture)")
    }

    @Test("repeated comments are joined as FFmpeg joins them; the lists keep every value")
    func repeatedComments() throws {
        let fixture = try #require(Self.flacFixtures.first)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: fixture.path)))
        let rebuilt = Self.replacingComments(of: bytes, with: ["TITLE=One", "TITLE=Two", "ARTIST=A", "ARTIST=B", "=empty", "GENRE="])
        let read = try #require(FLACHeaders.read(from: TagMemorySource(data: rebuilt)))
        #expect(read.tags.title == "One;Two")
        #expect(read.tags.artists == ["A", "B"])
        let ffmpeg = try FFmpegTagReaderAdapter().readWithStreamInfo(bytes: rebuilt, name: "rebuilt.flac")
        #expect(read.tags == ffmpeg.tags)
        #expect(read.stream == ffmpeg.stream)
        // A picture in a comment is FFmpeg's to decode.
        let picture = Self.replacingComments(of: bytes, with: ["METADATA_BLOCK_PICTURE=AAAA"])
        #expect(FLACHeaders.read(from: TagMemorySource(data: picture)) == nil)
    }

    @Test("every truncation and 2,000 corrupted copies: nil or sound facts, never a trap")
    func hostileBytes() throws {
        let fixture = try #require(Self.flacFixtures.first)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: fixture.path)))
        let blocksEnd = Self.metadataEnd(of: bytes)
        var accepted = 0
        for length in 0...min(bytes.count, blocksEnd + 2) {
            if let read = FLACHeaders.read(from: TagMemorySource(data: Array(bytes.prefix(length)))) {
                accepted += 1
                Self.expectSound(read.stream)
            }
        }
        #expect(accepted == (bytes.count >= blocksEnd + 2 ? 1 : 0), "only the copy that reaches the first frame is read")
        var generator = SplitMix64(seed: 41)
        for _ in 0..<2_000 {
            var copy = bytes
            for _ in 0..<1 + Int(generator.next() % 4) {
                let at = Int(generator.next() % UInt64(blocksEnd + 2))
                copy[at] = UInt8(truncatingIfNeeded: generator.next())
            }
            if let read = FLACHeaders.read(from: TagMemorySource(data: copy)) { Self.expectSound(read.stream) }
        }
    }

    static func expectSound(_ stream: StreamInfo) {
        #expect(stream.sampleRate > 0 && stream.sampleRate <= 768_000)
        #expect((1...8).contains(stream.channels))
        #expect((1...32).contains(stream.bitDepth))
        #expect((stream.totalFrames ?? 0) > 0)
    }

    /// Where the metadata blocks of a FLAC file end (its first frame).
    static func metadataEnd(of bytes: [UInt8]) -> Int {
        var offset = 4
        while offset + 4 <= bytes.count {
            let last = bytes[offset] & 0x80 != 0
            offset += 4 + (Int(bytes[offset + 1]) << 16 | Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3]))
            if last { break }
        }
        return offset
    }

    /// `bytes` (a FLAC file) with its blocks reduced to STREAMINFO and a VORBIS_COMMENT of `comments`.
    static func replacingComments(of bytes: [UInt8], with comments: [String]) -> [UInt8] {
        func le32(_ v: Int) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        var block = le32(3) + Array("abc".utf8) + le32(comments.count)
        for comment in comments { block += le32(comment.utf8.count) + Array(comment.utf8) }
        let streamInfo = Array(bytes[8..<42])
        let header: [UInt8] = [0x84, UInt8(block.count >> 16), UInt8(block.count >> 8 & 0xFF), UInt8(block.count & 0xFF)]
        return Array("fLaC".utf8) + [0x00, 0, 0, 34] + streamInfo + header + block + bytes[metadataEnd(of: bytes)...]
    }
}
