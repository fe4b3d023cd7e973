// swift-log for harmonia-play: `harmonia-play: LEVEL: message` on stderr
// (stdout may carry JSON events or control replies, so logs never go there).
import ArgumentParser
import HarmoniaControl
import Logging

extension Logger.Level: @retroactive ExpressibleByArgument {}

/// Writes each message as one line on stderr; the level filter is the Logger's.
struct StderrLogHandler: LogHandler {
    var logLevel: Logger.Level = .warning
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        Console.err("harmonia-play: \(event.level.rawValue): \(Console.oneLine("\(event.message)"))")
    }

    /// Makes every swift-log logger of the process use this handler (once, at start).
    static func bootstrap() {
        LoggingSystem.bootstrap { _ in StderrLogHandler() }
    }
}
