// Reading a batch's tags on several threads — specs/library.md §Scanner
import Foundation
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// Threads that read tags for the scanner, each at nice 10 (below the
/// player's threads: a scan waits, the audio does not). `read` hands a
/// batch of paths to every thread and returns the results in order. The
/// threads start at the first `read`: a scan that finds nothing changed
/// starts none, and waits for none to end.
///
/// Threads: `read` and `close` from one thread (the scanning thread); the
/// pool's own threads call the reader, concurrently.
final class TagReadPool: @unchecked Sendable {
    typealias Result = Swift.Result<(tags: TagBundle, stream: StreamInfo), CoreError>

    private let reader: LibraryScanner.TagReader
    private let threads: Int
    /// Whether the threads were started (by a `read`). Scanning thread only.
    private(set) var started = false
    private let lock = NSCondition()
    // Guarded by `lock`: the batch being read, the next path to take, the
    // results so far, threads still busy with the batch, and shutdown.
    private var paths: [String] = []
    private var next = 0
    private var results: [Result?] = []
    private var busy = 0
    private var batch = 0
    private var closing = false
    private var running = 0
    private var cancellation: LibraryScanCancellation?

    init(threads: Int, reader: @escaping LibraryScanner.TagReader) {
        self.reader = reader
        self.threads = max(1, threads)
    }

    /// Reads every path (on the pool's threads); results in the paths' order,
    /// nil for a path not read because the scan was cancelled first.
    func read(_ batchPaths: [String], cancellation: LibraryScanCancellation) -> [Result?] {
        submit(batchPaths, cancellation: cancellation)
        return collect()
    }

    /// Starts reading `batchPaths` on the pool's threads and returns at once;
    /// `collect` waits for the results. One batch at a time: a submit
    /// follows the previous batch's collect.
    func submit(_ batchPaths: [String], cancellation: LibraryScanCancellation) {
        if !started {
            started = true
            lock.withLock { running = threads }
            for _ in 0..<threads {
                let thread = Thread { [self] in work() }
                thread.name = "harmonia.scan-read"
                thread.start()
            }
        }
        lock.lock()
        defer { lock.unlock() }
        precondition(busy == 0, "TagReadPool: a batch submitted before the last was collected")
        self.cancellation = cancellation
        paths = batchPaths
        next = 0
        results = Array(repeating: nil, count: batchPaths.count)
        busy = running
        batch += 1
        lock.broadcast()
    }

    /// The submitted batch's results, in its paths' order, once every thread is done with it.
    func collect() -> [Result?] {
        lock.lock()
        defer { lock.unlock() }
        while busy > 0 { lock.wait() }
        let done = results
        results = []
        return done
    }

    /// Ends the threads (after the batch in hand) and waits for them.
    func close() {
        lock.lock()
        closing = true
        lock.broadcast()
        while running > 0 { lock.wait() }
        lock.unlock()
    }

    private func work() {
        nameCurrentThread("harmonia.scanread")
        // On Linux a nice value is per thread; `who` 0 is this thread.
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 10)
        var seenBatch = 0
        lock.lock()
        while true {
            while !closing && batch == seenBatch { lock.wait() }
            if closing { break }
            seenBatch = batch
            while next < paths.count, cancellation?.isCancelled != true {
                let index = next
                next += 1
                let path = paths[index]
                lock.unlock()
                let result: Result
                do throws(CoreError) { result = .success(try reader(path)) } catch { result = .failure(error) }
                lock.lock()
                results[index] = result
            }
            busy -= 1
            lock.broadcast()
        }
        running -= 1
        lock.broadcast()
        lock.unlock()
    }
}
