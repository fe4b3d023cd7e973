// ClockPort and LoggerPort adapters, and the manual test clock: specs/ports.md.
import Foundation
import HarmoniaCore
import HarmoniaTestSupport
import Logging
import Synchronization
import Testing

@Suite("ClockPort")
struct ClockTests {
    @Test("the monotonic clock never goes back, and sleep(until:) returns at or after the deadline")
    func monotonic() {
        let clock = MonotonicClockAdapter()
        var last = clock.now()
        for _ in 0..<10_000 {
            let now = clock.now()
            #expect(now >= last)
            last = now
        }
        let deadline = clock.now() + 2_000_000
        clock.sleep(until: deadline)
        #expect(clock.now() >= deadline)
        clock.sleep(until: 0)  // a past deadline returns at once
    }

    @Test("the manual clock wakes a sleeper only once advanced past its deadline")
    func manual() async {
        let clock = ManualClock(start: 1_000)
        let woke = Atomic<UInt64>(0)
        let thread = Thread {
            clock.sleep(nanoseconds: 500)          // until 1 500
            woke.store(clock.now(), ordering: .releasing)
        }
        thread.start()
        clock.waitForSleepers(1)                   // the sleeper is waiting: no polling
        clock.advance(by: 499)                     // 1 499: not yet
        #expect(woke.load(ordering: .acquiring) == 0)
        clock.advance(by: 1)                       // 1 500
        clock.waitForSleepers(0)
        while woke.load(ordering: .acquiring) == 0 { await Task.yield() }
        #expect(woke.load(ordering: .acquiring) == 1_500)
    }
}

/// Captures swift-log messages.
private final class CapturingHandler: LogHandler, @unchecked Sendable {
    let records: LockedValue<[(Logger.Level, String)]>
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    init(_ records: LockedValue<[(Logger.Level, String)]>) { self.records = records }
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(event: LogEvent) {
        records.withLock { $0.append((event.level, event.message.description)) }
    }
}

@Suite("LoggerPort")
struct LoggerTests {
    @Test("swift-log adapter: levels map, disabled levels never build their message")
    func swiftLog() {
        let records = LockedValue<[(Logger.Level, String)]>([])
        var logger = Logger(label: "test") { _ in CapturingHandler(records) }
        logger.logLevel = .info
        let port: any LoggerPort = SwiftLogLoggerAdapter(logger: logger)
        let built = Atomic<Int>(0)
        func message(_ text: String) -> String { built.add(1, ordering: .relaxed); return text }
        port.debug(message("d"))
        port.info(message("i"))
        port.warn(message("w"))
        port.error(message("e"))
        #expect(records.withLock { $0.map(\.0) } == [.info, .warning, .error])
        #expect(records.withLock { $0.map(\.1) } == ["i", "w", "e"])
        #expect(built.load(ordering: .relaxed) == 3)  // "d" was never built
    }
}
