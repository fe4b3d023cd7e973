// A scan killed with SIGKILL — specs/library.md §Crash safety
//
// The test binary runs itself as the child (`--filter killableChildScan`,
// the environment naming the tree and the database): the child scans with a
// reader that, at its fifth file, says so on stdout and blocks forever; the
// parent kills it there with SIGKILL and checks the database it left.
import Foundation
import HarmoniaCore
import HarmoniaLibrary
import HarmoniaSQLite
import Testing

private let childVariable = "HARMONIA_LIBRARY_KILL_CHILD"
private let readyMarker = "HARMONIA-LIBRARY-CHILD-BLOCKED"

@Suite struct LibraryKillTests {
    @Test func scanKilledWithSIGKILLLeavesAConsistentDatabase() throws {
        let setup = try LibraryScannerTests.Setup(tree: try LibraryScannerTests.makeTree())
        defer { setup.remove() }
        setup.store.close()

        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/proc/self/exe")
        child.arguments = ["--testing-library", "swift-testing", "--filter", "killableChildScan"]
        child.environment = ProcessInfo.processInfo.environment.merging(
            [childVariable: setup.tree.path + "\n" + setup.file]) { _, new in new }
        let output = Pipe()
        child.standardOutput = output
        child.standardError = FileHandle.nullDevice
        try child.run()

        var seen = Data()
        while !String(decoding: seen, as: UTF8.self).contains(readyMarker) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }  // the child ended without blocking
            seen += chunk
        }
        kill(child.processIdentifier, SIGKILL)
        child.waitUntilExit()
        #expect(String(decoding: seen, as: UTF8.self).contains(readyMarker), "child output: \(String(decoding: seen, as: UTF8.self).suffix(2000))")
        #expect(child.terminationReason == .uncaughtSignal)

        let store = try SQLiteLibraryStore(file: setup.file)
        defer { store.close() }
        #expect(try store.integrityProblems().isEmpty)
        // Reads of two, each batch committed at once, a batch written while the next is read: when the
        // fifth file's read blocked, the first two were committed and the next two were being written
        // (committed or not: the kill lands anywhere in that write). Nothing else, nothing partial.
        let kept = try store.stats().songs
        #expect(kept == 2 || kept == 4, "kept \(kept) songs")
        #expect(try store.stats().lastUpdate == nil)
        let reader = CountingReader()
        let scanner = LibraryScanner(musicDirectory: try MusicDirectory(root: setup.tree.path), store: store,
                                     readTags: reader.read, now: { 42 })
        let rest = try scanner.scan()
        #expect(rest.completed && rest.added == 6 - kept && reader.count == 6 - kept, "the rest, and only the rest, read again")
        #expect(try store.stats().songs == 6)
        #expect(try store.stats().lastUpdate == 42)
        #expect(try store.integrityProblems().isEmpty)
    }

    /// The child's side: does nothing unless the parent test started it.
    @Test func killableChildScan() throws {
        guard let value = ProcessInfo.processInfo.environment[childVariable] else { return }
        let parts = value.split(separator: "\n").map(String.init)
        let store = try SQLiteLibraryStore(file: parts[1])
        let reader = CountingReader(before: { number in
            guard number == 5 else { return }
            FileHandle.standardOutput.write(Data((readyMarker + "\n").utf8))
            while true { pause() }  // until SIGKILL
        })
        let scanner = LibraryScanner(musicDirectory: try MusicDirectory(root: parts[0]), store: store,
                                     readTags: reader.read, options: .init(batchSize: 2, commitRows: 1))
        _ = try scanner.scan()
        Issue.record("the child scan was not killed")
    }
}
