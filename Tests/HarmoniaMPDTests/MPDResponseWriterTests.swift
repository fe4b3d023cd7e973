// Responses — specs/mpd-protocol.md §Responses. Song records compared with MPD 0.23.12's
// `lsinfo` / `playlistinfo` output for the same files (Tests/MPD/session_basic.txt).
import Foundation
import HarmoniaLibrary
import Testing
@testable import HarmoniaMPD

@Suite struct MPDResponseWriterTests {
    @Test func songRecordAsMPDWritesIt() {
        let song = LibrarySong(
            path: "Harmonia Artist/First Album/01 Opening.flac", modified: 1_700_000_000, size: 1234,
            tags: [.artist: ["Harmonia Artist"], .album: ["First Album"], .albumArtist: ["Harmonia Artist"], .title: ["Opening"],
                   .track: ["1"], .genre: ["Electronic"], .date: ["2024"], .composer: ["Harmonia Composer"], .disc: ["1"]],
            duration: 2.0, format: "44100:16:2")
        var writer = MPDResponseWriter()
        writer.appendSong(song)
        #expect(writer.text == """
            file: Harmonia Artist/First Album/01 Opening.flac
            Last-Modified: 2023-11-14T22:13:20Z
            Format: 44100:16:2
            Artist: Harmonia Artist
            Album: First Album
            AlbumArtist: Harmonia Artist
            Title: Opening
            Track: 1
            Genre: Electronic
            Date: 2024
            Composer: Harmonia Composer
            Disc: 1
            Time: 2
            duration: 2.000

            """)
    }

    /// A store's record (tag lines copied as they are) prints the song's
    /// record byte for byte, whatever tags the client asked for.
    @Test func aRecordPrintsAsItsSong() throws {
        let songs = [
            LibrarySong(path: "a/1.flac", modified: 1_700_000_000, size: 1,
                        tags: [.title: ["T"], .artist: ["A", "B"], .comment: ["c"], .disc: ["2"], .musicBrainzWorkID: ["w"],
                               .performer: ["P"], .albumArtist: ["AA"], .album: ["Al"]], duration: 2.5, format: "48000:24:2"),
            LibrarySong(path: "a/2.flac", modified: 0, size: 1, tags: [.title: ["one\ntwo"], .genre: ["tab\tg"], .artist: ["A"]]),
            LibrarySong(path: "a/3.flac", modified: 5, size: 1),
        ]
        // Every library tag's MPD type, in record order, is in MPD's order.
        let types = LibraryTag.recordOrder.map { MPDTagType($0).rawValue }
        #expect(types == types.sorted())
        for mask in [MPDTagMask.all, .mpdDefault, .none, MPDTagMask([.artist, .title]), MPDTagMask([.comment])] {
            for song in songs {
                var bySong = MPDResponseWriter(tagMask: mask), byRecord = MPDResponseWriter(tagMask: mask)
                bySong.appendSong(song)
                byRecord.appendSong(LibrarySongRecord(song))
                #expect(byRecord.text == bySong.text, "\(song.path) \(mask)")
            }
        }
        #expect(MPDTagMask.all.containsAll(libraryTags: try #require(LibraryTagLines(songs[0].tags)).presentTags))
        #expect(!MPDTagMask.mpdDefault.containsAll(libraryTags: try #require(LibraryTagLines(songs[0].tags)).presentTags))
    }

    /// A record's `Time:` and `duration:` digits, written straight into the
    /// answer, are `durationFields`' text, for every way a duration rounds.
    @Test func recordDurationsAreTheDurationFields() {
        var durations: [Double] = [0, 0.0004, 0.0005, 0.4995, 0.5, 0.9995, 1, 1.2345, 9.99, 59.9995, 60, 3599.999, 3600.5,
                                   86_400.0625, 1e9, 999_999_999_999.9995, 1e12, 1e13, .greatestFiniteMagnitude]
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<2_000 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            durations.append(Double(seed >> 11) / Double(1 << 53) * 20_000)
        }
        for duration in durations {
            var writer = MPDResponseWriter()
            writer.appendSong(LibrarySong(path: "x.flac", modified: 0, size: 1, duration: duration))
            let (whole, exact) = MPDResponseWriter.durationFields(duration)
            #expect(writer.text.hasSuffix("Time: \(whole)\nduration: \(exact)\n"), "\(duration)")
        }
    }

    @Test func queueEntryAndUntaggedSong() {
        let song = LibrarySong(path: "loose/untagged.wav", modified: 1_700_000_000, size: 1, duration: 1, format: "44100:16:2")
        var writer = MPDResponseWriter()
        writer.appendSong(song, position: 2, id: 6)
        writer.appendSong(LibrarySong(path: "x.ogg", modified: 0, size: 1), position: 0, id: 1, priority: 5)
        #expect(writer.text == """
            file: loose/untagged.wav
            Last-Modified: 2023-11-14T22:13:20Z
            Format: 44100:16:2
            Time: 1
            duration: 1.000
            Pos: 2
            Id: 6
            file: x.ogg
            Last-Modified: 1970-01-01T00:00:00Z
            Pos: 0
            Id: 1
            Prio: 5

            """)
    }

    @Test func tagMaskSelectsTags() {
        let song = LibrarySong(path: "a.flac", modified: 0, size: 1, tags: [.artist: ["A"], .title: ["T"], .comment: ["C"]])
        var writer = MPDResponseWriter(tagMask: MPDTagMask([.title, .comment]))
        writer.appendSong(song)
        #expect(writer.text == "file: a.flac\nLast-Modified: 1970-01-01T00:00:00Z\nTitle: T\nComment: C\n")
    }

    @Test func durationFieldsRoundAsMPD() {
        func fields(_ seconds: Double) -> String {
            let (time, duration) = MPDResponseWriter.durationFields(seconds)
            return "\(time) \(duration)"
        }
        #expect(fields(2.037) == "2 2.037")
        #expect(fields(2.006) == "2 2.006")
        #expect(fields(2.5) == "3 2.500")  // (ms + 500) / 1000: half up
        #expect(fields(2.4996) == "3 2.500")  // to the nearest ms first
        #expect(fields(0.0004) == "0 0.000")
        #expect(fields(3725.0419) == "3725 3725.042")
        #expect(fields(1.05) == "1 1.050")
        #expect(fields(7.0) == "7 7.000")
    }

    @Test func timestamps() {
        #expect(MPDResponseWriter.iso8601(0) == "1970-01-01T00:00:00Z")
        #expect(MPDResponseWriter.iso8601(1_700_000_000) == "2023-11-14T22:13:20Z")
        #expect(MPDResponseWriter.iso8601(951_782_400) == "2000-02-29T00:00:00Z")
        #expect(MPDResponseWriter.iso8601(-30_610_224_001) == "0999-12-31T23:59:59Z")  // year padded to 4 digits
        #expect(MPDResponseWriter.iso8601(253_402_300_800) == "10000-01-01T00:00:00Z")  // a fifth digit, as MPD
        #expect(MPDResponseWriter.iso8601(253_402_300_799) == "9999-12-31T23:59:59Z")
        // Every field's digits: a week and a second apart over 50 years.
        var seconds: Int64 = 0
        while seconds < 50 * 365 * 86_400 {
            let date = MPDResponseWriter.iso8601(seconds)
            let day = Int(seconds / 86_400), second = Int(seconds % 86_400)
            #expect(date.hasSuffix(String(format: "T%02d:%02d:%02dZ", second / 3600, second / 60 % 60, second % 60)), "\(seconds)")
            #expect(date.count == 20 && date.dropFirst(4).first == "-", "\(seconds)")
            #expect(Int(date.prefix(4)) == 1970 + day / 365 || Int(date.prefix(4)) == 1969 + day / 365, "\(seconds)")
            seconds += 7 * 86_400 + 1
        }
    }

    @Test func newlinesInValuesDoNotSplitTheRecord() {
        var writer = MPDResponseWriter()
        writer.append("Comment", "La la la\nSecond line")
        #expect(writer.text == "Comment: La la la Second line\n")
        // Every kind of newline becomes a space; other bytes, below 0x20
        // or not ASCII, are kept as they are.
        for (value, written) in [("a\rb", "a b"), ("a\r\nb", "a b"), ("a\u{85}b", "a b"), ("a\u{2028}b", "a b"),
                                 ("a\u{2029}b", "a b"), ("a\u{0B}b\u{0C}", "a b "), ("a\tb", "a\tb"), ("Ünï ½ ~", "Ünï ½ ~"),
                                 ("\u{2027}\u{202A}", "\u{2027}\u{202A}"), (" ", " "), ("", "")] {
            var one = MPDResponseWriter()
            one.append("Comment", value)
            #expect(one.text == "Comment: \(written)\n", "\(Array(value.utf8))")
            // Given as bytes (a path the store read), the same line.
            var bytes = MPDResponseWriter()
            Array(value.utf8).withUnsafeBufferPointer { bytes.append("file", utf8: $0) }
            #expect(bytes.text == "file: \(written)\n", "\(Array(value.utf8))")
        }
    }

    /// The check that lets bytes be copied as they are agrees with Swift's
    /// own UTF-8 validation and newline rule on every sequence of one and
    /// two bytes and on the bytes at the edges of UTF-8's ranges, in
    /// sequences of three and four.
    @Test func plainTextIsWellFormedUTF8WithoutControlsOrNewlines() {
        func expected(_ bytes: [UInt8]) -> Bool {
            guard let text = String(validating: bytes, as: UTF8.self) else { return false }
            return !text.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x85 || $0.value == 0x2028 || $0.value == 0x2029 }
        }
        func check(_ bytes: [UInt8]) {
            let plain = bytes.withUnsafeBufferPointer(MPDResponseWriter.isPlainText)
            if plain != expected(bytes) { Issue.record("\(bytes): \(plain)") }
        }
        for first in 0...255 {
            check([UInt8(first)])
            for second in 0...255 { check([UInt8(first), UInt8(second)]) }
        }
        let edges: [UInt8] = [0x00, 0x1F, 0x20, 0x7F, 0x80, 0x85, 0x8F, 0x90, 0x9F, 0xA0, 0xA8, 0xA9, 0xAA, 0xBF, 0xC0, 0xC1,
                              0xC2, 0xDF, 0xE0, 0xE1, 0xE2, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF3, 0xF4, 0xF5, 0xFF]
        for a in edges {
            for b in edges {
                for c in edges {
                    check([a, b, c])
                    if a >= 0xF0 { for d in edges { check([a, b, c, d]) } }
                }
            }
        }
        // Inside longer text, checked eight bytes at a time: every byte at
        // every place of a word, and the edges across a word's end.
        let text = Array("Beñu/1986 - Silver Light Glass 1577/04 Wave.flac".utf8)
        check(text)
        for byte in 0...255 {
            for place in 0...17 { check(Array(text.prefix(place)) + [UInt8(byte)] + text.suffix(17)) }
        }
        for a in edges {
            for b in edges {
                for c in edges { check(Array(text.prefix(6)) + [a, b, c] + text.prefix(9)) }
            }
        }
    }

    /// Bytes that are not UTF-8 are written as the String of them would be
    /// (U+FFFD for each bad sequence), never copied as they are.
    @Test func valueBytesThatAreNotUTF8AreReplaced() {
        for value: [UInt8] in [[0x61, 0xFF, 0x62], [0xC3], [0xC3, 0x28], [0xE2, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
                               [0xC0, 0xAF], Array("Beñu/x.flac".utf8) + [0x80]] {
            var writer = MPDResponseWriter()
            value.withUnsafeBufferPointer { writer.append("file", utf8: $0) }
            #expect(writer.text == "file: \(String(decoding: value, as: UTF8.self))\n", "\(value)")
            #expect(writer.text.contains("\u{FFFD}"), "\(value)")
        }
    }

    @Test func binaryChunks() throws {
        let picture = (0..<100).map { UInt8($0) }
        var writer = MPDResponseWriter(binaryLimit: 64)
        try writer.appendBinaryChunk(of: picture, offset: 0, mimeType: "image/png")
        #expect(writer.bytes == Array("size: 100\ntype: image/png\nbinary: 64\n".utf8) + picture[0..<64] + [0x0A])
        var second = MPDResponseWriter(binaryLimit: 64)
        try second.appendBinaryChunk(of: picture, offset: 64)
        #expect(second.bytes == Array("size: 100\nbinary: 36\n".utf8) + picture[64..<100] + [0x0A])
        var end = MPDResponseWriter(binaryLimit: 64)
        try end.appendBinaryChunk(of: picture, offset: 100)
        #expect(end.bytes == Array("size: 100\nbinary: 0\n\n".utf8))
        var past = MPDResponseWriter()
        #expect(throws: MPDError(.arg, "Offset too large")) { try past.appendBinaryChunk(of: picture, offset: 101) }
    }

    @Test func outputIsBounded() {
        var writer = MPDResponseWriter(limit: 100)
        for _ in 0..<10 { writer.append("key", "0123456789") }  // 15 bytes each
        #expect(writer.isOverflowed)
        #expect(writer.bytes.count <= 100)
        #expect(writer.isFull)
        var fits = MPDResponseWriter(limit: 100)
        fits.appendOK()
        fits.appendListOK()
        #expect(!fits.isOverflowed)
        #expect(fits.text == "OK\nlist_OK\n")
    }
}
