// Queue entries as network protocols name them: stable integer ids and a
// queue version — specs/application.md §Queue ids and versions
import Foundation
import HarmoniaCore

/// Gives each queue entry a small integer id for as long as it stays in the
/// queue (MPD's `Id`, never reused), and counts versions of the queue (MPD's
/// `playlist`): every change of the entries or their order makes a new
/// version, and each entry remembers the version that last moved or added it
/// (what MPD's `plchanges` asks for).
///
/// Threads: any; every method takes the ledger's lock (`sync(reading:)`
/// reads the service's queue under it: the ledger's lock comes before the
/// service's).
public final class QueueLedger: @unchecked Sendable {
    /// One queue entry with its id and the version that last placed it.
    public struct Entry: Sendable, Equatable {
        public let track: Track
        public let id: Int
        public let changed: Int
    }

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var ids: [UUID: Int] = [:]
    private var entries: [Entry] = []
    private var nextID = 1
    private var currentVersion: Int

    /// - Parameter version: the first version (MPD starts at 1).
    public init(version: Int = 1) {
        currentVersion = version
    }

    /// Brings the ledger up to `queue`: new entries get ids, removed ones lose
    /// theirs, and any difference makes a new version. Returns the entries.
    @discardableResult
    public func sync(with queue: [Track]) -> [Entry] {
        sync { queue }
    }

    /// `sync(with:)` with the queue read under the ledger's lock, so that
    /// threads syncing at once apply their snapshots in the order they were
    /// taken (an older snapshot never undoes a newer one).
    @discardableResult
    public func sync(reading current: () -> [Track]) -> [Entry] {
        lock.withLock {
            let queue = current()
            guard queue.map(\.id) != entries.map(\.track.id) || zip(queue, entries).contains(where: { $0 != $1.track }) else {
                return entries
            }
            currentVersion += 1
            var kept: [UUID: Int] = [:]
            var updated: [Entry] = []
            updated.reserveCapacity(queue.count)
            for (position, track) in queue.enumerated() {
                let id: Int
                if let known = ids[track.id] {
                    id = known
                } else {
                    id = nextID
                    nextID = nextID == Int.max ? 1 : nextID + 1
                }
                kept[track.id] = id
                let unchanged = position < entries.count && entries[position].track == track
                updated.append(Entry(track: track, id: id, changed: unchanged ? entries[position].changed : currentVersion))
            }
            ids = kept
            entries = updated
            return entries
        }
    }

    /// The version of the queue as last synced.
    public var version: Int { lock.withLock { currentVersion } }

    /// The entries as last synced.
    public var current: [Entry] { lock.withLock { entries } }

    /// The id of the entry `track` (by its identity), if it is in the queue.
    public func id(of track: Track) -> Int? { lock.withLock { ids[track.id] } }

    /// The position of the entry with `id`, if it is in the queue.
    public func position(ofID id: Int) -> Int? {
        lock.withLock { entries.firstIndex { $0.id == id } }
    }

    /// Entries placed after `version` (MPD's `plchanges`), in queue order.
    public func changes(since version: Int) -> [(position: Int, entry: Entry)] {
        lock.withLock {
            entries.enumerated().filter { $0.element.changed > version }.map { ($0.offset, $0.element) }
        }
    }
}
