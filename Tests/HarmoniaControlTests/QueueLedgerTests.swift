// QueueLedger: ids and versions as MPD clients see them (specs/application.md §Queue ids and versions).
import HarmoniaControl
import HarmoniaCore
import Testing

@Suite("QueueLedger")
struct QueueLedgerTests {
    @Test("ids stay with their entries, are never reused, and each change makes one new version")
    func idsAndVersions() {
        let ledger = QueueLedger()
        #expect(ledger.version == 1)
        let a = Track(url: "a.flac"), b = Track(url: "b.flac"), c = Track(url: "c.flac")
        var entries = ledger.sync(with: [a, b])
        #expect(entries.map(\.id) == [1, 2])
        #expect(ledger.version == 2)
        ledger.sync(with: [a, b])                       // nothing changed: same version
        #expect(ledger.version == 2)
        entries = ledger.sync(with: [b, a, c])          // moved and added
        #expect(entries.map(\.id) == [2, 1, 3])
        #expect(ledger.version == 3)
        #expect(ledger.position(ofID: 3) == 2)
        #expect(ledger.changes(since: 2).map(\.position) == [0, 1, 2])
        entries = ledger.sync(with: [b, a])             // c removed: its id is gone for good
        #expect(ledger.position(ofID: 3) == nil)
        #expect(ledger.changes(since: 3).isEmpty)       // nothing placed anew, only the end cut
        #expect(ledger.version == 4)
        entries = ledger.sync(with: [b, a, Track(url: "c.flac")])
        #expect(entries.map(\.id) == [2, 1, 4])
        #expect(ledger.changes(since: 4).map(\.entry.id) == [4])
        #expect(ledger.id(of: a) == 1)
    }
}
