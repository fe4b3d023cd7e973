// Runs bodies on real threads (not the Swift concurrency pool) and waits for
// them: the shape of playback (decode thread, audio thread), and the shape
// ThreadSanitizer tracks reliably.
import Foundation
import HarmoniaCore

public enum Threads {
    /// Starts every body on its own Thread and returns when all have finished.
    public static func run(_ bodies: [@Sendable () -> Void]) {
        let lock = ConditionLock()
        let remaining = LockedValue(bodies.count)
        for body in bodies {
            Thread {
                body()
                lock.withLock {
                    remaining.withLock { $0 -= 1 }
                    lock.broadcast()
                }
            }.start()
        }
        lock.withLock { while remaining.withLock({ $0 }) > 0 { lock.wait() } }
    }
}
