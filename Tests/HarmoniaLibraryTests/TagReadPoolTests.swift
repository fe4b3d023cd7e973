// The scanner's reading threads — specs/library.md §Scanner (Threads and load)
import HarmoniaCore
import Testing
@testable import HarmoniaLibrary

@Suite struct TagReadPoolTests {
    @Test func threadsStartAtTheFirstReadSoAScanThatReadsNothingStartsNone() throws {
        let reader: LibraryScanner.TagReader = { _ throws(CoreError) in throw .unsupported("no reading here") }
        let idle = TagReadPool(threads: 2, reader: reader)
        #expect(!idle.started)
        idle.close()  // nothing to wait for

        let pool = TagReadPool(threads: 2, reader: reader)
        let results = pool.read(["a.flac", "b.flac", "c.flac"].map {
            TagReadPool.File(absolute: "/" + $0, songPath: $0, modified: 0, size: 0)
        }, cancellation: LibraryScanCancellation())
        #expect(pool.started)
        #expect(results.count == 3 && results.allSatisfy { if case .failure = $0 { true } else { false } })
        pool.close()
    }
}
