// CueSheetFileAdapter and CueSheet.queueTracks(): specs/ports.md §CueSheetPort,
// specs/models.md §CueSheet. Sheets are written to a temporary folder.
import Foundation
import HarmoniaCore
import Testing

@Suite("CueSheetFileAdapter")
struct CueSheetFileAdapterTests {
    let folder: String
    let adapter = CueSheetFileAdapter()

    init() throws {
        folder = NSTemporaryDirectory() + "harmonia-cue-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    private func write(_ name: String, _ text: String) throws -> String {
        try write(name, bytes: Array(text.utf8))
    }

    private func write(_ name: String, bytes: [UInt8]) throws -> String {
        let path = folder + "/" + name
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func parseError(_ url: String) -> CoreError? {
        do { _ = try adapter.parse(url: url); return nil } catch { return error }
    }

    static let album = """
        REM GENRE Test
        REM DATE 2024
        CATALOG 0000000000000
        PERFORMER "Sheet Artist"
        TITLE "Sheet Album"
        FILE "album side.flac" WAVE
          TRACK 01 AUDIO
            TITLE "One"
            FLAGS DCP
            INDEX 01 00:00:00
          TRACK 02 AUDIO
            TITLE "Two"
            PERFORMER "Guest"
            ISRC XXXXX0000000
            INDEX 00 00:02:70
            INDEX 01 00:03:12
          track 05 audio
            index 01 61:59:74

        """

    @Test("a sheet: file resolved against the sheet's folder, times MM:SS:FF / 75, endTime one CUE frame before the next start")
    func parsesAlbum() throws {
        let path = try write("album.cue", Self.album)
        let sheet = try adapter.parse(url: path)
        #expect(sheet.fileURL == folder + "/album side.flac")
        #expect(sheet.title == "Sheet Album")
        #expect(sheet.performer == "Sheet Artist")
        #expect(sheet.tracks.map(\.index) == [1, 2, 5])
        #expect(sheet.tracks.map(\.title) == ["One", "Two", "Sheet Album"])  // falls back to the sheet's
        #expect(sheet.tracks.map(\.performer) == ["Sheet Artist", "Guest", "Sheet Artist"])
        let second = 0.0 * 60 + 3 + 12.0 / 75, third = 61.0 * 60 + 59 + 74.0 / 75
        #expect(sheet.tracks.map(\.startTime) == [0, second, third])
        #expect(sheet.tracks[0].endTime == second - 1.0 / 75)
        #expect(sheet.tracks[1].endTime == third - 1.0 / 75)
        #expect(sheet.tracks[2].endTime == nil)
        // file:// URLs name the same sheet.
        #expect(try adapter.parse(url: "file://" + path) == sheet)
    }

    @Test("CRLF, a byte-order mark, an unquoted FILE, lower-case commands, data tracks left out")
    func variants() throws {
        let text = "\u{FEFF}file /abs/music.wav wave\r\ntrack 1 MODE1/2352\r\n index 01 00:00:00\r\ntrack 2 audio\r\ntitle Bare words\r\n index 01 00:10:00\r\n"
        let sheet = try adapter.parse(url: try write("crlf.cue", text))
        #expect(sheet.fileURL == "/abs/music.wav")
        #expect(sheet.tracks.count == 1)
        #expect(sheet.tracks[0].index == 2)
        #expect(sheet.tracks[0].title == "Bare words")
        #expect(sheet.tracks[0].startTime == 10)
        #expect(sheet.title == nil && sheet.performer == nil)
    }

    @Test("Latin-1 text when it is not UTF-8")
    func latin1() throws {
        let bytes = Array("TITLE \"Caf".utf8) + [0xE9] + Array("\"\nFILE \"a.wav\" WAVE\nTRACK 01 AUDIO\nINDEX 01 00:00:00\n".utf8)
        let sheet = try adapter.parse(url: try write("latin1.cue", bytes: bytes))
        #expect(sheet.title == "Café")
    }

    @Test("malformed sheets are decodeError naming the sheet and the line", arguments: [
        ("TITLE \"x\"\nTRACK 01 AUDIO\nINDEX 01 00:00:00\n", "line 2"),                      // TRACK before FILE
        ("FILE a.wav WAVE\nTRACK 00 AUDIO\nINDEX 01 00:00:00\n", "line 2"),                  // track number 0
        ("FILE a.wav WAVE\nTRACK AUDIO\n", "line 2"),
        ("FILE a.wav WAVE\nINDEX 01 00:00:00\n", "line 2"),                                  // INDEX outside a TRACK
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 00:60:00\n", "line 3"),                  // seconds ≥ 60
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 00:00:75\n", "line 3"),                  // frames ≥ 75
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 0:0\n", "line 3"),
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 -1:00:00\n", "line 3"),
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 00:00:00\nINDEX 01 00:01:00\n", "line 4"),
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 00 00:00:00\n", "line 2"),                  // no INDEX 01
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 00:05:00\nTRACK 02 AUDIO\nINDEX 01 00:04:00\n", "line 4"),
        ("FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 00:05:00\nTRACK 02 AUDIO\nINDEX 01 00:05:01\n", "line 4"),
        ("REM nothing\nTITLE \"x\"\n", "no FILE"),
        ("FILE a.wav WAVE\nREM no tracks\n", "no AUDIO tracks"),
        ("FILE \"\" WAVE\n", "line 1"),
    ])
    func malformed(_ text: String, _ expected: String) throws {
        let path = try write("bad-\(UUID().uuidString.prefix(6)).cue", text)
        let error = try #require(parseError(path))
        #expect(error.category == .decodeError, "\(error)")
        #expect(error.message.hasPrefix(path), "\(error)")
        #expect(error.message.contains(expected), "\(error)")
    }

    @Test("missing → notFound; folder, second FILE, http → unsupported; empty → invalidArgument")
    func otherErrors() throws {
        #expect(parseError(folder + "/missing.cue")?.category == .notFound)
        #expect(parseError(folder)?.category == .unsupported)
        #expect(parseError("http://host/a.cue")?.category == .unsupported)
        #expect(parseError("")?.category == .invalidArgument)
        let two = try write("two.cue", "FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 00:00:00\nFILE b.wav WAVE\nTRACK 02 AUDIO\nINDEX 01 00:00:00\n")
        let error = try #require(parseError(two))
        #expect(error.category == .unsupported)
        #expect(error.message.contains("line 4"))
    }

    @Test("a relative sheet path gives an absolute file; the sheet's folder, not the working directory")
    func relativeSheet() throws {
        let path = try write("rel.cue", "FILE \"sub/x.wav\" WAVE\nTRACK 01 AUDIO\nINDEX 01 00:00:00\n")
        // From the working directory up to / and down to the sheet.
        let depth = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).standardized.pathComponents.count - 1
        let relative = String(repeating: "../", count: depth) + path.dropFirst()
        #expect(!relative.hasPrefix("/"))
        #expect(try adapter.parse(url: relative).fileURL == folder + "/sub/x.wav")
    }

    @Test("queueTracks: each entry ends at the next start (not endTime), the last at the file's end")
    func queueTracks() throws {
        let sheet = try adapter.parse(url: try write("q.cue", Self.album))
        let queue = sheet.queueTracks()
        #expect(queue.count == 3)
        #expect(queue.allSatisfy { $0.url == sheet.fileURL && $0.album == "Sheet Album" })
        #expect(queue.map(\.title) == ["One", "Two", "Sheet Album"])
        #expect(queue.map(\.artist) == ["Sheet Artist", "Guest", "Sheet Artist"])
        #expect(queue.map(\.start) == sheet.tracks.map(\.startTime))
        #expect(queue[0].end == sheet.tracks[1].startTime)
        #expect(queue[1].end == sheet.tracks[2].startTime)
        #expect(queue[2].end == nil)
        // At common rates every boundary is one frame: the end of one entry is the start of the next.
        for rate in [44100.0, 48000, 96000] {
            for i in 0..<(queue.count - 1) {
                #expect((queue[i].end! * rate).rounded() == (queue[i + 1].start! * rate).rounded())
            }
        }
        // The reference's endTime stops one CUE frame short: 588 frames at 44.1 kHz.
        #expect(((sheet.tracks[1].startTime - sheet.tracks[0].endTime!) * 44100).rounded() == 588)
    }
}
