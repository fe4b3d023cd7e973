// The data files of the offline store: every POSIX call on them — specs/offline.md §Files, §Crashes
//
// One file per entry, named from the SHA-256 of its key (never from the URL:
// nothing a server or a user names can escape the folder). Each failure is
// a CoreError naming the call and the file; ENOSPC says the disk is full.
import Foundation
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// The file name of the entry `key`: 64 hex digits and `.data`.
func offlineFileName(forKey key: String) -> String { SHA256.hex(of: key) + ".data" }

/// Whether `name` has the shape of a data file's name (only those are ever removed).
func isOfflineFileName(_ name: String) -> Bool {
    let utf8 = Array(name.utf8)
    guard utf8.count == 69, name.hasSuffix(".data") else { return false }
    return utf8[0..<64].allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
}

/// One open data file. Not thread-safe: one owner. Closed on release.
final class OfflineDataFile {
    let path: String
    private(set) var descriptor: Int32

    /// Opens `path` for reading and writing (`create`: creating it, mode 0644).
    /// - Throws: `ioError` naming open(2) and errno; `notFound` when it is missing and not created.
    init(path: String, create: Bool) throws(CoreError) {
        self.path = path
        let flags = O_RDWR | O_CLOEXEC | (create ? O_CREAT : 0)
        let fd = PathBytes.withCString(path) { Glibc.open($0, flags, 0o644) }
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT { throw .notFound("offline store file '\(path)' is missing") }
            throw Self.failure("open", path, code)
        }
        descriptor = fd
    }

    deinit { if descriptor >= 0 { Glibc.close(descriptor) } }

    /// Takes the file's lock (flock: exclusive for a download in progress).
    /// `wait`: blocks until another process lets go; else returns false at once when held.
    func lock(wait: Bool) throws(CoreError) -> Bool {
        while true {
            if flock(descriptor, LOCK_EX | (wait ? 0 : LOCK_NB)) == 0 { return true }
            let code = errno
            if code == EINTR { continue }
            if code == EWOULDBLOCK { return false }
            throw Self.failure("flock", path, code)
        }
    }

    /// The file's length now.
    func length() throws(CoreError) -> Int64 {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw Self.failure("fstat", path, errno) }
        return Int64(info.st_size)
    }

    /// Cuts (or extends with zeros) the file to `length` bytes.
    func truncate(to length: Int64) throws(CoreError) {
        guard ftruncate(descriptor, off_t(length)) == 0 else { throw Self.failure("ftruncate", path, errno) }
    }

    /// Writes all of `bytes` at `offset`.
    /// - Throws: `ioError` ("the disk is full" for ENOSPC) naming pwrite(2).
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64) throws(CoreError) {
        var done = 0
        while done < bytes.count {
            let n = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset + Int64(done)))
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                throw Self.failure("pwrite", path, code)
            }
            done += n
        }
    }

    /// Reads up to `count` bytes at `offset` into `buffer`; 0 at the end.
    func read(into buffer: UnsafeMutableRawPointer, count: Int, at offset: Int64) throws(CoreError) -> Int {
        while true {
            let n = pread(descriptor, buffer, count, off_t(offset))
            if n >= 0 { return n }
            let code = errno
            if code != EINTR { throw Self.failure("pread", path, code) }
        }
    }

    /// Flushes the file's data to the disk (fsync(2)).
    func sync() throws(CoreError) {
        guard fsync(descriptor) == 0 else { throw Self.failure("fsync", path, errno) }
    }

    /// Feeds bytes [0, `length`) of the file to `hasher`.
    func hash<Hasher: ByteHasher>(upTo length: Int64, into hasher: inout Hasher) throws(CoreError) {
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        var offset: Int64 = 0
        while offset < length {
            let want = Int(min(Int64(buffer.count), length - offset))
            var n = 0
            var failure: CoreError?
            buffer.withUnsafeMutableBytes { raw in
                do throws(CoreError) { n = try read(into: raw.baseAddress!, count: want, at: offset) } catch { failure = error }
            }
            if let failure { throw failure }
            guard n > 0 else { throw .ioError("offline store file '\(path)' ended at byte \(offset) of \(length)") }
            buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            offset += Int64(n)
        }
    }

    static func failure(_ call: String, _ path: String, _ code: Int32) -> CoreError {
        let reason = code == ENOSPC ? "the disk is full" : String(cString: strerror(code))
        return .ioError("offline store file '\(path)': \(call) failed: \(reason)")
    }
}

/// The length of the file at `path`, nil when there is none.
func offlineFileLength(_ path: String) -> Int64? {
    var info = stat()
    guard PathBytes.withCString(path, { stat($0, &info) }) == 0 else { return nil }
    return Int64(info.st_size)
}

/// Removes the file at `path`; a missing file is not an error.
func removeOfflineFile(_ path: String) throws(CoreError) {
    if PathBytes.withCString(path, { unlink($0) }) != 0, errno != ENOENT {
        throw OfflineDataFile.failure("unlink", path, errno)
    }
}

/// Whether another process holds the lock of the file at `path` (a download in progress).
func offlineFileIsLocked(_ path: String) -> Bool {
    guard let file = try? OfflineDataFile(path: path, create: false) else { return false }
    return (try? file.lock(wait: false)) == false
}
