// Recording tests on PipeWire across a stalled machine — specs/testing.md
import HarmoniaTestSupport
import Testing

/// Runs `body` — a test that records what a sink plays and checks it
/// exactly — again when a run's checks failed while PipeWire logged a late
/// graph cycle, at most `attempts` runs in all.
///
/// PipeWire's graph runs at SCHED_FIFO, above every test and player thread:
/// a late cycle ("client too slow", "XRun" in its log) means the machine
/// itself stalled, and it can drop a cycle from what a monitor records or
/// from what the sink plays. A run across one proves nothing either way, so
/// its failed checks are reported as known issues and the test runs again.
/// A check that fails with no late cycle logged fails the test at once, and
/// the last run's checks count whatever happens. On PulseAudio (no such
/// log) the first run's checks count.
func retriedAcrossLateGraphCycles(_ what: String, attempts: Int = 3, _ body: () throws -> Void) throws {
    for attempt in 1..<max(attempts, 1) {
        let excuse = LateCycleExcuse()
        try withKnownIssue(LateCycleExcuse.comment, isIntermittent: true, {
            try body()
        }, when: { true }, matching: excuse.matches)
        guard excuse.runsAgain(what, attempt: attempt) else { return }
    }
    try body()
}

/// `retriedAcrossLateGraphCycles` for a test that awaits (an event, a task).
func retriedAcrossLateGraphCyclesAsync(_ what: String, attempts: Int = 3, _ body: () async throws -> Void) async throws {
    for attempt in 1..<max(attempts, 1) {
        let excuse = LateCycleExcuse()
        try await withKnownIssue(LateCycleExcuse.comment, isIntermittent: true, {
            try await body()
        }, when: { true }, matching: excuse.matches)
        guard excuse.runsAgain(what, attempt: attempt) else { return }
    }
    try await body()
}

/// One run's excuse: its failed checks, while PipeWire logged a late graph
/// cycle since the run began.
private struct LateCycleExcuse: Sendable {
    static let comment: Comment = "PipeWire logged a late graph cycle during this run: it proves nothing, and runs again"
    private let lateAtStart = PulseTestServer.graphLateCycleLines()
    private let excused = LockedValue(0)

    /// A failed check of the run is excused (counted) when a late cycle was logged.
    var matches: KnownIssueMatcher {
        { [lateAtStart, excused] _ in
            guard PulseTestServer.graphLateCycleLines() > lateAtStart else { return false }
            excused.withLock { $0 += 1 }
            return true
        }
    }

    /// True, said on the console, when a failed check was excused: the test runs again.
    func runsAgain(_ what: String, attempt: Int) -> Bool {
        let count = excused.withLock { $0 }
        if count > 0 { print("[\(what)] run \(attempt): \(count) failed check(s) while PipeWire logged a late graph cycle; running again") }
        return count > 0
    }
}
