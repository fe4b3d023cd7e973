// The decoder's warnings (corrupt data skipped, frames lost) reach the user.
import HarmoniaCore

/// A `LoggerPort` that prints warnings and errors on stderr as
/// `harmonia-play: warning: MESSAGE` (the decoder's messages begin with the
/// path) and drops debug and info. A warning is not a failure: the input
/// still played, so it does not change the exit status.
struct WarningLogger: LoggerPort {
    func debug(_ message: @autoclosure () -> String) {}
    func info(_ message: @autoclosure () -> String) {}
    func warn(_ message: @autoclosure () -> String) { Console.err("harmonia-play: warning: \(message())") }
    func error(_ message: @autoclosure () -> String) { Console.err("harmonia-play: warning: \(message())") }
}
