// The fuzz targets' way in (specs/testing.md §Fuzzing): a file's bytes opened
// from memory through FFmpegMemorySource must decode, seek, tag and fail
// exactly as the file itself does, or the fuzzers test something else.
import Foundation
import HarmoniaCore
@testable import HarmoniaFFmpeg
import HarmoniaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Opening from memory")
struct MemorySourceTests {
    /// The file's bytes, read with stdio: Foundation's file reader leaks its
    /// buffer for a 4096-byte file (bad/random.bin) under LeakSanitizer (Swift 6.3.1).
    static func bytes(_ path: String) throws -> [UInt8] {
        guard let file = fopen(path, "rb") else { throw CoreError.notFound("\(path): cannot open") }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while case let count = fread(&chunk, 1, chunk.count, file), count > 0 {
            bytes += chunk[..<count]
        }
        return bytes
    }

    @Test("every fixture: the same stream facts, samples, seek and tags as from its file", arguments: Fixtures.all)
    func sameAsFile(_ fixture: Fixture) throws {
        let decoder = FFmpegDecoderAdapter()
        let fromFile = try decoder.open(url: fixture.path)
        defer { decoder.close(fromFile) }
        let fromMemory = try decoder.open(bytes: Self.bytes(fixture.path), name: fixture.name)
        defer { decoder.close(fromMemory) }

        let info = try decoder.info(fromMemory)
        #expect(info == (try decoder.info(fromFile)))
        #expect(info.totalFrames == fixture.frames)
        #expect(try decodeToEnd(decoder, fromMemory, chunk: 1000) == decodeToEnd(decoder, fromFile, chunk: 1000))

        let middle = fixture.frames / 3
        try decoder.seek(fromFile, toFrame: middle)
        try decoder.seek(fromMemory, toFrame: middle)
        #expect(try decoder.position(fromMemory) == middle)
        #expect(try decodeToEnd(decoder, fromMemory) == decodeToEnd(decoder, fromFile))
        #expect(try decoder.tags(fromMemory) == decoder.tags(fromFile))
    }

    @Test("every bad input: the same error category as from its file", arguments: Fixtures.bad)
    func badInputFailsAlike(_ input: BadInput) throws {
        let decoder = FFmpegDecoderAdapter()
        func outcome(_ open: () throws -> DecodeHandle) -> CoreError.Category? {
            coreError {
                let handle = try open()
                defer { decoder.close(handle) }
                _ = try decodeToEnd(decoder, handle)
            }?.category
        }
        let bytes = try Self.bytes(input.path)
        let file = outcome { try decoder.open(url: input.path) }
        let memory = outcome { try decoder.open(bytes: bytes, name: input.name) }
        #expect(memory == file, "\(input.kind)")
        #expect(decoder.openSessionCount == 0)
    }

    @Test("the tag reader from memory gives the file's tags, size included")
    func tagsFromMemory() throws {
        let path = Fixtures.named("flac_s16_stereo_44k.flac").path
        let bytes = try Self.bytes(path)
        let fromMemory = try FFmpegTagReaderAdapter().readWithStreamInfo(bytes: bytes, name: "x.flac")
        let fromFile = try FFmpegTagReaderAdapter().readWithStreamInfo(url: path)
        #expect(fromMemory.tags == fromFile.tags)
        #expect(fromMemory.tags.fileSize == bytes.count)
        #expect(fromMemory.stream == fromFile.stream)
    }
}
