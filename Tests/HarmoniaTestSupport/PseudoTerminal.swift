// Runs a program on a pseudo-terminal, as a user's shell would: the pty is
// its controlling terminal and stdin, stdout and stderr.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A child process on a new pseudo-terminal. The child runs in its own
/// session with the pty's slave as its controlling terminal (so ^C written
/// to the master is SIGINT to it); the test keeps the slave open too, so the
/// terminal's modes outlive the child and can be compared after it exits.
/// Output is read from the master incrementally; every wait is bounded.
/// Use from one thread.
public final class PseudoTerminal {
    public struct Timeout: Error, CustomStringConvertible {
        public let description: String
    }

    /// How the child ended.
    public enum Termination: Equatable, Sendable {
        case exited(Int32)
        case signaled(Int32)
    }

    // _IOR('T', 0x30, unsigned int) and _IOW('T', 0x31, int) (asm-generic, x86 and arm alike).
    private static let TIOCGPTN: UInt = 0x8004_5430
    private static let TIOCSPTLCK: UInt = 0x4004_5431

    public let master: Int32
    /// The slave side, held open by the test (O_NOCTTY).
    public let slave: Int32
    public private(set) var pid: pid_t = 0
    /// The terminal's modes before the child started.
    public private(set) var initialModes = termios()
    private var bytes: [UInt8] = []
    private var termination: Termination?

    /// Opens a pty of `columns` × `rows` and starts `executable` on it
    /// (environment: this process's, with TERM=xterm and `environment` on top).
    public init(_ executable: String, _ arguments: [String], columns: UInt16 = 120, rows: UInt16 = 24,
                environment extra: [String: String] = [:]) throws {
        // posix_openpt, unlockpt and ptsname as Linux does them (the Glibc
        // module does not export them): /dev/ptmx, TIOCSPTLCK, TIOCGPTN.
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)
        var unlock: Int32 = 0, number: UInt32 = 0
        guard master >= 0, ioctl(master, Self.TIOCSPTLCK, &unlock) == 0, ioctl(master, Self.TIOCGPTN, &number) == 0 else {
            throw Timeout(description: "/dev/ptmx: \(String(cString: strerror(errno)))")
        }
        let path = "/dev/pts/\(number)"
        slave = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard slave >= 0 else { throw Timeout(description: "open \(path): \(String(cString: strerror(errno)))") }
        var size = winsize(ws_row: rows, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(master, UInt(TIOCSWINSZ), &size)
        _ = tcgetattr(slave, &initialModes)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A new session (POSIX_SPAWN_SETSID), default dispositions, nothing blocked.
        let setsid: Int32 = 0x80
        posix_spawnattr_setflags(&attributes, Int16(setsid | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        var all = sigset_t(), none = sigset_t()
        sigfillset(&all)
        sigdelset(&all, SIGKILL)
        sigdelset(&all, SIGSTOP)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Opened after setsid, without O_NOCTTY: the controlling terminal.
        posix_spawn_file_actions_addopen(&actions, 0, path, O_RDWR, 0)
        posix_spawn_file_actions_adddup2(&actions, 0, 1)
        posix_spawn_file_actions_adddup2(&actions, 0, 2)
        // Nothing else of the test process leaks into the child (glibc 2.34+).
        if let closefrom = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
            _ = unsafeBitCast(closefrom, to: AddCloseFrom.self)(&actions, 3)
        }

        var environment = ProcessRunner.childEnvironment(nil)
        environment["TERM"] = "xterm"
        environment.merge(extra) { $1 }
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        let status = posix_spawn(&pid, executable, &actions, &attributes, argv, envp)
        guard status == 0 else {
            close(master)
            close(slave)
            throw Timeout(description: "posix_spawn \(executable): \(String(cString: strerror(status)))")
        }
    }

    deinit {
        if termination == nil, pid > 0 {
            kill(pid, SIGKILL)
            var status: Int32 = 0
            _ = waitpid(pid, &status, 0)
        }
        close(master)
        close(slave)
    }

    /// Everything the child wrote so far (decoded as UTF-8).
    public var output: String { String(decoding: bytes, as: UTF8.self) }
    /// The bytes read so far: a mark for `wait(for:after:)`.
    public var mark: Int { bytes.count }
    /// The output from byte `offset` on.
    public func output(after offset: Int) -> String { String(decoding: bytes[min(offset, bytes.count)...], as: UTF8.self) }

    /// Types `text` (as the terminal's keyboard would).
    public func send(_ text: String) {
        var text = text
        text.withUTF8 { buffer in _ = write(master, buffer.baseAddress, buffer.count) }
    }

    /// Waits until `predicate` holds for the output after `offset`, reading
    /// as output arrives; throws after `timeout` seconds.
    public func wait(after offset: Int = 0, timeout: Double = 5, for what: String = "condition",
                     until predicate: (String) -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !predicate(output(after: offset)) {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, read(upTo: left) else {
                if predicate(output(after: offset)) { return }
                throw Timeout(description: "\(what) not seen within \(timeout) s; output: \(output(after: offset).debugDescription)")
            }
        }
    }

    /// Waits until `text` appears after `offset`; returns the mark after the output read.
    @discardableResult
    public func wait(for text: String, after offset: Int = 0, timeout: Double = 5) throws -> Int {
        try wait(after: offset, timeout: timeout, for: text.debugDescription) { $0.contains(text) }
        return mark
    }

    /// Sets the terminal's size (the child gets SIGWINCH).
    public func resize(columns: UInt16, rows: UInt16 = 24) {
        var size = winsize(ws_row: rows, ws_col: columns, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(master, UInt(TIOCSWINSZ), &size)
        _ = tcgetattr(slave, &initialModes)
    }

    /// Waits until `condition` holds (reading output meanwhile, checking
    /// every 20 ms at most); throws after `timeout` seconds.
    public func wait(timeout: Double = 5, for what: String, until condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw Timeout(description: "\(what) not within \(timeout) s; output: \(output.debugDescription)") }
            _ = read(upTo: min(left, 0.02))
        }
    }

    /// The child is stopped (job control): its state in /proc is T.
    public var isStopped: Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(close, offsetBy: 2)...].first == "T"
    }

    /// Waits for the child to end (reading its output meanwhile).
    public func waitForExit(timeout: Double = 5) throws -> Termination {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let termination { return termination }
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid {
                let signal = status & 0x7F
                termination = signal == 0 ? .exited((status >> 8) & 0xFF) : .signaled(signal)
                _ = read(upTo: 0)
                return termination!
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { throw Timeout(description: "no exit within \(timeout) s; output: \(output.debugDescription)") }
            _ = read(upTo: min(left, 0.02))
        }
    }

    /// The terminal's modes now (read on the slave).
    public func modes() -> termios {
        var modes = termios()
        _ = tcgetattr(slave, &modes)
        return modes
    }

    /// Reads what is available within `seconds`; false when nothing came.
    private func read(upTo seconds: Double) -> Bool {
        var descriptor = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
        let ready = poll(&descriptor, 1, Int32(max(seconds, 0) * 1000))
        guard ready > 0 else { return false }
        var chunk = [UInt8](repeating: 0, count: 4096)
        let n = Glibc.read(master, &chunk, chunk.count)
        guard n > 0 else { return false }
        bytes.append(contentsOf: chunk[0..<n])
        return true
    }
}

/// Byte-wise equality of two terminal mode sets (flags and control characters).
public func sameModes(_ a: termios, _ b: termios) -> Bool {
    var a = a, b = b
    return a.c_iflag == b.c_iflag && a.c_oflag == b.c_oflag && a.c_cflag == b.c_cflag && a.c_lflag == b.c_lflag
        && withUnsafeBytes(of: &a.c_cc) { x in withUnsafeBytes(of: &b.c_cc) { y in x.elementsEqual(y) } }
}
