// Helpers of the library tests: temporary music trees, counting readers, stores.
import Foundation
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaLibrary
import HarmoniaSQLite
import HarmoniaTestSupport

/// A temporary folder, removed by `remove()`.
struct TemporaryFolder {
    let path: String

    init(_ label: String = "library") throws {
        path = FileManager.default.temporaryDirectory.path + "/harmonia-\(label)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// Creates the folder `relative` (and its parents).
    func folder(_ relative: String) throws {
        try FileManager.default.createDirectory(atPath: path + "/" + relative, withIntermediateDirectories: true)
    }

    /// Copies the audio fixture `name` (Tests/Fixtures/audio) to `relative`.
    func copyFixture(_ name: String, to relative: String) throws {
        try folder((relative as NSString).deletingLastPathComponent)
        try FileManager.default.copyItem(atPath: Fixtures.root + "/audio/" + name, toPath: path + "/" + relative)
    }

    /// Copies `Tests/Fixtures/<fixturePath>` to `relative`.
    func copy(_ fixturePath: String, to relative: String) throws {
        try folder((relative as NSString).deletingLastPathComponent)
        try FileManager.default.copyItem(atPath: Fixtures.root + "/" + fixturePath, toPath: path + "/" + relative)
    }

    func write(_ text: String, to relative: String) throws {
        try folder((relative as NSString).deletingLastPathComponent)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path + "/" + relative))
    }

    func symlink(_ relative: String, to target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: path + "/" + relative, withDestinationPath: target)
    }

    /// Sets the file's modification time to `seconds` since 1970.
    func touch(_ relative: String, seconds: Int) throws {
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: TimeInterval(seconds))],
                                              ofItemAtPath: path + "/" + relative)
    }

    func move(_ from: String, to: String) throws {
        try folder((to as NSString).deletingLastPathComponent)
        try FileManager.default.moveItem(atPath: path + "/" + from, toPath: path + "/" + to)
    }

    func delete(_ relative: String) throws {
        try FileManager.default.removeItem(atPath: path + "/" + relative)
    }
}

/// The FFmpeg tag reader, counting its calls and remembering the paths read.
final class CountingReader: Sendable {
    let paths = LockedValue<[String]>([])
    /// Called before each read with the number of reads so far (1 for the first).
    let before: @Sendable (Int) -> Void

    init(before: @escaping @Sendable (Int) -> Void = { _ in }) { self.before = before }

    var count: Int { paths.withLock { $0.count } }

    var read: LibraryScanner.TagReader {
        { [self] path throws(CoreError) in
            let number = paths.withLock { paths -> Int in
                paths.append(path)
                return paths.count
            }
            before(number)
            return try FFmpegTagReaderAdapter().readWithStreamInfo(url: path)
        }
    }
}

/// Warnings a scan reported.
final class WarningLog: Sendable {
    let lines = LockedValue<[String]>([])
    var all: [String] { lines.withLock { $0 } }
    var sink: @Sendable (String) -> Void { { [lines] line in lines.withLock { $0.append(line) } } }
}

/// Both stores, for the contract tests.
enum StoreKind: String, CaseIterable, CustomStringConvertible, Sendable {
    case sqlite, memory
    var description: String { rawValue }

    /// A new empty store and the folder that holds its file.
    func make() throws -> (store: any LibraryStorePort, folder: TemporaryFolder) {
        let folder = try TemporaryFolder("store")
        switch self {
        case .sqlite: return (try SQLiteLibraryStore(file: folder.path + "/library.db"), folder)
        case .memory: return (InMemoryLibraryStore(), folder)
        }
    }
}

extension LibraryStorePort {
    /// Adds `songs` in one batch, with the folders they need.
    func add(_ songs: [LibrarySong], modified: Int64 = 1) throws {
        try beginUpdate()
        var made = Set<String>()
        for song in songs {
            var parts: [Substring] = []
            for part in song.directory.split(separator: "/") {
                parts.append(part)
                let path = parts.joined(separator: "/")
                if made.insert(path).inserted { try upsertDirectory(LibraryDirectory(path: path, modified: modified)) }
            }
            try upsertSong(song)
        }
        try commitUpdate()
    }
}

/// A small library with the tags the query tests need.
enum SampleLibrary {
    static func song(_ path: String, _ tags: [LibraryTag: String], duration: Double? = 100, modified: Int64 = 1_000) -> LibrarySong {
        LibrarySong(path: path, modified: modified, size: 1_000, tags: tags.mapValues { [$0] }, duration: duration, format: "44100:16:2")
    }

    static let songs: [LibrarySong] = [
        song("Sigur Rós/Takk/02 Glósóli.flac", [.artist: "Sigur Rós", .album: "Takk", .track: "2", .title: "Glósóli", .genre: "Post-rock", .date: "2005"], duration: 372.5),
        song("Sigur Rós/Takk/01 Takk.flac", [.artist: "Sigur Rós", .album: "Takk", .track: "1", .title: "Takk", .genre: "Post-rock", .date: "2005"], duration: 55.25),
        song("Sigur Rós/Takk/10 Mílanó.flac", [.artist: "Sigur Rós", .album: "Takk", .track: "10", .title: "Mílanó", .genre: "Post-rock", .date: "2005"], duration: 644),
        song("Kraftwerk/Autobahn/1 Autobahn.mp3", [.artist: "Kraftwerk", .albumArtist: "Kraftwerk", .album: "Autobahn", .track: "1", .title: "Autobahn", .genre: "Electronic", .date: "1974"], duration: 1357, modified: 5_000),
        song("Compilations/Mix/b.ogg", [.artist: "Straße", .albumArtist: "Various Artists", .album: "Mix", .disc: "2", .track: "1", .title: "Weg"]),
        song("Compilations/Mix/a.ogg", [.artist: "STRASSE", .albumArtist: "Various Artists", .album: "Mix", .disc: "1", .track: "7", .title: "Ziel"]),
        song("Compilations/Mix/c.ogg", [.artist: "Nobody", .album: "Mix", .title: "No disc"]),
        song("Loose/track10.wav", [:], duration: nil),
        song("Loose/track2.wav", [.title: "Two"], duration: 2),
    ]
}
