// Fetching one block of a copy again — specs/offline.md §Verified reads
import HarmoniaCore
import HarmoniaHTTP

/// How a block of a copy found altered on disk is fetched again: `Range`
/// for its bytes (with `If-Range` and the validator the copy came with), one
/// attempt. What comes back is used only if it hashes to the recorded block,
/// so another version of the file is never spliced in.
/// Threads: any; `fetch` blocks its caller (at most the stall timeout without a byte).
struct OfflineBlockRepair: Sendable {
    let url: String
    let validator: String?
    let http: HTTPSourceConfiguration

    /// The repair of `entry`'s blocks under the network policy `http`.
    init(entry: OfflineEntry, http: HTTPSourceConfiguration) {
        url = entry.url
        validator = entry.etag ?? entry.lastModified
        self.http = http
    }

    /// Block `index` fetched again, checked against its recorded hash and
    /// written into `file` (not fsynced: the caller syncs). Returns its bytes.
    /// - Throws: `ioError` saying why not (another version, a status, the network, the disk).
    func restore(_ index: Int, of blocks: BlockHashes, in file: OfflineDataFile) throws(CoreError) -> [UInt8] {
        let (start, count) = blocks.range(of: index)
        let fresh = try fetch(start: start, count: count)
        guard fresh.withUnsafeBytes({ blocks.matches(index, $0) }) else {
            throw .ioError("the server has another version now (its bytes are not the recorded ones)")
        }
        try file.write(fresh, at: start)
        return fresh
    }

    /// The `count` bytes at `start`, as the server has them now.
    /// - Throws: `ioError` saying why not (another version, a status, the network).
    func fetch(start: Int64, count: Int) throws(CoreError) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        var refusal: String?
        var discard = 0
        let end = httpFetch(url: url, start: start, ifRange: validator, configuration: http, head: { head in
            if head.status == 206, let first = head.rangeFirst, !head.rangeInvalid, first <= start, start - first < Int64(count) {
                discard = Int(start - first)
                return true
            }
            if head.status == 200 && start == 0 { return true }
            refusal = head.status == 200 ? "the server sent the whole file, not the range: it has another version now, or serves no ranges"
                : "the server answered \(head.status)"
            return false
        }, body: { chunk in
            var chunk = chunk
            if discard > 0 {
                let drop = min(discard, chunk.count)
                discard -= drop
                chunk = UnsafeRawBufferPointer(rebasing: chunk[drop...])
            }
            bytes.append(contentsOf: chunk.prefix(count - bytes.count))
            return bytes.count < count
        })
        if bytes.count == count { return bytes }
        if let refusal { throw .ioError(refusal) }
        switch end {
        case .status(let status): throw .ioError(HTTPFailure.statusReason(status))
        case .transient(let text): throw .ioError(text)
        case .permanent(let error): throw .ioError(error.message)
        default: throw .ioError("the server sent \(bytes.count) of the block's \(count) bytes")
        }
    }
}
