// Value lists read from the files' own tag blocks — specs/ports.md §TagReaderPort (Value lists).
// The tree is written by Tests/MPD/multi_value_tree.py with mutagen (as
// Picard writes lists); every format's lists come back whole and in order,
// values holding ';' or '/' unsplit; hostile blocks never trap.
import Foundation
import HarmoniaCore
@testable import HarmoniaFFmpeg
import HarmoniaTestSupport
import Testing

@Suite("Tag value lists")
struct TagListTests {
    static let available = FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")
    static let bjork = "87c5dedd-371d-4a53-9f7f-80522fb7f3cb", olafur = "8a8bde7e-8b5b-4d3c-9a0a-1b7a6c43d1c7"

    /// The tree's files in a new folder (removed by the caller).
    static func tree() throws -> (folder: String, files: [String: String]) {
        let folder = NSTemporaryDirectory() + "harmonia-taglists-\(getpid())-\(UUID().uuidString.prefix(8))"
        let made = try ProcessRunner.run("/usr/bin/python3", [Fixtures.repositoryRoot + "/Tests/MPD/multi_value_tree.py", folder, "--mp4-lists"])
        guard made.status == 0 else { throw TreeNotWritten(description: "multi_value_tree.py: \(made.stderrText)") }
        let paths = made.stdoutText.split(separator: "\n").map(String.init)
        return (folder, Dictionary(uniqueKeysWithValues: paths.map { (URL(fileURLWithPath: $0).lastPathComponent, $0) }))
    }

    @Test("every format's lists, whole and in file order", .enabled(if: available))
    func listsOfEveryFormat() throws {
        let (folder, files) = try Self.tree()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let reader = FFmpegTagReaderAdapter()
        func tags(_ name: String) throws -> TagBundle { try reader.read(url: try #require(files[name], "\(name) not written")) }

        let flac = try tags("01 Together.flac")
        #expect(flac.artists == ["Björk", "Ólafur Arnalds"])
        #expect(flac.artist == "Björk; Ólafur Arnalds")
        #expect(flac.albumArtists == ["Björk"] && flac.genres == ["Electronic", "Ambient"])
        #expect(flac.composers == ["Björk", "Ólafur Arnalds"])
        #expect(flac.performers == ["Björk (vocals)", "Ólafur Arnalds (piano)"])
        #expect(flac.musicBrainz.artistIDs == [Self.bjork, Self.olafur] && flac.musicBrainz.albumArtistIDs == [Self.bjork])
        #expect(flac.title == "Together" && flac.trackNumber == 1)  // FFmpeg's fields are still there

        #expect(try tags("02 Alone.ogg").artists == ["Björk"])
        let opus = try tags("03 Friends.opus")
        #expect(opus.artists == ["AC/DC", "Earth, Wind & Fire; Friends", "Björk"])  // never split on ';' or '/'
        #expect(opus.genres == ["Rock/Pop"])

        for (name, genres) in [("04 ID3v2.4.mp3", ["Electronic", "Ambient"]), ("05 ID3v2.3.mp3", ["Electronic"])] {
            let mp3 = try tags(name)
            #expect(mp3.artists == ["Björk", "Ólafur Arnalds"], "\(name)")
            #expect(mp3.composers == ["Björk", "Ólafur Arnalds"] && mp3.albumArtists == ["Björk"], "\(name)")
            #expect(mp3.genres == genres, "\(name): ID3v2.3's TCON gives its first genre, as MPD reads it")
            #expect(mp3.musicBrainz.artistIDs == [Self.bjork], "\(name)")
            #expect(mp3.musicBrainz.trackIDs == ["0d9a8e5c-0000-4000-8000-000000000001"], "\(name)")
        }
        let ape = try tags("06 APE.wv")
        #expect(ape.artists == ["Björk", "Ólafur Arnalds"] && ape.genres == ["Electronic", "Ambient"])
        #expect(try tags("07 Single.m4a").artists == ["Björk"])
        let m4a = try tags("08 Duet.m4a")
        #expect(m4a.artists == ["Björk", "Ólafur Arnalds"] && m4a.genres == ["Electronic", "Ambient"])
        #expect(m4a.musicBrainz.artistIDs == [Self.bjork, Self.olafur])

        // The same from memory (the fuzz targets' path).
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: try #require(files["01 Together.flac"]))))
        #expect(try reader.readWithStreamInfo(bytes: bytes, name: "memory").tags.artists == ["Björk", "Ólafur Arnalds"])
    }

    @Test("a fixture without lists keeps FFmpeg's values", arguments: ["flac_s16_stereo_44k.flac", "mp3_cbr_stereo_44k.mp3", "aac_stereo_44k.m4a", "wavpack_apev2.wv"])
    func singleValuesUnchanged(fixture: String) throws {
        let tags = try FFmpegTagReaderAdapter().read(url: Fixtures.repositoryRoot + "/Tests/Fixtures/audio/" + fixture)
        #expect(tags.artists.count == 1, "\(fixture): \(tags.artists)")
    }

    /// Cut and damaged copies of every file, and blocks with absurd counts
    /// and sizes: fewer values or none, never a trap, never a huge allocation.
    @Test("hostile blocks: cut, mutated, absurd counts and sizes", .enabled(if: available))
    func hostileBlocks() throws {
        let (folder, files) = try Self.tree()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var generator = SplitMix64(seed: 29)
        for path in files.values.sorted() {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let head = Array(bytes.prefix(16_384))
            for cut in stride(from: 0, to: head.count, by: 7) {
                _ = NativeTagLists.read(from: TagMemorySource(data: Array(head.prefix(cut))))
            }
            for _ in 0..<300 {
                var damaged = bytes
                for _ in 0..<4 {
                    let at = Int.random(in: 0..<min(damaged.count, 4096), using: &generator)
                    damaged[at] = [0x00, 0xFF, 0x7F, 0x80, UInt8.random(in: 0...255, using: &generator)].randomElement(using: &generator)!
                }
                _ = NativeTagLists.read(from: TagMemorySource(data: damaged))
            }
        }
        // A Vorbis comment block claiming 2^32-1 comments of 2^32-1 bytes.
        let comments: [UInt8] = [0, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF] + Array("ARTIST=x".utf8)
        #expect(VorbisCommentParser.parse(comments)?.isEmpty == true)
        // A FLAC whose comment block runs past the end of the file.
        #expect(NativeTagLists.read(from: TagMemorySource(data: Array("fLaC".utf8) + [0x84, 0xFF, 0xFF, 0xFF, 1, 2])) == nil)
        // An ID3v2 tag declaring 256 MB; a frame larger than its tag.
        #expect(NativeTagLists.read(from: TagMemorySource(data: Array("ID3".utf8) + [4, 0, 0, 0x7F, 0x7F, 0x7F, 0x7F])) == nil)
        let frame: [UInt8] = Array("TPE1".utf8) + [0x7F, 0x7F, 0x7F, 0x7F, 0, 0, 3] + Array("A".utf8)
        let id3 = Array("ID3".utf8) + [4, 0, 0, 0, 0, 0, UInt8(frame.count)] + frame
        #expect(NativeTagLists.read(from: TagMemorySource(data: id3))?.isEmpty == true)
        // An MP4 atom with a 64-bit size beyond the file, and one of size 1 cut short.
        let ftyp: [UInt8] = [0, 0, 0, 16] + Array("ftypM4A ".utf8) + [0, 0, 0, 0]
        #expect(NativeTagLists.read(from: TagMemorySource(data: ftyp + [0, 0, 0, 1] + Array("moov".utf8) + [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])) == nil)
        #expect(NativeTagLists.read(from: TagMemorySource(data: ftyp + [0, 0, 0, 1] + Array("moov".utf8))) == nil)
        // An APE footer whose tag is larger than the file.
        var footer = Array("APETAGEX".utf8) + [0xD0, 0x07, 0, 0, 0xFF, 0xFF, 0xFF, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF]
        footer += [UInt8](repeating: 0, count: 12)
        #expect(NativeTagLists.read(from: TagMemorySource(data: [1, 2, 3, 4] + footer)) == nil)
        // An APE tag claiming 2^32-1 items.
        var items: [UInt8] = [1, 0, 0, 0, 0, 0, 0, 0] + Array("Artist".utf8) + [0] + Array("X".utf8)
        let size = UInt32(items.count + 32)
        items += Array("APETAGEX".utf8) + [0xD0, 0x07, 0, 0] + withUnsafeBytes(of: size.littleEndian, Array.init)
            + [0xFF, 0xFF, 0xFF, 0xFF] + [UInt8](repeating: 0, count: 12)
        #expect(NativeTagLists.read(from: TagMemorySource(data: [9, 9, 9, 9] + items))?.values("ARTIST") == ["X"])
    }

    @Test("ID3v2 text strings: encodings, BOMs, terminators")
    func id3TextStrings() {
        #expect(ID3v2ListParser.textStrings(Array("A\u{0}B\u{0}".utf8), encoding: 3) == ["A", "B"])
        #expect(ID3v2ListParser.textStrings(Array("A\u{0}\u{0}B".utf8), encoding: 3) == ["A", "", "B"])
        #expect(ID3v2ListParser.textStrings([0xE9, 0, 0x41], encoding: 0) == ["é", "A"])
        #expect(ID3v2ListParser.textStrings([0xFF, 0xFE, 0x41, 0, 0, 0, 0xFE, 0xFF, 0, 0x42, 0, 0], encoding: 1) == ["A", "B"])
        #expect(ID3v2ListParser.textStrings([0, 0x41, 0, 0, 0, 0x42], encoding: 2) == ["A", "B"])
        #expect(ID3v2ListParser.textStrings([0x41], encoding: 9) == [])
        #expect(ID3v2ListParser.textStrings([0x41], encoding: 1) == [])  // an odd byte is no UTF-16 unit
        #expect(NativeTagLists.isID3GenreReference("(17)Rock") && NativeTagLists.isID3GenreReference("17"))
        #expect(!NativeTagLists.isID3GenreReference("Rock") && !NativeTagLists.isID3GenreReference("2 Step"))
    }
}

extension SplitMix64: RandomNumberGenerator {}

private struct TreeNotWritten: Error, CustomStringConvertible {
    let description: String
}
