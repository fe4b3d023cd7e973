// Writing to stdout/stderr, and the `harmonia-play: PATH: CATEGORY: message` form.
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

enum Console {
    /// Writes `text` and a newline to stdout.
    static func out(_ text: String) { line(1, text + "\n") }

    /// Writes `text` and a newline to stderr.
    static func err(_ text: String) { line(2, text + "\n") }

    /// Above the status line while one is drawn, so that neither garbles the other.
    private static func line(_ fd: Int32, _ text: String) {
        if let session = TerminalSession.active { session.printAbove(fd, text) } else { writeAll(fd, text) }
    }

    /// Reports a failed input the way every subcommand does.
    static func report(_ path: String, _ error: CoreError) {
        err("harmonia-play: \(path): \(error.category.rawValue): \(error.message)")
    }

    /// Writes every byte of `text` to `fd` (retrying short writes and EINTR).
    static func writeAll(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { bytes in _ = writeAll(fd, UnsafeRawBufferPointer(bytes)) }
    }

    /// Writes every byte of `bytes` to `fd`. Returns false on an error.
    @discardableResult
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
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
