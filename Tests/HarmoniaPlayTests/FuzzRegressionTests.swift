// The fuzz targets' regression corpus, replayed (specs/testing.md §Fuzzing):
// every input kept under Tests/Fixtures/fuzz/TARGET/ (each crasher `make fuzz`
// found, minimised, and a few inputs that reach deep paths) runs through the
// same entry function libFuzzer calls, so a fixed crash cannot come back.
// A trap here ends the test process: the input is named on stderr first.
import Foundation
import HarmoniaControl
@testable import harmonia_play
import HarmoniaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Fuzz regression corpus")
struct FuzzRegressionTests {
    @Test("each kept input runs through its target without a trap", arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) throws {
        let folder = Fixtures.root + "/fuzz/" + target.rawValue
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).filter { !$0.hasPrefix(".") }.sorted()
        #expect(!names.isEmpty, "no inputs in \(folder)")
        for name in names {
            let path = folder + "/" + name
            Console.err("fuzz replay: \(target.rawValue) \(path)")
            let data = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
            let outcome = target.run(data)
            #expect(!outcome.isEmpty && !outcome.contains("\n"), "\(name): \(outcome)")
        }
    }
}
