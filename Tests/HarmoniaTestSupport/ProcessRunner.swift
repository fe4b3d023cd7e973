// Runs a program to completion and captures what it printed.
import Foundation

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

    /// A child's environment: `given` (nil: this process's), with
    /// HARMONIA_PLAY_CACHE=off unless it says otherwise — a test's
    /// harmonia-play keeps no stream cache in the user's folders, and a URL
    /// another test played is fetched again (a cache test passes --cache).
    public static func childEnvironment(_ given: [String: String]?) -> [String: String] {
        var environment = given ?? ProcessInfo.processInfo.environment
        if environment["HARMONIA_PLAY_CACHE"] == nil { environment["HARMONIA_PLAY_CACHE"] = "off" }
        return environment
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
