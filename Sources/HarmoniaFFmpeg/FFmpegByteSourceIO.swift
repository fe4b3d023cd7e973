// FFmpegByteSourceIO — specs/network.md §Decoding
//
// An AVIOContext whose reads and seeks go to a ByteSource (the engine's own
// network policy, HarmoniaCore's ByteSourcePort) instead of FFmpeg's http
// client. FFmpeg sees only AVERROR codes; the source's CoreError, which says
// what happened, is kept for the decode session to throw as it is.
import CFFmpeg
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// Owns one custom AVIOContext over `source`.
///
/// Threads: FFmpeg calls the callbacks on the thread that calls into it (the
/// session's owner); `cancel()` from any thread.
final class FFmpegByteSourceIO {
    let source: any ByteSource
    private(set) var context: UnsafeMutablePointer<AVIOContext>?
    /// The failure of the source's last read, in its own words (nil once a read succeeds again).
    private(set) var error: CoreError?
    private static let bufferSize: Int32 = 64 << 10

    /// - Throws: `ioError` when FFmpeg cannot allocate the context.
    init(source: any ByteSource) throws(CoreError) {
        self.source = source
        guard let buffer = av_malloc(Int(Self.bufferSize)) else {
            throw .ioError("out of memory allocating network I/O")
        }
        let opaque = Unmanaged.passUnretained(self).toOpaque()
        context = avio_alloc_context(buffer.assumingMemoryBound(to: UInt8.self), Self.bufferSize, 0, opaque,
                                     byteSourceRead, nil, byteSourceSeek)
        guard context != nil else {
            av_free(buffer)
            throw .ioError("out of memory allocating network I/O")
        }
        seekable = source.isSeekable
    }

    deinit { free() }

    /// Whether FFmpeg may seek (a demuxer's far seeks each cost a request).
    var seekable: Bool {
        get { (context?.pointee.seekable ?? 0) & AVIO_SEEKABLE_NORMAL != 0 }
        set { context?.pointee.seekable = newValue && source.isSeekable ? AVIO_SEEKABLE_NORMAL : 0 }
    }

    /// Ends every wait in the source: a blocked read returns with an error. Any thread.
    func cancel() { source.cancel() }

    /// Frees the context and its buffer, and stops the source. Idempotent.
    func free() {
        guard context != nil else { return }
        source.cancel()
        av_freep(&context!.pointee.buffer)
        avio_context_free(&context)
    }

    fileprivate func read(_ buffer: UnsafeMutablePointer<UInt8>?, _ size: Int32) -> Int32 {
        guard let buffer, size > 0 else { return 0 }
        do {
            let n = try source.read(into: buffer, count: Int(size))
            if n > 0 { self.error = nil }  // a failed read the demuxer got past (a probe at the end) is not the stream's error
            return n == 0 ? hc_averror_eof() : Int32(n)
        } catch {
            self.error = error
            return hc_averror(EIO)
        }
    }

    fileprivate func seek(_ offset: Int64, _ whence: Int32) -> Int64 {
        if whence & AVSEEK_SIZE != 0 { return source.size ?? Int64(hc_averror(ENOSYS)) }
        let base: Int64
        switch whence & ~AVSEEK_FORCE {
        case SEEK_SET: base = 0
        case SEEK_CUR: base = source.position
        case SEEK_END:
            guard let size = source.size else { return Int64(hc_averror(ENOSYS)) }
            base = size
        default: return Int64(hc_averror(EINVAL))
        }
        let (target, overflow) = base.addingReportingOverflow(offset)
        guard !overflow, target >= 0 else { return Int64(hc_averror(EINVAL)) }
        do {
            try source.seek(to: target)
            return target
        } catch {
            self.error = error
            return Int64(hc_averror(EIO))
        }
    }
}

private func byteSourceRead(_ opaque: UnsafeMutableRawPointer?, _ buffer: UnsafeMutablePointer<UInt8>?, _ size: Int32) -> Int32 {
    guard let opaque else { return hc_averror(EINVAL) }
    return Unmanaged<FFmpegByteSourceIO>.fromOpaque(opaque).takeUnretainedValue().read(buffer, size)
}

private func byteSourceSeek(_ opaque: UnsafeMutableRawPointer?, _ offset: Int64, _ whence: Int32) -> Int64 {
    guard let opaque else { return Int64(hc_averror(EINVAL)) }
    return Unmanaged<FFmpegByteSourceIO>.fromOpaque(opaque).takeUnretainedValue().seek(offset, whence)
}
