// LoggerPort — specs/ports.md §LoggerPort

/// Structured, levelled logging. Messages are built only when the level is
/// enabled (autoclosures).
///
/// Threads: any thread, concurrently. Never call it from a real-time thread:
/// it may allocate and lock.
public protocol LoggerPort: Sendable {
    func debug(_ message: @autoclosure () -> String)
    func info(_ message: @autoclosure () -> String)
    func warn(_ message: @autoclosure () -> String)
    func error(_ message: @autoclosure () -> String)
}
