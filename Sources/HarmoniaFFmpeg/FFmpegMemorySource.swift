// FFmpegMemorySource: bytes in memory read by libavformat through a custom
// AVIOContext (avio_alloc_context with read and seek callbacks), so the whole
// open/decode/tag path runs without a file. The fuzz targets use it, the
// player never does — specs/testing.md §Fuzzing
import CFFmpeg
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// A read-only, seekable byte source for `FFmpegInput`.
///
/// Owns its AVIOContext: `FFmpegInput` never closes it (avio_closep would
/// treat the callbacks' opaque pointer as a URLContext); `release()` or
/// deinit frees it, after the format context that reads it is closed.
/// Not thread-safe: used by one session, whose owner serialises calls.
package final class FFmpegMemorySource {
    private let bytes: [UInt8]
    private var offset = 0
    /// The context reading `bytes`; nil once released or when allocation failed.
    private(set) var context: UnsafeMutablePointer<AVIOContext>?

    /// Bytes avio buffers per read (FFmpeg's own file protocol reads in 32 KiB).
    private static let bufferSize: Int32 = 32 * 1024

    package init(bytes: [UInt8]) {
        self.bytes = bytes
        guard let buffer = av_malloc(Int(Self.bufferSize)) else { return }
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        context = avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), Self.bufferSize, 0, opaque,
                                     { opaque, buffer, size in FFmpegMemorySource.from(opaque).read(buffer, size) },
                                     nil,
                                     { opaque, offset, whence in FFmpegMemorySource.from(opaque).seek(offset, whence) })
        if context == nil { av_free(buffer) }
    }

    deinit { release() }

    /// Frees the context and its buffer. Idempotent.
    func release() {
        guard context != nil else { return }
        av_freep(&context!.pointee.buffer)
        avio_context_free(&context)
    }

    private static func from(_ opaque: UnsafeMutableRawPointer?) -> FFmpegMemorySource {
        Unmanaged<FFmpegMemorySource>.fromOpaque(opaque!).takeUnretainedValue()
    }

    /// avio's read callback: up to `size` bytes, AVERROR_EOF at the end.
    private func read(_ buffer: UnsafeMutablePointer<UInt8>?, _ size: Int32) -> Int32 {
        guard let buffer, size > 0 else { return hc_averror(EINVAL) }
        let count = min(Int(size), bytes.count - offset)
        guard count > 0 else { return hc_averror_eof() }
        bytes.withUnsafeBufferPointer { buffer.update(from: $0.baseAddress! + offset, count: count) }
        offset += count
        return Int32(count)
    }

    /// avio's seek callback: SEEK_SET/CUR/END within the bytes, or the size
    /// for AVSEEK_SIZE; AVERROR(EINVAL) for a position outside them.
    private func seek(_ position: Int64, _ whence: Int32) -> Int64 {
        if whence & AVSEEK_SIZE != 0 { return Int64(bytes.count) }
        let base: Int64
        switch whence & ~AVSEEK_FORCE {
        case SEEK_SET: base = 0
        case SEEK_CUR: base = Int64(offset)
        case SEEK_END: base = Int64(bytes.count)
        default: return Int64(hc_averror(EINVAL))
        }
        let (target, overflow) = base.addingReportingOverflow(position)
        guard !overflow, target >= 0, target <= Int64(bytes.count) else { return Int64(hc_averror(EINVAL)) }
        offset = Int(target)
        return target
    }
}
