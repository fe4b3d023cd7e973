// OfflineDownloads on a fake store port — specs/control-protocol.md §Offline:
// progress moderated, a key queued once, a queued download removed before
// it starts, failures announced as offline_error, the events' JSON.
import Foundation
import HarmoniaControl
import HarmoniaCore
import Testing

/// A store port whose downloads wait for `release` and report `steps` progress calls at once.
private final class FakeCopies: OfflineCopiesPort, @unchecked Sendable {
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var released = false
    private var started: [String] = []
    private var stored: [OfflineCopy] = []
    let steps: Int
    let failing: Set<String>

    init(steps: Int = 1000, failing: Set<String> = []) {
        self.steps = steps
        self.failing = failing
    }

    func release() { lock.withLock { released = true; lock.broadcast() } }
    var downloadsStarted: [String] { lock.withLock { started } }

    /// Waits (bounded) until `count` downloads have started.
    func awaitStarted(_ count: Int) -> Bool {
        lock.withLock {
            let deadline = monotonicSeconds() + 10
            while started.count < count && monotonicSeconds() < deadline { lock.wait(seconds: 0.1) }
            return started.count >= count
        }
    }

    func check(url: String) throws(CoreError) {
        if !url.hasPrefix("http") { throw .invalidArgument("\(url): not an http URL") }
    }

    func key(forURL url: String, explicit: String?) -> String { explicit ?? url }

    func download(url: String, key: String, cancelled: @escaping @Sendable () -> Bool,
                  progress: @escaping (OfflineCopyProgress) -> Void) throws(CoreError) -> OfflineCopy {
        lock.withLock {
            started.append(key)
            lock.broadcast()
            while !released { lock.wait() }
        }
        if failing.contains(key) { throw .notFound("\(url): the server answered 404 Not Found;\nsecond line") }
        progress(.started(have: 0, total: Int64(steps)))
        for step in 1...steps { progress(.bytes(have: Int64(step), total: Int64(steps))) }
        let copy = OfflineCopy(key: key, url: url, size: Int64(steps), held: Int64(steps), complete: true, pinned: true,
                               added: 0, file: "x.data")
        lock.withLock { stored.append(copy) }
        return copy
    }

    func list() throws(CoreError) -> [OfflineCopy] { lock.withLock { stored } }

    func remove(named name: String) throws(CoreError) -> [OfflineCopy] {
        let found = lock.withLock { stored.filter { $0.key == name || $0.url == name } }
        guard !found.isEmpty else { throw .notFound("no offline copy has this key or URL") }
        lock.withLock { stored.removeAll { $0.key == name || $0.url == name } }
        return found
    }

    func completeKeys() throws(CoreError) -> Set<String> { Set(lock.withLock { stored.map(\.key) }) }
    func useKey(_ key: String, forURL url: String) {}
    func playbackKey(forURL url: String) -> String { url }
}

/// Collects announced events; waits for one.
private final class Announced: @unchecked Sendable {
    private let lock = ConditionLock()
    private var events: [OfflineEvent] = []

    func add(_ event: OfflineEvent) { lock.withLock { events.append(event); lock.broadcast() } }
    var all: [OfflineEvent] { lock.withLock { events } }

    /// Waits (at most 10 s) for an event `matches` accepts.
    func await(_ matches: (OfflineEvent) -> Bool) -> Bool {
        lock.withLock {
            let deadline = monotonicSeconds() + 10
            while !events.contains(where: matches) && monotonicSeconds() < deadline { lock.wait(seconds: 0.1) }
            return events.contains(where: matches)
        }
    }
}

@Suite("OfflineDownloads") struct OfflineDownloadsTests {
    @Test("progress moderated: a download reporting 1,000 steps at once is announced as at most two progress events, then done")
    func moderated() throws {
        let port = FakeCopies(), events = Announced()
        let downloads = OfflineDownloads(port: port)
        downloads.announce(to: events.add)
        port.release()
        try downloads.add(urls: ["http://h/a.flac"])
        #expect(events.await { if case .done = $0 { true } else { false } })
        let progress = events.all.filter { if case .progress = $0 { true } else { false } }
        #expect((1...2).contains(progress.count), "\(progress)")
        downloads.close()
    }

    @Test("a key queued twice downloads once; a queued one removed never starts; bad input queues nothing")
    func queueing() throws {
        let port = FakeCopies(steps: 1), events = Announced()
        let downloads = OfflineDownloads(port: port)
        downloads.announce(to: events.add)
        try downloads.add(urls: ["http://h/a.flac"])
        #expect(port.awaitStarted(1))
        try downloads.add(urls: ["http://h/a.flac", "http://h/b.flac", "http://h/c.flac"])
        #expect(try downloads.remove(named: "http://h/b.flac") == ["http://h/b.flac"])
        #expect(throws: CoreError.self) { try downloads.add(urls: ["http://h/d.flac", "file:///x"]) }
        #expect(throws: CoreError.self) { try downloads.add(urls: ["http://h/d.flac", "http://h/e.flac"], key: "k") }
        port.release()
        #expect(events.await { if case .done(let copy) = $0 { copy.key == "http://h/c.flac" } else { false } })
        #expect(port.downloadsStarted == ["http://h/a.flac", "http://h/c.flac"])
        #expect(downloads.completeKeys() == ["http://h/a.flac", "http://h/c.flac"])
        #expect(downloads.isOffline("http://h/a.flac", in: downloads.completeKeys()))
        downloads.close()
    }

    @Test("a failure is announced as offline_error, its message on one line")
    func failure() throws {
        let port = FakeCopies(failing: ["http://h/404.flac"]), events = Announced()
        let downloads = OfflineDownloads(port: port)
        downloads.announce(to: events.add)
        port.release()
        try downloads.add(urls: ["http://h/404.flac"])
        #expect(events.await { if case .failed = $0 { true } else { false } })
        let failed = try #require(events.all.first { if case .failed = $0 { true } else { false } })
        let line = ControlOffline.line(failed).serialized
        #expect(line.hasPrefix(#"{"event":"offline_error","data":{"key":"http://h/404.flac","url":"http://h/404.flac","category":"notFound","message":"#), "\(line)")
        let data = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])["data"] as? [String: Any]
        #expect((data?["message"] as? String)?.contains("\n") == false, "\(line)")
        downloads.close()
    }
}
