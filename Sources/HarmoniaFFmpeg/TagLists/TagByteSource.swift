// Bytes of a file for the tag-list parsers — specs/ports.md §TagReaderPort (Value lists)
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaCore

/// Random access to a file's bytes, for the parsers of native tag blocks.
/// Every read is bounded by the caller; a short read is `nil`, never a trap.
protocol TagByteSource {
    /// The size in bytes (0 when unknown).
    var size: Int64 { get }
    /// `count` bytes at `offset`, or nil when they are not all there.
    func bytes(at offset: Int64, count: Int) -> [UInt8]?
}

/// A local file, read with `pread`. Not thread-safe to share with `close`;
/// one parse owns it.
final class TagFileSource: TagByteSource {
    private let fd: Int32
    let size: Int64

    /// Opens `path` (a plain path, as `FFmpegInput.ffmpegLocation` gives); nil
    /// when it cannot be opened or is not a regular file.
    init?(path: String) {
        let fd = PathBytes.withCString(path) { open($0, O_RDONLY | O_CLOEXEC) }
        guard fd >= 0 else { return nil }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            return nil
        }
        self.fd = fd
        self.size = Int64(info.st_size)
    }

    deinit { close(fd) }

    func bytes(at offset: Int64, count: Int) -> [UInt8]? {
        guard offset >= 0, count >= 0, count <= NativeTagLists.maxBlockBytes,
              offset <= size, Int64(count) <= size - offset else { return nil }
        if count == 0 { return [] }
        var buffer = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = buffer.withUnsafeMutableBytes { raw in
                pread(fd, raw.baseAddress! + done, count - done, off_t(offset + Int64(done)))
            }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return buffer
    }
}

/// Bytes in memory (the fuzz targets).
struct TagMemorySource: TagByteSource {
    let data: [UInt8]
    var size: Int64 { Int64(data.count) }

    func bytes(at offset: Int64, count: Int) -> [UInt8]? {
        guard offset >= 0, count >= 0, offset <= size, Int64(count) <= size - offset else { return nil }
        let start = Int(offset)
        return Array(data[start..<(start + count)])
    }
}

/// A bounds-checked reader over bytes: every read past the end yields nil.
struct ByteCursor {
    let bytes: [UInt8]
    private(set) var position: Int

    init(_ bytes: [UInt8], at position: Int = 0) {
        self.bytes = bytes
        self.position = max(0, min(position, bytes.count))
    }

    var remaining: Int { bytes.count - position }
    var isAtEnd: Bool { position >= bytes.count }

    mutating func take(_ count: Int) -> ArraySlice<UInt8>? {
        guard count >= 0, count <= remaining else { return nil }
        defer { position += count }
        return bytes[position..<(position + count)]
    }

    mutating func skip(_ count: Int) -> Bool { take(count) != nil }

    mutating func u8() -> UInt8? { take(1)?.first }

    mutating func u32le() -> UInt32? {
        guard let b = take(4) else { return nil }
        return b.reversed().reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func u32be() -> UInt32? {
        guard let b = take(4) else { return nil }
        return b.reduce(0) { $0 << 8 | UInt32($1) }
    }

    mutating func u64be() -> UInt64? {
        guard let b = take(8) else { return nil }
        return b.reduce(0) { $0 << 8 | UInt64($1) }
    }
}

extension Collection<UInt8> {
    /// Big-endian integer of these bytes (at most 8).
    var bigEndianValue: UInt64 { reduce(0) { $0 << 8 | UInt64($1) } }
    /// The bytes as ASCII text (a four-character code), or nil when not ASCII.
    var asciiText: String? {
        allSatisfy { $0 < 0x80 } ? String(decoding: self, as: UTF8.self) : nil
    }
}

/// UTF-8 text of `bytes`; invalid sequences become U+FFFD (a tag is text, not a name).
func utf8Text<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
    String(decoding: bytes, as: UTF8.self)
}
