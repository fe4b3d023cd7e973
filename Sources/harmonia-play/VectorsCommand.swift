// harmonia-play vectors: runs test-vector files against the playback service.
import ArgumentParser
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaVectors
#if canImport(Glibc)
import Glibc
#endif

struct VectorsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "vectors",
        abstract: "Run test-vector files against the playback service.",
        discussion: """
            Each case of each file runs on a fresh DefaultPlaybackService with the FFmpeg
            decoder and tag reader, a manual clock and a null output of manual pace: time
            passes only in 'wait' operations, where the clock and the output advance
            together in 5 ms steps. So every run gives the same result; nothing depends on
            the machine's speed. The format is described in specs/vectors/README.md.

            Prints 'PASS name' or 'FAIL name: why' per case (after a '# vector_name (file)'
            line per file), then 'N passed, M failed'. A file that cannot be read or
            parsed is reported on stderr as 'harmonia-play: FILE: why'.
            Exit status: 0 every case passed, 1 a case failed or a file was unusable,
            2 usage error.
            """
    )

    @Option(help: "Real seconds one operation may take before the service is taken to hang and the run ends.")
    var timeLimit: Double = 60

    @Argument(help: "Vector files (JSON).")
    var files: [String]

    func validate() throws {
        guard timeLimit > 0 else { throw ValidationError("--time-limit must be positive") }
    }

    func run() throws {
        let tally = Tally()
        let runner = VectorRunner(operationTimeLimit: timeLimit)
        let onHang: @Sendable (String, String) -> Void = { name, why in
            let (passed, failed) = tally.counts
            Console.out("FAIL \(name): \(why)")
            Console.out("\(passed) passed, \(failed + 1) failed")
            Console.err("harmonia-play: vectors: stopped: \(name): \(why)")
            Glibc.exit(1)
        }
        var unusable = false
        for path in files {
            let file: VectorFile
            do throws(VectorFileError) {
                file = try VectorFile.read(path: path)
            } catch {
                Console.err("harmonia-play: \(error.path): \(error.message)")
                unusable = true
                continue
            }
            Console.out("# \(file.name) (\(path))")
            for index in file.cases.indices {
                let (name, failure) = runner.run(file, index: index, onHang: onHang)
                if let failure {
                    Console.out("FAIL \(name): \(failure)")
                } else {
                    Console.out("PASS \(name)")
                }
                tally.add(passed: failure == nil)
            }
        }
        let (passed, failed) = tally.counts
        Console.out("\(passed) passed, \(failed) failed")
        if failed > 0 || unusable { throw ExitCode(1) }
    }
}

/// Cases passed and failed so far (read by the watchdog's thread too).
private final class Tally: @unchecked Sendable {
    private let lock = NSLock()
    private var passed = 0, failed = 0

    func add(passed ok: Bool) {
        lock.lock()
        if ok { passed += 1 } else { failed += 1 }
        lock.unlock()
    }

    var counts: (passed: Int, failed: Int) {
        lock.lock()
        defer { lock.unlock() }
        return (passed, failed)
    }
}
