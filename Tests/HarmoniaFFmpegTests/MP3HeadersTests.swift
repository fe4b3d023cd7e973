// The scan's MP3 header reader without FFmpeg — specs/library.md §Scanner
import Foundation
import HarmoniaCore
@testable import HarmoniaFFmpeg
import HarmoniaTestSupport
import Testing

@Suite("MP3 headers without FFmpeg")
struct MP3HeadersTests {
    static let available = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")

    /// The variants written by Tests/Fixtures/mp3_tag_variants.py: (path, must be read natively).
    static func variants(in folder: String) throws -> [(path: String, accept: Bool)] {
        let made = try ProcessRunner.run("/usr/bin/python3", [Fixtures.root + "/mp3_tag_variants.py", folder])
        try #require(made.status == 0, "mp3_tag_variants.py: \(made.stderrText)")
        return made.stdoutText.split(separator: "\n").map {
            let fields = $0.split(separator: "\t")
            return (String(fields[0]), fields[1] == "accept")
        }
    }

    static func folder() -> String {
        NSTemporaryDirectory() + "harmonia-mp3headers-\(getpid())-\(UUID().uuidString.prefix(8))"
    }

    /// Native read of `path` equals FFmpeg's header read, when there is a native read.
    @discardableResult
    static func expectEqualToFFmpeg(_ path: String, _ label: String) throws -> Bool {
        guard let native = MP3Headers.read(path: path) else { return false }
        let ffmpeg: (tags: TagBundle, stream: StreamInfo)
        do {
            ffmpeg = try FFmpegTagReaderAdapter().ffmpegHeaders(url: path)
        } catch {
            Issue.record("\(label): read natively, but FFmpeg refuses it: \(error)")
            return true
        }
        #expect(native.stream == ffmpeg.stream, "\(label)")
        #expect(native.tags == ffmpeg.tags, "\(label)")
        if native.tags != ffmpeg.tags {
            print("native:", native.tags, "\nffmpeg:", ffmpeg.tags)
        }
        return true
    }

    @Test("tags as taggers write them: every field equals FFmpeg's header read", .enabled(if: available))
    func taggedVariants() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let variants = try Self.variants(in: folder)
        #expect(variants.count >= 20)
        for variant in variants {
            let read = try Self.expectEqualToFFmpeg(variant.path, variant.path)
            if variant.accept { #expect(read, "\(variant.path) is a plain MP3 file: read without FFmpeg") }
        }
        // What FFmpeg reads in its own way is left to it.
        #expect(MP3Headers.read(path: folder + "/numeric-genre.mp3") == nil, "a numeric genre is FFmpeg's to name")
        #expect(MP3Headers.read(path: folder + "/no-tag.mp3") == nil, "without ID3v2, FFmpeg reads ID3v1")
    }

    @Test("every MP3 fixture, the gapless parts and the bad files: equal to FFmpeg's read, or left to it")
    func fixtures() throws {
        let folders = ["audio", "gapless", "bad"].map { Fixtures.root + "/" + $0 }
        var read = 0
        for folder in folders {
            for name in try FileManager.default.contentsOfDirectory(atPath: folder) where name.hasSuffix(".mp3") {
                if try Self.expectEqualToFFmpeg(folder + "/" + name, name) { read += 1 }
            }
        }
        #expect(read >= 2, "the tagged fixtures are read natively")
    }

    @Test("truncations and 250 corrupted copies: nil, or exactly FFmpeg's read; never a trap", .enabled(if: available))
    func hostileBytes() throws {
        let folder = Self.folder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let variants = try Self.variants(in: folder)
        let source = try #require(variants.first { $0.path.hasSuffix("cbr-v24-utf16.mp3") }).path
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: source)))
        // The region the reader looks at: the tag and the first three frames.
        let region = min(bytes.count, 10 + Int(bytes[6..<10].reduce(0) { $0 << 7 | UInt32($1) }) + 3 * 1500)
        for length in stride(from: 0, through: region, by: 7) {
            if let read = MP3Headers.read(from: TagMemorySource(data: Array(bytes.prefix(length)))) {
                #expect(read.stream.sampleRate > 0 && (read.stream.totalFrames ?? 0) > 0)
            }
        }
        var generator = SplitMix64(seed: 43)
        let copy = folder + "/corrupted.mp3"
        var compared = 0
        for _ in 0..<250 {
            var corrupted = bytes
            for _ in 0..<1 + Int(generator.next() % 3) {
                corrupted[Int(generator.next() % UInt64(region))] = UInt8(truncatingIfNeeded: generator.next())
            }
            try Data(corrupted).write(to: URL(fileURLWithPath: copy))
            if try Self.expectEqualToFFmpeg(copy, "corrupted copy \(compared)") { compared += 1 }
        }
        #expect(compared > 60, "most corruptions leave a file still read natively, compared with FFmpeg")
    }
}
