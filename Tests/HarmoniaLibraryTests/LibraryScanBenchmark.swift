// Scan and query times on ~1,200 files: run with HARMONIA_LIBRARY_BENCH=1
// (otherwise the test does nothing). Prints figures; asserts no timing.
import Foundation
import HarmoniaCore
import HarmoniaLibrary
import HarmoniaSQLite
import HarmoniaTestSupport
import Testing

@Suite struct LibraryScanBenchmark {
    @Test func scanAndQueryTimesOnTwelveHundredFiles() throws {
        guard ProcessInfo.processInfo.environment["HARMONIA_LIBRARY_BENCH"] != nil else { return }
        let tree = try TemporaryFolder("bench")
        let setup = try LibraryScannerTests.Setup(tree: tree)
        defer { setup.remove() }
        // 80 albums of the 15 audio fixtures, hard-linked (distinct paths, no copying).
        for album in 1...80 {
            let folder = "Artist \(album % 20)/Album \(album)"
            try tree.folder(folder)
            for fixture in Fixtures.all {
                try FileManager.default.linkItem(atPath: fixture.path, toPath: tree.path + "/\(folder)/\(fixture.name)")
            }
        }
        func time<T>(_ label: String, _ body: () throws -> T) rethrows -> T {
            let start = ContinuousClock.now
            let value = try body()
            print("bench: \(label): \(ContinuousClock.now - start)")
            return value
        }
        let reader = CountingReader()
        let full = try time("full scan") { try setup.scanner(reader).scan() }
        print("bench: full scan summary \(full), reads \(reader.count)")
        let again = CountingReader()
        _ = try time("rescan, nothing changed") { try setup.scanner(again).scan() }
        let store = setup.store
        let all = try time("songs(matching: everything)") { try store.songs(matching: .and([])) }
        _ = try time("songs(matching: artist == …) (indexed)") { try store.songs(matching: .tag(.artist, TagMatch(.equals, "Harmonia Artist"))) }
        _ = try time("songs(matching: any contains, folded)") { try store.songs(matching: .anyTag(TagMatch(.contains, "harmonia", foldCase: true))) }
        _ = try time("tagValues(album, group albumartist)") { try store.tagValues(.album, groupedBy: [.albumArtist], matching: .and([])) }
        _ = try time("stats") { try store.stats() }
        _ = try time("songsForAdd(under: \"\")") { try store.songsForAdd(under: "") }
        _ = try time("listing(of: one album)") { try store.listing(of: "Artist 1/Album 1") }
        print("bench: \(all.count) songs")
    }
}
