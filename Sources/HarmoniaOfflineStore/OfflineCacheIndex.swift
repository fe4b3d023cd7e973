// The stream cache's share of the store: its size and what goes first —
// specs/offline.md §Cache
//
// Cached entries (unpinned) count against the cache's limit; offline copies
// (pinned) never do and are never evicted. The entries playing now — in this
// process (`keeping`) or in another (their file's lock is held) — stay.
import HarmoniaCore

extension OfflineStore {
    /// Evicts the least recently played cached entries until `total` more
    /// bytes (the whole length of the cached entry `key`, about to play)
    /// fit under `limit` with every other cached entry.
    ///
    /// A cached entry counts its bytes on disk; one playing now counts its
    /// whole length (it grows to that). Entries in `keeping`, locked by
    /// another process, or pinned are never evicted.
    /// - Returns: false, evicting nothing, when `total` cannot fit (larger
    ///   than `limit`, or what must stay leaves too little room).
    /// - Throws: `ioError` from the index or the folder. Threads: any.
    public func makeRoom(for key: String, total: Int64, limit: Int64, keeping: Set<String>) throws(CoreError) -> Bool {
        guard total >= 0, total <= limit else { return false }
        var staying: Int64 = 0
        var evictable: [(entry: OfflineEntry, bytes: Int64)] = []
        for entry in try entries() where !entry.pinned && entry.key != key {
            let file = path(of: entry)
            if keeping.contains(entry.key) || offlineFileIsLocked(file) {
                staying = saturatingSum(staying, max(entry.held, entry.size ?? 0))
            } else {
                evictable.append((entry, max(entry.held, offlineFileLength(file) ?? 0)))
            }
        }
        guard saturatingSum(staying, total) <= limit else { return false }
        var used = evictable.reduce(saturatingSum(staying, total)) { saturatingSum($0, $1.bytes) }
        // Least recently played first (never played: when it was added).
        evictable.sort { ($0.entry.lastPlayed ?? $0.entry.added, $0.entry.key) < ($1.entry.lastPlayed ?? $1.entry.added, $1.entry.key) }
        for (entry, bytes) in evictable where used > limit {
            try remove(entry)
            used -= bytes
        }
        return true
    }

    /// Bytes the cached (unpinned) entries hold on disk now.
    public func cachedBytes() throws(CoreError) -> Int64 {
        try entries().filter { !$0.pinned }.reduce(0) { saturatingSum($0, max($1.held, offlineFileLength(path(of: $1)) ?? 0)) }
    }
}

/// `a + b` for byte counts ≥ 0, at most `Int64.max` (a server's size may be any number).
func saturatingSum(_ a: Int64, _ b: Int64) -> Int64 {
    let (sum, overflow) = a.addingReportingOverflow(b)
    return overflow ? .max : sum
}
