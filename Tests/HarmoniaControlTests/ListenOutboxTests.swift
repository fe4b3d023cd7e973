// The outbox against a scripted service — specs/listens.md §Outbox, §Retries
import HarmoniaControl
import HarmoniaCore
import HarmoniaTestSupport
import Testing

/// The history in memory. Thread-safe.
final class MemoryListenStore: ListenStorePort, @unchecked Sendable {
    let rows = LockedValue<[ListenRecord]>([])

    func record(_ metadata: ListenMetadata, listenedAt: Int64, secondsHeard: Double) throws(CoreError) -> (id: Int64, dropped: Int) {
        rows.withLock { rows in
            let id = Int64(rows.count + 1)
            rows.append(ListenRecord(id: id, metadata: metadata, listenedAt: listenedAt, secondsHeard: secondsHeard))
            return (id, 0)
        }
    }

    func undelivered(limit: Int) throws(CoreError) -> [ListenRecord] {
        rows.withLock { Array($0.filter { $0.state == .pending || $0.state == .sending }.prefix(limit)) }
    }

    func mark(_ ids: [Int64], _ state: ListenDeliveryState, error: String?) throws(CoreError) {
        rows.withLock { rows in
            for index in rows.indices where ids.contains(rows[index].id) && rows[index].state != .delivered {
                rows[index].state = state
                rows[index].lastError = error
                if state == .pending { rows[index].attempts += 1 }
            }
        }
    }

    func history(limit: Int) throws(CoreError) -> [ListenRecord] { rows.withLock { Array($0.reversed().prefix(limit)) } }
}

/// A service answering from a script (then `accepted`), remembering every request.
final class ScriptedReporter: ListenReporterPort, @unchecked Sendable {
    let script: LockedValue<[ListenReportOutcome]>
    let requests = LockedValue<[ListenSubmission]>([])
    /// Listens whose title is this are refused (400) in any request.
    let poison: String?

    init(_ script: [ListenReportOutcome] = [], poison: String? = nil) {
        self.script = LockedValue(script)
        self.poison = poison
    }

    func submit(_ submission: ListenSubmission, timeout: Double) -> ListenReportOutcome {
        requests.withLock { $0.append(submission) }
        if let poison, case .listens(let listens, _) = submission, listens.contains(where: { $0.metadata.title == poison }) {
            return .rejected("bad listen")
        }
        return script.withLock { $0.isEmpty ? .accepted : $0.removeFirst() }
    }

    /// Every listen id the service accepted, in order (with repeats, if any).
    var acceptedIDs: [Int64] {
        requests.withLock { $0 }.compactMap { if case .listens(let l, _) = $0 { l.map(\.id) } else { nil } }.flatMap { $0 }
    }
}

@Suite("ListenOutbox: delivery, retries, throttling, refusals") struct ListenOutboxTests {
    static func metadata(_ title: String = "T") -> ListenMetadata { ListenMetadata(title: title, artists: ["A"], source: "/m/x.flac") }

    static func outbox(_ store: MemoryListenStore, _ reporter: ScriptedReporter, clock: LockedValue<Double> = LockedValue(100),
                       lines: LockedValue<[String]> = LockedValue([])) -> ListenOutbox {
        ListenOutbox(store: store, reporter: reporter, clock: { clock.withLock { $0 } }, jitter: { 0.5 },
                     report: { line in lines.withLock { $0.append(line) } })
    }

    @Test("a listen counted now goes alone as single; a backlog as imports of at most 1000")
    func singleAndImport() throws {
        let store = MemoryListenStore(), reporter = ScriptedReporter()
        let outbox = Self.outbox(store, reporter)
        let id = try store.record(Self.metadata(), listenedAt: 1_700_000_000, secondsHeard: 50).id
        outbox.recorded(id: id)
        #expect(outbox.step(timeout: 1) == .sent)
        if case .listens(_, let single)? = reporter.requests.withLock({ $0.first }) { #expect(single) } else { Issue.record("no request") }
        for n in 0..<2500 { _ = try store.record(Self.metadata(), listenedAt: 1_700_000_100 + Int64(n), secondsHeard: 50) }
        let result = outbox.deliverBacklog(timeout: 1) { _ in Issue.record("no wait expected") }
        #expect(result.delivered == 2500 && result.stoppedBy == nil)
        let sizes = reporter.requests.withLock { $0 }.dropFirst().compactMap { if case .listens(let l, let single) = $0 { single ? -1 : l.count } else { nil } }
        #expect(sizes == [1000, 1000, 500])
        #expect(Set(reporter.acceptedIDs).count == reporter.acceptedIDs.count)  // none twice
        #expect(outbox.step(timeout: 1) == .idle)
    }

    @Test("failures back off 1, 2, 4 s; the listen stays pending with its reason; then delivered once")
    func backoff() throws {
        let store = MemoryListenStore(), clock = LockedValue(100.0)
        let reporter = ScriptedReporter([.failed("Connection refused"), .failed("HTTP 503"), .failed("timeout")])
        let outbox = Self.outbox(store, reporter, clock: clock)
        outbox.recorded(id: try store.record(Self.metadata(), listenedAt: 1_700_000_000, secondsHeard: 50).id)
        #expect(outbox.step(timeout: 1) == .waiting(until: 101, rateLimited: false))
        #expect(try store.undelivered(limit: 5).first?.lastError == "Connection refused")
        #expect(outbox.step(timeout: 1) == .waiting(until: 102, rateLimited: false))
        #expect(outbox.step(timeout: 1) == .waiting(until: 104, rateLimited: false))
        #expect(outbox.step(timeout: 1) == .sent)
        #expect(try store.history(limit: 1).first?.state == .delivered && store.rows.withLock { $0[0].attempts } == 3)
        #expect(reporter.acceptedIDs == [1, 1, 1, 1])  // four requests, one accepted: the service holds it once
    }

    @Test("429: nothing before the reset time")
    func throttled() throws {
        let store = MemoryListenStore(), clock = LockedValue(100.0)
        let reporter = ScriptedReporter([.rateLimited(retryAfter: 7)])
        let outbox = Self.outbox(store, reporter, clock: clock)
        _ = try store.record(Self.metadata(), listenedAt: 1_700_000_000, secondsHeard: 50)
        #expect(outbox.step(timeout: 1) == .waiting(until: 107, rateLimited: true))
        var waited: [Double] = []
        let result = outbox.deliverBacklog(timeout: 1) { seconds in waited.append(seconds); clock.withLock { $0 += seconds } }
        #expect(result.delivered == 1)
        #expect(waited == [7] && reporter.requests.withLock { $0.count } == 2)
    }

    @Test("400 for one listen of a batch: halved until it is alone, rejected with the reason; the others delivered once")
    func rejectedOne() throws {
        let store = MemoryListenStore(), reporter = ScriptedReporter(poison: "bad")
        let outbox = Self.outbox(store, reporter)
        for n in 0..<5 { _ = try store.record(Self.metadata(n == 3 ? "bad" : "ok"), listenedAt: 1_700_000_000 + Int64(n), secondsHeard: 50) }
        let result = outbox.deliverBacklog(timeout: 1) { _ in }
        #expect(result.delivered == 4 && result.stoppedBy == nil)
        let rows = store.rows.withLock { $0 }
        #expect(rows.filter { $0.state == .delivered }.count == 4)
        #expect(rows[3].state == .rejected && rows[3].lastError == "bad listen")
        // What the service accepted: each good listen once.
        let accepted = reporter.requests.withLock { $0 }.compactMap { request -> [Int64]? in
            guard case .listens(let l, _) = request, !l.contains(where: { $0.metadata.title == "bad" }) else { return nil }
            return l.map(\.id)
        }.flatMap { $0 }
        #expect(accepted.sorted() == [1, 2, 3, 5])
    }

    @Test("401: one line naming the token problem, the listens kept, no more requests")
    func unauthorized() throws {
        let store = MemoryListenStore(), lines = LockedValue<[String]>([])
        let reporter = ScriptedReporter([.unauthorized("HTTP 401: Invalid authorization token.")])
        let outbox = Self.outbox(store, reporter, lines: lines)
        _ = try store.record(Self.metadata(), listenedAt: 1_700_000_000, secondsHeard: 50)
        #expect(outbox.deliverBacklog(timeout: 1) { _ in }.stoppedBy == .unauthorized)
        #expect(outbox.step(timeout: 1) == .unauthorized)
        #expect(reporter.requests.withLock { $0.count } == 1)
        #expect(lines.withLock { $0.count } == 1 && lines.withLock { $0[0] }.contains("token"))
        #expect(try store.undelivered(limit: 5).count == 1)
    }

    @Test("the background thread delivers what is recorded, and finish waits for it, bounded")
    func background() throws {
        let store = MemoryListenStore(), reporter = ScriptedReporter()
        let outbox = ListenOutbox(store: store, reporter: reporter, report: { _ in })
        outbox.start()
        outbox.playingNow(Self.metadata())
        outbox.recorded(id: try store.record(Self.metadata(), listenedAt: 1_700_000_000, secondsHeard: 50).id)
        outbox.finish(within: 10)
        #expect(store.rows.withLock { $0[0].state } == .delivered)
        #expect(reporter.requests.withLock { $0.count } == 2)
    }
}
