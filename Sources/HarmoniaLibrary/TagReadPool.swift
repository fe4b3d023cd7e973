// Reading a batch's tags on several threads — specs/library.md §Scanner
import Foundation
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// Threads that read tags for the scanner, each at nice 10 (below the
/// player's threads: a scan waits, the audio does not), and make each
/// file's song record there too (the tag text cleaned, the MPD fields), so
/// the scanning thread only walks folders and writes. `read` hands a
/// batch of files to every thread and returns the songs in order. The
/// threads start at the first `read`: a scan that finds nothing changed
/// starts none, and waits for none to end.
///
/// Threads: `read` and `close` from one thread (the scanning thread); the
/// pool's own threads call the reader, concurrently.
final class TagReadPool: @unchecked Sendable {
    typealias Result = Swift.Result<LibrarySong, CoreError>

    /// A file to read: its absolute path, and its song's path in the
    /// library with the modification time and size the walk found.
    struct File: Sendable {
        let absolute: String
        let songPath: String
        let modified: Int64
        let size: Int64
    }

    private let reader: LibraryScanner.TagReader
    private let threads: Int
    /// Whether the threads were started (by a `read`). Scanning thread only.
    private(set) var started = false
    private let lock = NSCondition()
    // Guarded by `lock`: the batch being read, the next file to take, the
    // results so far, threads still busy with the batch, and shutdown.
    private var files: [File] = []
    private var next = 0
    private var results: [Result?] = []
    private var busy = 0
    private var batchNumber = 0
    private var closing = false
    private var running = 0
    private var cancellation: LibraryScanCancellation?

    init(threads: Int, reader: @escaping LibraryScanner.TagReader) {
        self.reader = reader
        self.threads = max(1, threads)
    }

    /// Reads every file (on the pool's threads); results in the files' order,
    /// nil for a file not read because the scan was cancelled first.
    func read(_ batch: [File], cancellation: LibraryScanCancellation) -> [Result?] {
        submit(batch, cancellation: cancellation)
        return collect()
    }

    /// Starts reading `batch` on the pool's threads and returns at once;
    /// `collect` waits for the results. One batch at a time: a submit
    /// follows the previous batch's collect.
    func submit(_ batch: [File], cancellation: LibraryScanCancellation) {
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
        files = batch
        next = 0
        results = Array(repeating: nil, count: batch.count)
        busy = running
        batchNumber += 1
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
            while !closing && batchNumber == seenBatch { lock.wait() }
            if closing { break }
            seenBatch = batchNumber
            while next < files.count, cancellation?.isCancelled != true {
                let index = next
                next += 1
                let file = files[index]
                lock.unlock()
                let result: Result
                do throws(CoreError) {
                    let read = try reader(file.absolute)
                    result = .success(LibrarySong(path: file.songPath, modified: file.modified, size: file.size,
                                                  tags: read.tags, stream: read.stream))
                } catch {
                    result = .failure(error)
                }
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
