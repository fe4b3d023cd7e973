// Path confinement and covers — specs/library.md §MusicDirectory
import Foundation
import HarmoniaCore
import HarmoniaLibrary
import Testing

@Suite struct MusicDirectoryTests {
    @Test func resolvesInsideAndRefusesEverythingLeadingOutside() throws {
        let outside = try TemporaryFolder("outside")
        let tree = try TemporaryFolder("music")
        defer { tree.remove(); outside.remove() }
        try tree.write("x", to: "A/song.flac")
        try outside.write("secret", to: "secret.flac")
        try tree.symlink("A/out", to: outside.path)
        try tree.symlink("A/in", to: tree.path + "/A/song.flac")
        try tree.symlink("loop", to: "loop")
        let music = try MusicDirectory(root: tree.path + "/./A/..")
        let real = try MusicDirectory(root: tree.path).root

        #expect(try music.resolve("") == real)
        #expect(try music.resolve("A/song.flac") == real + "/A/song.flac")
        #expect(try music.resolve("A/../A/./song.flac") == real + "/A/song.flac")
        #expect(try music.resolve("A/in") == real + "/A/song.flac")
        let refused = ["../" + (outside.path as NSString).lastPathComponent + "/secret.flac", "A/../../etc/passwd",
                       "/etc/passwd", "file:///etc/passwd", "FILE://" + outside.path + "/secret.flac",
                       "A/out/secret.flac", "A/out", "loop", "A/missing.flac", "A/song.flac\0.txt"]
        for path in refused {
            do {
                let resolved = try music.resolve(path)
                Issue.record("resolved \(path) to \(resolved)")
            } catch {
                #expect(error == .notFound("'\(path)': no such file or folder in the music directory"))
            }
        }
        #expect(throws: CoreError.self) { try MusicDirectory(root: tree.path + "/A/song.flac") }
    }

    @Test func coverIsMPDsFirstNameInTheSongsFolderAndStaysInside() throws {
        let outside = try TemporaryFolder("outside")
        let tree = try TemporaryFolder("music")
        defer { tree.remove(); outside.remove() }
        try tree.write("x", to: "A/song.flac")
        try tree.write("jpg", to: "A/cover.jpg")
        try tree.write("png", to: "A/cover.png")
        try tree.write("x", to: "B/song.flac")
        try outside.write("png", to: "cover.png")
        try tree.symlink("B/cover.png", to: outside.path + "/cover.png")
        try tree.write("jpg", to: "B/folder.jpg")
        try tree.write("x", to: "C/song.flac")
        let music = try MusicDirectory(root: tree.path)
        #expect(try music.coverFile(forSong: "A/song.flac") == music.root + "/A/cover.png")
        // B's cover.png leads outside: skipped, folder.jpg found.
        #expect(try music.coverFile(forSong: "B/song.flac") == music.root + "/B/folder.jpg")
        #expect(try music.coverFile(forSong: "C/song.flac") == nil)
        #expect(throws: CoreError.self) { try music.coverFile(forSong: "../x/song.flac") }
    }
}
