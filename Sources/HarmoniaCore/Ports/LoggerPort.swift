// LoggerPort — specs/ports.md §LoggerPort

/// Structured, levelled logging. Messages are built only when the level is
/// enabled (autoclosures).
///
/// Threads: any thread, concurrently. Never call it from a real-time thread:
/// it may allocate and lock.
public protocol LoggerPort: Sendable {
    /// Detail for developers; the message is built only when logged.
    func debug(_ message: @autoclosure () -> String)
    /// What happened, for the curious (an output reconnected).
    func info(_ message: @autoclosure () -> String)
    /// Something went wrong and was handled (data skipped).
    func warn(_ message: @autoclosure () -> String)
    /// Something failed.
    func error(_ message: @autoclosure () -> String)
}
