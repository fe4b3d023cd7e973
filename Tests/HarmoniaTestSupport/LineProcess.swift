// A running program (or a socket) read line by line as it writes: tests wait
// for a line that matches, on a condition variable with a deadline, never by sleeping.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Lines as they arrive from a byte stream; readers wait for one that matches.
public final class LineBuffer: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var pending = Data()
    private var lines: [String] = []
    private var taken: Set<Int> = []
    private var ended = false

    public init() {}

    /// Appends bytes; complete lines become visible to waiters.
    public func append(_ data: Data) {
        condition.lock()
        pending.append(data)
        while let newline = pending.firstIndex(of: 0x0A) {
            lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
            pending.removeSubrange(pending.startIndex...newline)
        }
        condition.broadcast()
        condition.unlock()
    }

    /// No more bytes will come.
    public func end() {
        condition.lock()
        if !pending.isEmpty { lines.append(String(decoding: pending, as: UTF8.self)); pending.removeAll() }
        ended = true
        condition.broadcast()
        condition.unlock()
    }

    /// Every line so far, once there are more than `count` (waiting for
    /// them until `timeout` seconds have passed or the stream ended).
    public func lines(after count: Int, timeout: Double = 10) -> [String] {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while lines.count <= count && !ended && condition.wait(until: deadline) {}
        return lines
    }

    /// Waits until the stream ends (at most `timeout` seconds); whether it did.
    public func waitForEnd(timeout: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !ended && condition.wait(until: deadline) {}
        return ended
    }

    /// Every line so far.
    public var all: [String] {
        condition.lock()
        defer { condition.unlock() }
        return lines
    }

    /// The first line not taken yet that matches, waiting for it until `timeout`
    /// seconds have passed or the stream ended; it is then taken. Returns the
    /// line and its position among all lines.
    public func take(timeout: Double = 10, where matches: (String) -> Bool) -> (line: String, position: Int)? {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        var checked = 0
        while true {
            while checked < lines.count {
                if !taken.contains(checked) && matches(lines[checked]) {
                    taken.insert(checked)
                    return (lines[checked], checked)
                }
                checked += 1
            }
            if ended || !condition.wait(until: deadline) {
                // One last look at lines that came with the end or the timeout.
                while checked < lines.count {
                    if !taken.contains(checked) && matches(lines[checked]) {
                        taken.insert(checked)
                        return (lines[checked], checked)
                    }
                    checked += 1
                }
                return nil
            }
        }
    }

    /// Reads the handle's descriptor to its end on a thread of its own, then
    /// calls `end()`. A read error (a reset connection, a descriptor closed
    /// under it) ends the stream too: `FileHandle.availableData` would trap.
    func pump(_ handle: FileHandle) {
        let thread = Thread { [self] in
            // The handle stays alive (and its descriptor open) while it is read.
            withExtendedLifetime(handle) {
                let fd = handle.fileDescriptor
                var buffer = [UInt8](repeating: 0, count: 65_536)
                while true {
                    let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { break }
                    append(Data(buffer[0..<n]))
                }
            }
            end()
        }
        thread.start()
    }
}

/// A child's exit, waited for without spinning.
final class ExitSignal: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var exited = false

    func signal() {
        condition.lock()
        exited = true
        condition.broadcast()
        condition.unlock()
    }

    /// True once exited; false after `seconds` without.
    func wait(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        condition.lock()
        defer { condition.unlock() }
        while !exited {
            if !condition.wait(until: deadline) { return exited }
        }
        return true
    }
}

/// A child process with a pipe on stdin and its stdout read line by line.
public final class LineProcess: @unchecked Sendable {
    public let process = Process()
    public let stdout = LineBuffer()
    public let stderr = LineBuffer()
    private let input = Pipe()
    /// Set by the termination handler: Foundation's `waitUntilExit` spins its
    /// run loop on Linux (a whole core for as long as it waits).
    private let exit = ExitSignal()

    /// - Parameter environment: the child's whole environment (nil: this process's).
    public init(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws {
        process.terminationHandler = { [exit] _ in exit.signal() }
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.environment = ProcessRunner.childEnvironment(environment)
        let out = Pipe(), err = Pipe()
        process.standardInput = input
        process.standardOutput = out
        process.standardError = err
        try process.run()
        stdout.pump(out.fileHandleForReading)
        stderr.pump(err.fileHandleForReading)
    }

    /// Starts the built harmonia-play.
    public static func harmoniaPlay(_ arguments: [String], environment: [String: String]? = nil) throws -> LineProcess {
        try LineProcess(ProcessRunner.productsDirectory + "/harmonia-play", arguments, environment: environment)
    }

    /// Writes `text` to the process's stdin.
    public func write(_ text: String) { write(Data(text.utf8)) }

    public func write(_ data: Data) { try? input.fileHandleForWriting.write(contentsOf: data) }

    /// Closes the process's stdin.
    public func closeInput() { try? input.fileHandleForWriting.close() }

    /// Waits for the exit (at most `timeout` seconds; then kills it) and returns the status.
    @discardableResult
    public func waitForExit(timeout: Double = 10) -> Int32? {
        guard exit.wait(seconds: timeout) else {
            process.terminate()
            _ = exit.wait(seconds: 10)
            return nil
        }
        return process.terminationStatus
    }

    /// The exit status once the process has exited, waiting at most
    /// `seconds`; nil (and the process left running) when it has not.
    public func exitStatus(within seconds: Double) -> Int32? {
        exit.wait(seconds: seconds) ? process.terminationStatus : nil
    }

    deinit {
        if process.isRunning { process.terminate() }
    }
}

/// A client of a Unix stream socket that reads lines on a thread of its own.
public final class UnixLineClient: @unchecked Sendable {
    public let lines = LineBuffer()
    private let fd: Int32

    public init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            Glibc.close(fd)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        lines.pump(FileHandle(fileDescriptor: fd, closeOnDealloc: false))
    }

    public func write(_ text: String) {
        var text = text
        text.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let n = send(fd, bytes.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
                if n <= 0 { return }
                offset += n
            }
        }
    }

    /// Ends the connection (the reading thread sees the end).
    public func close() { shutdown(fd, Int32(SHUT_RDWR)) }

    /// Half-closes: no more requests, but replies are still read.
    public func finishWriting() { shutdown(fd, Int32(SHUT_WR)) }

    /// Shuts the socket down, waits for the reading thread to see the end,
    /// then closes it: closed under a read, the number could already name
    /// another file. (Not closed at all if the reader never ends: a leak,
    /// not a read of someone else's descriptor.)
    deinit {
        shutdown(fd, Int32(SHUT_RDWR))
        if lines.waitForEnd(timeout: 10) { Glibc.close(fd) }
    }
}
