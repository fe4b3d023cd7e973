// Writing to stdout/stderr, and the `harmonia-play: PATH: CATEGORY: message` form.
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// The player's lines for people and scripts on stdout and stderr.
///
/// Threads: any; a line is written whole (one `write` loop per line).
public enum Console {
    /// Something drawn on the terminal that lines must go above (the
    /// interactive status line), or nil.
    public protocol LinePrinter: AnyObject, Sendable {
        /// Writes `text` to `fd` above what it draws.
        func printAbove(_ fd: Int32, _ text: String)
    }

    private static let lock = ConditionLock()
    // Guarded by `lock`.
    nonisolated(unsafe) private static weak var printer: (any LinePrinter)?

    /// Routes lines through `printer` while it lives (nil: straight to the descriptor).
    public static func setLinePrinter(_ printer: (any LinePrinter)?) {
        lock.withLock { self.printer = printer }
    }

    /// Writes `text` and a newline to stdout.
    public static func out(_ text: String) { line(1, text + "\n") }

    /// Writes `text` and a newline to stderr.
    public static func err(_ text: String) { line(2, text + "\n") }

    /// Above the status line while one is drawn, so that neither garbles the other.
    private static func line(_ fd: Int32, _ text: String) {
        if let printer = lock.withLock({ printer }) { printer.printAbove(fd, text) } else { writeAll(fd, text) }
    }

    /// Reports a failed input the way every subcommand does, on one line
    /// whatever the name holds (`oneLine`).
    public static func report(_ path: String, _ error: CoreError) {
        err("harmonia-play: \(oneLine(path)): \(error.category.rawValue): \(oneLine(error.message))")
    }

    /// `text` made safe for one line of a terminal or a log, as
    /// specs/inputs.md §Inputs (Names) says: `\n`, `\r`, `\t`, other control characters (C0, DEL, C1) as
    /// `\xNN` (C1 as their code point), a byte that is not UTF-8 (PathBytes'
    /// escape) as `\xNN` of the byte, and `\` as `\\`. Other text unchanged.
    public static func oneLine(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: needsEscape) else { return text }
        var escaped = ""
        for scalar in text.unicodeScalars {
            if let byte = PathBytes.byte(standingFor: scalar) {
                escaped += hex(byte)
            } else if needsEscape(scalar) {
                switch scalar {
                case "\n": escaped += "\\n"
                case "\r": escaped += "\\r"
                case "\t": escaped += "\\t"
                case "\\": escaped += "\\\\"
                default: escaped += hex(UInt8(scalar.value))
                }
            } else {
                escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar == "\\"
            || PathBytes.byte(standingFor: scalar) != nil
    }

    private static func hex(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return "\\x" + String(digits[Int(byte >> 4)]) + String(digits[Int(byte & 15)])
    }

    /// Writes every byte of `text` to `fd` (retrying short writes and EINTR).
    public static func writeAll(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { bytes in _ = writeAll(fd, UnsafeRawBufferPointer(bytes)) }
    }

    /// Writes every byte of `bytes` to `fd`. Returns false on an error.
    @discardableResult
    public static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += n
        }
        return true
    }
}
