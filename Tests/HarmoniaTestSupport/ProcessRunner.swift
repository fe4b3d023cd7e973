// Runs a program to completion and captures what it printed.
import Foundation
import Testing

public struct ProcessResult: Sendable {
    public let status: Int32
    public let stdout: Data
    public let stderr: Data
    public var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    public var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

public enum ProcessRunner {
    /// Runs `executable` with `arguments`, feeding `input` on stdin, and waits
    /// for it to exit (its output is drained concurrently, so large outputs
    /// cannot block it).
    public static func run(_ executable: String, _ arguments: [String], input: Data? = nil,
                           environment: [String: String]? = nil) throws -> ProcessResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = childEnvironment(environment)
        let out = Pipe(), err = Pipe(), inp = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = inp
        try process.run()
        let outData = LockedValue(Data()), errData = LockedValue(Data())
        let group = DispatchGroup()
        for (pipe, sink) in [(out, outData), (err, errData)] {
            group.enter()
            DispatchQueue.global().async {
                let data = pipe.fileHandleForReading.readDataToEndOfFile()
                sink.withLock { $0 = data }
                group.leave()
            }
        }
        if let input { inp.fileHandleForWriting.write(input) }
        try? inp.fileHandleForWriting.close()
        group.wait()
        process.waitUntilExit()
        return ProcessResult(status: process.terminationStatus, stdout: outData.withLock { $0 }, stderr: errData.withLock { $0 })
    }

    /// A child's environment: `given` (nil: this process's), its data
    /// folder (XDG_DATA_HOME) the running test's own unless the test chose
    /// one. The programs run with their defaults — the stream cache on —,
    /// and what one test's players kept (history, offline copies, cache) is
    /// seen by that test's later players, never by another test's: a
    /// loopback port is reused within a run, so another test's URL can be
    /// the same string.
    public static func childEnvironment(_ given: [String: String]?) -> [String: String] {
        let inherited = ProcessInfo.processInfo.environment
        var environment = given ?? inherited
        if environment["XDG_DATA_HOME"] == inherited["XDG_DATA_HOME"], let test = Test.current {
            let base = inherited["XDG_DATA_HOME"] ?? (NSTemporaryDirectory() + "harmonia-test-data")
            environment["XDG_DATA_HOME"] = base + "/by-test/" + folderName(for: String(describing: test.id))
        }
        return environment
    }

    /// A short folder name for a test's id (its function's name and a hash of the whole).
    private static func folderName(for id: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325  // FNV-1a
        for byte in id.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        let name = id.split(separator: "/").last.map { String($0.prefix { $0.isLetter || $0.isNumber }) } ?? ""
        return name.prefix(40) + "-" + String(hash, radix: 16)
    }

    /// The folder holding the built products (the test bundle's folder).
    public static var productsDirectory: String {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("harmonia-play").path) { return url.path }
            url.deleteLastPathComponent()
        }
        return Fixtures.repositoryRoot + "/.build/debug"
    }

    /// Runs the built harmonia-play.
    public static func harmoniaPlay(_ arguments: [String], input: Data? = nil) throws -> ProcessResult {
        try run(productsDirectory + "/harmonia-play", arguments, input: input)
    }
}
