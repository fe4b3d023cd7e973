// Fresh links for signed URLs the server stopped accepting — specs/network.md §Policy
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// Where a control client's `renew` (a fresh URL for a refused one) meets
/// the network source that waits for it.
///
/// Threads: `wait` on a source's transfer thread, `provide` on the main loop.
public final class LinkRenewals: @unchecked Sendable {
    public init() {}

    private let lock = ConditionLock()
    /// Guarded by `lock`: fresh links by the URL they replace.
    private var fresh: [String: String] = [:]

    /// Waits up to `seconds` for a fresh link for `url`; nil when none came.
    public func wait(for url: String, seconds: Double) -> String? {
        let deadline = Self.now() + seconds
        return lock.withLock {
            while fresh[url] == nil {
                let left = deadline - Self.now()
                if left <= 0 { return nil }
                lock.wait(seconds: left)
            }
            return fresh.removeValue(forKey: url)
        }
    }

    /// Gives `link` for `url`: now to a source that waits, or later to the
    /// next refusal of `url`.
    public func provide(_ link: String, for url: String) {
        lock.withLock {
            fresh[url] = link
            lock.broadcast()
        }
    }

    private static func now() -> Double {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
    }
}
