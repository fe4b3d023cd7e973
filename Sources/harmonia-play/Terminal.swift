// The terminal under an interactive `play`: keys without echo or line
// buffering, and the way back to the user's settings on every way out.
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaControl

/// The controlling terminal's modes while the player runs interactively.
/// `enterKeyMode` saves stdin's termios and turns off canonical mode and
/// echo; `restore` puts the saved termios back and shows the cursor. The
/// restore also runs from an atexit handler and from handlers of fatal
/// signals (SIGSEGV, SIGILL, SIGABRT, …: async-signal-safe calls only, then
/// the previous handler runs), so no way out leaves the terminal raw.
enum Terminal {
    /// stdin and stdout are terminals, $TERM is not `dumb`, and the process
    /// is not in a background job (where changing modes would stop it).
    static var isInteractive: Bool {
        guard isatty(0) == 1, isatty(1) == 1 else { return false }
        if let term = getenv("TERM"), String(cString: term) == "dumb" { return false }
        // Not the controlling terminal (-1): no job control to respect.
        let foreground = tcgetpgrp(0)
        return foreground == -1 || foreground == getpgrp()
    }

    /// Columns of stdout's terminal (TIOCGWINSZ); 80 when it does not say.
    static var width: Int {
        var size = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// Saves stdin's termios and switches to non-canonical, no-echo input
    /// (one byte at a time; signals from ^C and ^Z still work). Installs the
    /// atexit and fatal-signal restorers once. Returns false (nothing
    /// changed) when stdin's modes cannot be read or set.
    static func enterKeyMode() -> Bool {
        var saved = termios()
        guard tcgetattr(0, &saved) == 0 else { return false }
        terminalSaved.pointee = saved
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        installRestorers()
        terminalModified.pointee = 1
        guard tcsetattr(0, TCSANOW, &raw) == 0 else {
            terminalModified.pointee = 0
            return false
        }
        writeBytes(hideCursor)
        return true
    }

    /// Switches to key mode again after a stop (^Z, then `fg`), keeping the
    /// termios saved first.
    static func reenterKeyMode() {
        var raw = terminalSaved.pointee
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        terminalModified.pointee = 1
        _ = tcsetattr(0, TCSANOW, &raw)
        writeBytes(hideCursor)
    }

    /// Puts the saved termios back and shows the cursor; does nothing when
    /// the terminal is not modified. `newline` ends a drawn status line.
    static func restore(newline: Bool) {
        restoreTerminal(newline: newline)
    }

    /// True between `enterKeyMode` and `restore`.
    static var isModified: Bool { terminalModified.pointee != 0 }

    static let hideCursor = "\u{1B}[?25l"
    static let showCursor = "\u{1B}[?25h"
    /// Back to the first column, erase to the end of the line.
    static let clearLine = "\r\u{1B}[K"

    private static func writeBytes(_ text: String) { Console.writeAll(1, text) }

    private static func installRestorers() {
        guard restorersInstalled.pointee == 0 else { return }
        restorersInstalled.pointee = 1
        atexit { restoreTerminal(newline: true) }
        for signo in fatalSignals {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { signo in
                restoreTerminal(newline: true)
                // Hand the signal on as if this handler had not been here:
                // raised again (blocked until this handler returns), it
                // reaches the previous handler or the default action.
                _ = sigaction(signo, previousActions + Int(signo), nil)
                raise(signo)
            }
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            _ = sigaction(signo, &action, previousActions + Int(signo))
        }
    }

    private static let fatalSignals: [Int32] = [SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGQUIT, SIGHUP]
}

// State the signal handlers and the atexit handler read: fixed addresses
// allocated once (no lazy initialisation or reference counting inside a handler).
nonisolated(unsafe) private let terminalSaved: UnsafeMutablePointer<termios> = {
    let p = UnsafeMutablePointer<termios>.allocate(capacity: 1)
    p.initialize(to: termios())
    return p
}()
nonisolated(unsafe) private let terminalModified: UnsafeMutablePointer<sig_atomic_t> = {
    let p = UnsafeMutablePointer<sig_atomic_t>.allocate(capacity: 1)
    p.initialize(to: 0)
    return p
}()
nonisolated(unsafe) private let restorersInstalled: UnsafeMutablePointer<Int32> = {
    let p = UnsafeMutablePointer<Int32>.allocate(capacity: 1)
    p.initialize(to: 0)
    return p
}()
nonisolated(unsafe) private let previousActions: UnsafeMutablePointer<sigaction> = {
    let p = UnsafeMutablePointer<sigaction>.allocate(capacity: 65)
    p.initialize(repeating: sigaction(), count: 65)
    return p
}()
/// "\n" + show cursor, written by the restorer.
nonisolated(unsafe) private let restoreBytes: (pointer: UnsafeMutablePointer<UInt8>, count: Int) = {
    let bytes = Array(("\n" + Terminal.showCursor).utf8)
    let p = UnsafeMutablePointer<UInt8>.allocate(capacity: bytes.count)
    p.initialize(from: bytes, count: bytes.count)
    return (p, bytes.count)
}()

/// Async-signal-safe: tcsetattr and write only.
private func restoreTerminal(newline: Bool) {
    guard terminalModified.pointee != 0 else { return }
    terminalModified.pointee = 0
    let skip = newline ? 0 : 1
    _ = write(1, restoreBytes.pointer + skip, restoreBytes.count - skip)
    _ = tcsetattr(0, TCSANOW, terminalSaved)
}

/// A key the player acts on.
enum Key: Equatable, Sendable {
    /// A printable ASCII character (space included).
    case character(Character)
    case up, down, left, right
}

/// Turns the bytes of a terminal's input into keys: ASCII characters, and
/// the arrows as `ESC [ A`…`ESC [ D` (also with modifier parameters, as
/// `ESC [ 1 ; 2 C`) or `ESC O A`…`ESC O D`. Other escape sequences, control
/// characters and non-ASCII bytes are dropped.
struct KeyParser {
    private enum State { case ground, escape, csi, ss3 }
    private var state = State.ground

    mutating func feed(_ byte: UInt8) -> Key? {
        switch state {
        case .ground:
            if byte == 0x1B { state = .escape; return nil }
            return (0x20..<0x7F).contains(byte) ? .character(Character(Unicode.Scalar(byte))) : nil
        case .escape:
            switch byte {
            case UInt8(ascii: "["): state = .csi; return nil
            case UInt8(ascii: "O"): state = .ss3; return nil
            default:
                // ESC then a key (Alt+key): the key.
                state = .ground
                return feed(byte)
            }
        case .csi:
            switch byte {
            case 0x20...0x3F: return nil  // parameters and intermediates
            case 0x40...0x7E:
                state = .ground
                return Self.arrow(byte)
            default:
                state = .ground
                return byte == 0x1B ? feed(byte) : nil
            }
        case .ss3:
            state = .ground
            return Self.arrow(byte)
        }
    }

    mutating func feed<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> [Key] {
        bytes.compactMap { feed($0) }
    }

    private static func arrow(_ final: UInt8) -> Key? {
        switch final {
        case UInt8(ascii: "A"): .up
        case UInt8(ascii: "B"): .down
        case UInt8(ascii: "C"): .right
        case UInt8(ascii: "D"): .left
        default: nil
        }
    }
}
