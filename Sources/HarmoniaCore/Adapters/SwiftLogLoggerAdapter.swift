// SwiftLogLoggerAdapter — specs/ports.md §LoggerPort
import Logging

/// `LoggerPort` on apple/swift-log: whatever backend the program bootstrapped
/// (stderr by default). Messages are only built when the level is enabled.
public struct SwiftLogLoggerAdapter: LoggerPort {
    private let logger: Logger

    /// Creates a swift-log `Logger` of its own with `label` and `level`.
    /// - Parameters:
    ///   - label: the logger's label (`"harmonia.ffmpeg"`, …).
    ///   - level: the lowest level emitted.
    public init(label: String = "harmonia", level: Logger.Level = .info) {
        var logger = Logger(label: label)
        logger.logLevel = level
        self.logger = logger
    }

    /// Logs through `logger` as it is configured (label, level, metadata).
    public init(logger: Logger) { self.logger = logger }

    public func debug(_ message: @autoclosure () -> String) { logger.debug("\(message())") }
    public func info(_ message: @autoclosure () -> String) { logger.info("\(message())") }
    public func warn(_ message: @autoclosure () -> String) { logger.warning("\(message())") }
    public func error(_ message: @autoclosure () -> String) { logger.error("\(message())") }
}

/// A `LoggerPort` that drops everything.
public struct NoopLoggerAdapter: LoggerPort {
    /// Creates the adapter; it holds no state.
    public init() {}
    public func debug(_ message: @autoclosure () -> String) {}
    public func info(_ message: @autoclosure () -> String) {}
    public func warn(_ message: @autoclosure () -> String) {}
    public func error(_ message: @autoclosure () -> String) {}
}
