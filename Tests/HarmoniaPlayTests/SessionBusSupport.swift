// A private D-Bus session bus for one test, the desktop's tools run on it
// (playerctl, gdbus), and a signal monitor (dbus-monitor) read message by
// message. Every wait is for a line or an exit, with a deadline.
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaTestSupport
import Testing

/// `dbus-daemon --session` started for one test (its own address, never the
/// desktop's), with a scratch folder; the daemon is stopped on release.
final class PrivateSessionBus {
    let daemon: LineProcess
    let address: String
    /// A folder of this test's own (cover cache, output files).
    let folder: String
    /// This process's environment with the private bus and cache folder.
    let environment: [String: String]

    init() throws {
        folder = NSTemporaryDirectory() + "harmonia-mpris-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        daemon = try LineProcess("/usr/bin/env", ["dbus-daemon", "--session", "--nofork", "--print-address=1"])
        let line = try #require(daemon.stdout.take(timeout: 30) { $0.hasPrefix("unix:") },
                                "dbus-daemon printed no address (is the dbus package installed?); stderr: \(daemon.stderr.all)")
        address = line.line
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        environment["XDG_CACHE_HOME"] = folder + "/cache"
        self.environment = environment
    }

    deinit {
        Self.kill(daemon)
        try? FileManager.default.removeItem(atPath: folder)
    }

    /// The exit status of `process`, waiting up to `timeout` seconds; nil
    /// (and the process killed) when it has not exited by then.
    static func exitStatus(_ process: LineProcess, timeout: Double = 60) -> Int32? {
        guard let status = process.exitStatus(within: timeout) else {
            kill(process)
            return nil
        }
        return status
    }

    /// Ends `process` for sure: SIGKILL (a child started from a test thread
    /// inherits its blocked SIGTERM), then reaps it.
    static func kill(_ process: LineProcess) {
        if process.process.isRunning { Glibc.kill(process.process.processIdentifier, SIGKILL) }
        _ = process.exitStatus(within: 10)
    }

    /// Runs a tool found on PATH with the private bus; waits for its exit.
    func run(_ tool: String, _ arguments: [String]) throws -> ProcessResult {
        try ProcessRunner.run("/usr/bin/env", [tool] + arguments, environment: environment)
    }

    /// `playerctl -p harmonia_play ARGS`: its stdout without the final newline.
    @discardableResult
    func playerctl(_ arguments: String..., sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        let result = try run("playerctl", ["-p", "harmonia_play"] + arguments)
        #expect(result.status == 0, "playerctl \(arguments.joined(separator: " ")): \(result.stderrText)", sourceLocation: sourceLocation)
        var text = result.stdoutText
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    /// A property of the player read with gdbus, as gdbus prints it (`(<'Paused'>,)`).
    func property(_ name: String, interface: String = "org.mpris.MediaPlayer2.Player", busName: String = PrivateSessionBus.mprisName) throws -> String {
        try call(busName: busName, "org.freedesktop.DBus.Properties.Get", [interface, name])
    }

    /// `gdbus call` of `method` on the MPRIS object; its output line (or error text).
    func call(busName: String = PrivateSessionBus.mprisName, _ method: String, _ arguments: [String] = []) throws -> String {
        let result = try run("gdbus", ["call", "--session", "--dest", busName, "--object-path", "/org/mpris/MediaPlayer2",
                                       "--method", method] + arguments)
        return (result.status == 0 ? result.stdoutText : result.stderrText).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Waits (gdbus wait, 60 s at most) until `name` has an owner on the bus.
    func waitForName(_ name: String = PrivateSessionBus.mprisName) throws -> Bool {
        try run("gdbus", ["wait", "--session", "--timeout", "60", name]).status == 0
    }

    static let mprisName = "org.mpris.MediaPlayer2.harmonia_play"
}

/// `dbus-monitor` on the private bus, watching the signals of our object;
/// its output is read one whole message at a time.
final class SignalMonitor {
    let process: LineProcess
    /// The index of the first line not yet read.
    private var cursor = 0

    init(_ bus: PrivateSessionBus) throws {
        process = try LineProcess("/usr/bin/env", ["dbus-monitor", "--session", "type='signal',path='/org/mpris/MediaPlayer2'"],
                                  environment: bus.environment)
        // The bus tells a new monitor NameLost once its match rules are in
        // force (BecomeMonitor): from that line on, no signal is missed.
        let handshake = try #require(process.stdout.take(timeout: 30) { $0.contains("member=NameLost") },
                                     "dbus-monitor did not start: \(process.stderr.all)")
        cursor = handshake.position + 1
    }

    deinit { PrivateSessionBus.kill(process) }

    /// The body (argument lines) of the next `member` signal for which
    /// `matches` holds; signals before it are passed over. Nil after 30 s.
    func next(_ member: String, where matches: (String) -> Bool = { _ in true }) -> String? {
        let deadline = Date(timeIntervalSinceNow: 30)
        while let message = nextMessage(deadline: deadline) {
            if message.header.contains("member=\(member)") && matches(message.body) { return message.body }
        }
        return nil
    }

    /// Every signal header read so far (the lines starting `signal `).
    var headersSoFar: [String] { process.stdout.all.prefix(cursor).filter { $0.hasPrefix("signal ") } }

    /// Reads the next whole message: a `signal ...` header line and its
    /// argument lines, complete when its top-level arguments (3 for
    /// PropertiesChanged, 1 for the others) are all closed.
    private func nextMessage(deadline: Date) -> (header: String, body: String)? {
        func line(_ index: Int) -> String? {
            let lines = process.stdout.lines(after: index, timeout: max(deadline.timeIntervalSinceNow, 0))
            return index < lines.count ? lines[index] : nil
        }
        while let candidate = line(cursor), !candidate.hasPrefix("signal ") { cursor += 1 }
        guard let header = line(cursor) else { return nil }
        cursor += 1
        let expected = header.contains("member=PropertiesChanged") ? 3 : 1
        var arguments = 0, depth = 0
        var body: [String] = []
        while arguments < expected || depth > 0 {
            guard let text = line(cursor) else { return nil }
            cursor += 1
            body.append(text)
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if trimmed == "]" || trimmed == ")" || trimmed == "}" {
                depth -= 1
                continue
            }
            if depth == 0 { arguments += 1 }
            if trimmed.hasSuffix("[") || trimmed.hasSuffix("(") || trimmed.hasSuffix("{") { depth += 1 }
        }
        return (header, body.joined(separator: "\n"))
    }
}
