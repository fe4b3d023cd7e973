// Hashing a download beside it — specs/offline.md §Downloads
//
// The SHA-256 recorded at completion is computed on a thread of its own, so
// the transfer writes the next bytes while the last ones are hashed (two
// cores: the download runs at the slower of the two, not their sum).
import Foundation
import HarmoniaCore

/// Feeds a SHA-256 on its own thread. Owned by one download (`feed`,
/// `finish` from its thread); released, it stops the hashing thread.
final class BackgroundHasher {
    private let state: State

    /// Starts the hashing thread, going on from `seed` (the bytes already held).
    init(seed: SHA256) {
        state = State(seed: seed)
        let state = self.state
        let thread = Thread { nameCurrentThread("harmonia.hash"); state.run() }
        thread.name = "harmonia.hash"
        thread.start()
    }

    deinit { state.abandon() }

    /// Queues a copy of `bytes`; waits while 8 MiB are already queued.
    func feed(_ bytes: UnsafeRawBufferPointer) { state.feed(bytes) }

    /// Waits for every queued byte to be hashed; the digest in hex.
    func finish() -> String { state.finish() }

    /// What the two threads share, guarded by `lock`.
    private final class State: @unchecked Sendable {
        private let lock = ConditionLock()
        private var queue: [[UInt8]] = []
        private var queuedBytes = 0
        private var finishing = false
        private var abandoned = false
        private var digest: String?
        /// The hashing thread's only, until `digest` is set.
        private var hasher: SHA256
        private static let maxQueued = 8 << 20

        init(seed: SHA256) { hasher = seed }

        func feed(_ bytes: UnsafeRawBufferPointer) {
            let chunk = [UInt8](bytes)
            lock.withLock {
                while queuedBytes >= Self.maxQueued && !abandoned { lock.wait() }
                queue.append(chunk)
                queuedBytes += chunk.count
                lock.broadcast()
            }
        }

        func finish() -> String {
            lock.withLock {
                finishing = true
                lock.broadcast()
                while digest == nil { lock.wait() }
                return digest!
            }
        }

        func abandon() {
            lock.withLock {
                abandoned = true
                queue.removeAll()
                lock.broadcast()
            }
        }

        /// The hashing thread: takes what is queued, hashes it outside the lock.
        func run() {
            while true {
                let (chunks, last) = lock.withLock { () -> ([[UInt8]], Bool) in
                    while queue.isEmpty && !finishing && !abandoned { lock.wait() }
                    let taken = queue
                    queue.removeAll(keepingCapacity: true)
                    return (taken, abandoned || (finishing && taken.isEmpty))
                }
                for chunk in chunks { hasher.update(chunk) }
                lock.withLock {
                    queuedBytes -= chunks.reduce(0) { $0 + $1.count }
                    lock.broadcast()
                }
                if last {
                    let hex = hasher.finalizeHex()
                    lock.withLock {
                        digest = hex
                        lock.broadcast()
                    }
                    return
                }
            }
        }
    }
}
