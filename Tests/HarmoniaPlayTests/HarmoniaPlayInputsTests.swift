// harmonia-play's inputs (specs/inputs.md): folders, M3U, PLS and CUE sheets,
// run as a user runs them — the built binary through the file output, every
// expected sample from the ffmpeg command line (Fixtures.cliReference).
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play inputs")
struct HarmoniaPlayInputsTests {
    /// 1 s and 2 s of 44.1 kHz stereo, lossless, decoded by the CLI to exactly their frames.
    static let wav = Fixtures.named("wav_s16_stereo_44k.wav")
    static let flac = Fixtures.named("flac_s16_stereo_44k.flac")

    /// A fresh temporary folder, removed by `cleanUp`.
    let folder: String

    init() throws {
        folder = NSTemporaryDirectory() + "harmonia-inputs-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    private func cleanUp() { try? FileManager.default.removeItem(atPath: folder) }

    @discardableResult
    private func write(_ name: String, _ text: String) throws -> String {
        let path = folder + "/" + name
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    private func copy(_ fixture: Fixture, to name: String) throws {
        let path = folder + "/" + name
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: fixture.path, toPath: path)
    }

    /// Plays `inputs` into a raw f32le file with `directory` as the working
    /// directory (the test's own when nil); returns the process and the samples.
    private func play(_ inputs: [String], options: [String] = [], in directory: String? = nil) throws -> (ProcessResult, [Float]) {
        let out = folder + "/out-\(UUID().uuidString.prefix(6)).f32"
        defer { try? FileManager.default.removeItem(atPath: out) }
        let binary = ProcessRunner.productsDirectory + "/harmonia-play"
        let arguments = ["--output", "file:" + out] + options + inputs
        let result = try ProcessRunner.run("/bin/sh", ["-c", #"cd "$0" && exec "$@""#,
                                                     directory ?? FileManager.default.currentDirectoryPath, binary] + arguments)
        let data = (try? Data(contentsOf: URL(fileURLWithPath: out))) ?? Data()
        return (result, data.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) })
    }

    private func lines(_ text: String) -> [Substring] { text.split(separator: "\n") }

    @Test("a CUE sheet plays its ranges frame-exact: consecutive tracks give the file from the first INDEX 01 on, exactly once",
          arguments: [("wav_s16_stereo_44k.wav", 0), ("flac_s16_stereo_44k.flac", 10)])
    func cueSheet(_ name: String, _ firstCueFrame: Int) throws {
        defer { cleanUp() }
        let fixture = Fixtures.named(name)
        try copy(fixture, to: "disc/album." + (name as NSString).pathExtension)
        let sheet = try write("disc/album.cue", """
            REM COMMENT "three tracks over one file"
            PERFORMER "Sheet Artist"
            TITLE "Sheet Album"
            FILE "album.\((name as NSString).pathExtension)" WAVE
              TRACK 01 AUDIO
                TITLE "One"
                INDEX 01 00:00:\(firstCueFrame < 10 ? "0" : "")\(firstCueFrame)
              TRACK 02 AUDIO
                TITLE "Two"
                PERFORMER "Guest"
                INDEX 00 00:00:30
                INDEX 01 00:00:37
              TRACK 03 AUDIO
                TITLE "Three"
                INDEX 01 00:00:50

            """)
        let (result, samples) = try play([sheet])
        #expect(result.status == 0)
        #expect(result.stderrText.isEmpty)
        let reference = try Fixtures.cliReference(fixture.path)
        // From the first INDEX 01 (frame 0: the whole file; 10 CUE frames: 5880 frames at 44.1 kHz) to the end.
        let first = Int((Double(firstCueFrame) / 75 * Double(fixture.sampleRate)).rounded())
        let expected = Array(reference[(first * fixture.channels)...])
        #expect(samples.count == expected.count, "frame count")
        #expect(samples == expected, "bit-exact, every frame once")
        let shown = lines(result.stdoutText)
        #expect(shown.count == 3)
        #expect(shown.first?.hasPrefix("Playing 1/3: One — Sheet Artist (") == true)
        #expect(shown.dropFirst().first?.hasPrefix("Playing 2/3: Two — Guest (") == true)
        #expect(shown.last?.hasPrefix("Playing 3/3: Three — Sheet Artist (") == true)
    }

    @Test("M3U: relative entries against the playlist's folder from another working directory, #EXTINF titles, a bad entry skipped (exit 1)")
    func m3uRelative() throws {
        defer { cleanUp() }
        try copy(Self.wav, to: "audio/one.wav")
        try write("lists/mix.m3u", """
            #EXTM3U
            #EXTINF:1,Art - Tit
            ../audio/one.wav

            # a comment
            #EXTINF:3,Gone
            missing.flac
            #EXTINF:2,Only Title
            \(Self.flac.path)

            """)
        // Run from the temporary folder with a relative playlist path: the
        // entries are relative to lists/, not to the working directory.
        let (result, samples) = try play(["lists/mix.m3u"], in: folder)
        #expect(result.status == 1)
        let errors = lines(result.stderrText)
        #expect(errors.count == 1)
        #expect(errors.first?.hasPrefix("harmonia-play: lists/missing.flac: notFound: ") == true, "\(errors)")
        #expect(samples == (try Fixtures.cliReference(Self.wav.path) + Fixtures.cliReference(Self.flac.path)))
        let shown = lines(result.stdoutText)
        #expect(shown.count == 2)
        #expect(shown.first?.hasPrefix("Playing 1/3: Tit — Art (0:01.0)") == true, "\(shown)")
        // The playlist's title wins; the artist comes from the file's tags.
        #expect(shown.last?.hasPrefix("Playing 3/3: Only Title — Harmonia Artist (0:02.0)") == true, "\(shown)")
    }

    @Test("PLS: FileN in the order of N, TitleN as the title, relative entries against the playlist")
    func pls() throws {
        defer { cleanUp() }
        try copy(Self.wav, to: "one.wav")
        let playlist = try write("radio.pls", """
            [playlist]
            File2=\(Self.flac.path)
            Title1=First
            file1=one.wav
            Length1=1
            NumberOfEntries=2
            Version=2

            """)
        let (result, samples) = try play([playlist])
        #expect(result.status == 0)
        #expect(result.stderrText.isEmpty)
        #expect(samples == (try Fixtures.cliReference(Self.wav.path) + Fixtures.cliReference(Self.flac.path)))
        let shown = lines(result.stdoutText)
        #expect(shown.first?.hasPrefix("Playing 1/2: First (") == true, "\(shown)")
        #expect(shown.last?.hasPrefix("Playing 2/2: Harmonia Test Title — Harmonia Artist (") == true, "\(shown)")
    }

    @Test("a folder: audio files below it in natural order, case-insensitive; hidden and non-audio files skipped")
    func folderInNaturalOrder() throws {
        defer { cleanUp() }
        try copy(Self.wav, to: "album/track10.wav")
        try copy(Self.flac, to: "album/track2.flac")
        try copy(Self.wav, to: "album/Track1.wav")
        try copy(Self.wav, to: "album/sub/inner.wav")
        try copy(Self.wav, to: "album/.hidden.wav")
        try copy(Self.wav, to: "album/.git/x.wav")
        try write("album/notes.txt", "not audio")
        try write("album/list.m3u", "track10.wav\n")  // playlists in a folder are not played
        let (result, samples) = try play([folder + "/album/"])
        #expect(result.status == 0)
        #expect(result.stderrText.isEmpty)
        let names = lines(result.stdoutText).map { $0.split(separator: ":")[1].split(separator: "(")[0].trimmingCharacters(in: .whitespaces) }
        #expect(names == ["inner.wav", "Track1.wav", "Harmonia Test Title — Harmonia Artist", "track10.wav"])
        let wav = try Fixtures.cliReference(Self.wav.path), flac = try Fixtures.cliReference(Self.flac.path)
        #expect(samples == wav + wav + flac + wav)
    }

    @Test("bad playlists and folders are reported as 'harmonia-play: PATH: CATEGORY:' in order; the rest plays; exit 1")
    func badPlaylists() throws {
        defer { cleanUp() }
        try FileManager.default.createDirectory(atPath: folder + "/empty", withIntermediateDirectories: true)
        let missing = folder + "/missing.m3u"
        let cue = try write("broken.cue", "FILE a.wav WAVE\nTRACK 01 AUDIO\nINDEX 01 00:99:00\n")
        let pls = try write("not.pls", "just text\n")
        let (result, samples) = try play([missing, cue, folder + "/empty", pls, Self.wav.path])
        #expect(result.status == 1)
        let errors = lines(result.stderrText)
        #expect(errors.count == 4, "\(errors)")
        guard errors.count == 4 else { return }
        #expect(errors[0].hasPrefix("harmonia-play: \(missing): notFound: "))
        #expect(errors[1].hasPrefix("harmonia-play: \(cue): decodeError: \(cue) line 3: "))
        #expect(errors[2].hasPrefix("harmonia-play: \(folder)/empty: notFound: "))
        #expect(errors[3].hasPrefix("harmonia-play: \(pls): decodeError: "))
        #expect(samples == (try Fixtures.cliReference(Self.wav.path)))
        #expect(lines(result.stdoutText).count == 1)

        // Nothing left to play: exit 1, nothing written.
        let (none, nothing) = try play([missing])
        #expect(none.status == 1)
        #expect(nothing.isEmpty)
    }

    @Test("--start/--end with a folder or playlist first are a usage error (exit 2)")
    func rangeNeedsAFile() throws {
        defer { cleanUp() }
        let playlist = try write("a.m3u", Self.wav.path + "\n")
        for first in [playlist, folder] {
            let (result, samples) = try play([first, Self.wav.path], options: ["--end", "0.5"])
            #expect(result.status == 2)
            #expect(result.stderrText.contains("--start/--end"))
            #expect(samples.isEmpty)
        }
        // A file first: the range applies to it, the playlist follows whole.
        let (result, samples) = try play([Self.wav.path, playlist], options: ["--start", "0.5"])
        #expect(result.status == 0)
        let wav = try Fixtures.cliReference(Self.wav.path)
        #expect(samples == Array(wav[(22050 * 2)...]) + wav)
    }

    @Test("info --artwork saves the embedded cover's bytes; a file without one exits 1 and writes nothing")
    func infoArtwork() throws {
        defer { cleanUp() }
        let cover = folder + "/cover.png"
        let result = try ProcessRunner.harmoniaPlay(["info", "--artwork", cover, Self.flac.path])
        #expect(result.status == 0)
        #expect(result.stderrText.isEmpty)
        let data = try Data(contentsOf: URL(fileURLWithPath: cover))
        #expect(data.count == Fixtures.manifest.artwork.bytes)
        #expect(data.starts(with: [0x89, 0x50, 0x4E, 0x47]))  // PNG, as stored
        let sum = try ProcessRunner.run("/usr/bin/env", ["sha256sum", cover])
        #expect(sum.stdoutText.hasPrefix(Fixtures.manifest.artwork.sha256))

        let none = folder + "/none.png"
        let bare = try ProcessRunner.harmoniaPlay(["info", "--artwork", none, Self.wav.path])
        #expect(bare.status == 1)
        #expect(bare.stderrText.hasPrefix("harmonia-play: \(Self.wav.path): notFound: "))
        #expect(bare.stderrText.contains("no embedded cover"))
        #expect(!FileManager.default.fileExists(atPath: none))

        let two = try ProcessRunner.harmoniaPlay(["info", "--artwork", cover, Self.flac.path, Self.wav.path])
        #expect(two.status == 2)
    }
}
