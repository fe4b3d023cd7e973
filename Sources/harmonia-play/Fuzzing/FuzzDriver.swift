// FuzzDriver: harmonia-play built for libFuzzer — specs/testing.md §Fuzzing
//
// Only the fuzz build (`make fuzz`, Tests/Fuzz/fuzz.sh) defines FUZZING. It
// links libclang_rt.fuzzer_no_main (SwiftPM names the executable's own
// entry point `main`, so libFuzzer's main cannot be linked) and `Entry.main`
// hands the process to libFuzzer's driver here, with the target named by
// HARMONIA_FUZZ_TARGET (an environment variable, so the child processes of
// -fork and -jobs inherit it). Every other argument is libFuzzer's.
#if FUZZING
import CLibFuzzer
import HarmoniaControl
#if canImport(Glibc)
import Glibc
#endif

enum FuzzDriver {
    /// The target this process fuzzes; exits with usage when it is not set.
    static let target: FuzzTarget = {
        let name = getenv("HARMONIA_FUZZ_TARGET").map { String(cString: $0) } ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
            Console.err("harmonia-play (fuzz build): set HARMONIA_FUZZ_TARGET to one of: \(names)")
            exit(2)
        }
        return target
    }()

    static func run() -> Never {
        _ = target
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in
            _ = FuzzDriver.target.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
            return 0
        })
    }
}
#endif
