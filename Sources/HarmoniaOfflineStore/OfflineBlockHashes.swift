// A copy's hashes: the whole file's and each 64 KiB block's — specs/offline.md §Index, §Verified reads
//
// Both are fed from the bytes as the server sent them, in one pass, and
// recorded with the row that says the copy is complete. A reader checks each
// block against its hash before the block's bytes go on (first sound never
// waits for a whole-file hash); `offline verify` checks every block.
import HarmoniaCore

/// Anything bytes are fed to in order (a digest, the file hasher).
protocol ByteHasher {
    mutating func update(_ bytes: UnsafeRawBufferPointer)
}

extension SHA256: ByteHasher {}

/// The SHA-256 of a whole copy and of each of its blocks, fed in order. Not thread-safe: one owner.
struct ContentHasher: ByteHasher {
    private var whole = SHA256()
    private var block = SHA256()
    private var inBlock = 0
    /// The hex digests of the blocks finished so far, one after another.
    private var blocks = ""

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        whole.update(bytes)
        var rest = bytes
        while !rest.isEmpty {
            let take = min(rest.count, BlockHashes.blockBytes - inBlock)
            block.update(UnsafeRawBufferPointer(rebasing: rest[..<take]))
            inBlock += take
            rest = UnsafeRawBufferPointer(rebasing: rest[take...])
            if inBlock == BlockHashes.blockBytes {
                blocks += block.finalizeHex()
                inBlock = 0
            }
        }
    }

    /// The whole file's digest and the blocks' (the last one short), in hex.
    mutating func finish() -> (whole: String, blocks: String) {
        if inBlock > 0 {
            blocks += block.finalizeHex()
            inBlock = 0
        }
        defer { self = ContentHasher() }
        return (whole.finalizeHex(), blocks)
    }
}

/// The recorded digests of a copy's blocks. Immutable; threads: any.
struct BlockHashes: Sendable {
    /// Bytes per block (the last block of a copy may be shorter).
    static let blockBytes = 1 << 16
    private let digests: [Substring]
    let size: Int64

    /// The digests recorded for a copy of `size` bytes; nil when `text` is
    /// not one 64-digit hex digest per block (a row a hand or a bug made).
    init?(_ text: String?, size: Int64) {
        guard let text, size >= 0 else { return nil }
        let count = Int((size + Int64(Self.blockBytes) - 1) / Int64(Self.blockBytes))
        guard text.utf8.count == count * 64, text.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            return nil
        }
        var digests: [Substring] = []
        digests.reserveCapacity(count)
        var start = text.startIndex
        for _ in 0..<count {
            let end = text.utf8.index(start, offsetBy: 64)
            digests.append(text[start..<end])
            start = end
        }
        self.digests = digests
        self.size = size
    }

    var count: Int { digests.count }

    /// Bytes [start, end) of block `index` within the copy.
    func range(of index: Int) -> (start: Int64, count: Int) {
        let start = Int64(index) * Int64(Self.blockBytes)
        return (start, Int(min(Int64(Self.blockBytes), size - start)))
    }

    /// Whether `bytes` are block `index` as recorded.
    func matches(_ index: Int, _ bytes: UnsafeRawBufferPointer) -> Bool {
        guard digests.indices.contains(index), bytes.count == range(of: index).count else { return false }
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalizeHex() == digests[index]
    }
}

extension OfflineDataFile {
    /// Writes all of `bytes` at `offset`, as `write(_:at:)` does.
    func write(_ bytes: [UInt8], at offset: Int64) throws(CoreError) {
        var failure: CoreError?
        bytes.withUnsafeBytes { raw in
            do throws(CoreError) { try write(raw, at: offset) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Reads block `index` of `blocks` into `buffer` (at least
    /// `BlockHashes.blockBytes` long). Returns whether it is as recorded
    /// (false also for a file that ends inside it).
    /// - Throws: `ioError` naming pread(2).
    func readBlock(_ index: Int, of blocks: BlockHashes, into buffer: UnsafeMutableRawBufferPointer) throws(CoreError) -> Bool {
        let (start, count) = blocks.range(of: index)
        var done = 0
        while done < count {
            let n = try read(into: buffer.baseAddress! + done, count: count - done, at: start + Int64(done))
            if n == 0 { return false }
            done += n
        }
        return blocks.matches(index, UnsafeRawBufferPointer(rebasing: buffer[..<count]))
    }

    /// How many bytes from the start, up to `length`, are whole blocks as
    /// recorded (or the recorded copy's end): where the first block that is
    /// not begins.
    func verifiedPrefix(_ blocks: BlockHashes, upTo length: Int64) throws(CoreError) -> Int64 {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: BlockHashes.blockBytes, alignment: 16)
        defer { buffer.deallocate() }
        var index = 0
        while index < blocks.count {
            let (start, count) = blocks.range(of: index)
            guard start + Int64(count) <= length, try readBlock(index, of: blocks, into: buffer) else { return min(start, length) }
            index += 1
        }
        return min(blocks.size, length)
    }
}
