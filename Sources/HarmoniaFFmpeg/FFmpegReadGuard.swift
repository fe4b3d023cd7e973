// FFmpegReadGuard — specs/hardening.md §Bounds
//
// FFmpeg's probesize and analyzeduration count the packets a demuxer
// delivers, not the bytes it reads: a parser that never finds a frame (a
// file of zeros named .mp3) keeps reading, and buffering, to the end of the
// file. The guard counts bytes read since the last packet that came out and
// stops FFmpeg past a bound, through the interrupt callback FFmpeg polls in
// its read loops (for every buffer it fills and every packet it probes).
import CFFmpeg
import HarmoniaCore

/// Bounds the bytes FFmpeg reads without delivering a packet, and passes
/// on an interrupt (FFmpegInterruptFlag): FFmpeg takes one callback.
///
/// Threads: owned by one input; FFmpeg calls the callback on the thread that
/// called into it, which is the owner's. Not Sendable.
final class FFmpegReadGuard {
    /// Bytes that may be read without a packet coming out: while opening
    /// (headers, an index at the end of the file, stream analysis) and
    /// between two packets while decoding.
    static let defaultLimit: Int64 = 32 << 20

    let limit: Int64
    /// Once set, FFmpeg stops at its next check whatever the count.
    let interrupt: FFmpegInterruptFlag
    /// The I/O whose reads are counted; set once it is open.
    var io: UnsafeMutablePointer<AVIOContext>?
    /// `io.bytes_read` when the last packet came out (0 while opening).
    private var baseline: Int64 = 0
    /// True once the callback stopped FFmpeg for reading past `limit`.
    private(set) var tripped = false

    init(limit: Int64 = FFmpegReadGuard.defaultLimit, interrupt: FFmpegInterruptFlag = FFmpegInterruptFlag()) {
        self.limit = limit
        self.interrupt = interrupt
    }

    /// A packet came out: the count starts again from here.
    func packetDelivered() {
        baseline = io?.pointee.bytes_read ?? 0
        tripped = false
    }

    /// Bytes read since the last packet.
    var bytesSincePacket: Int64 { (io?.pointee.bytes_read ?? 0) - baseline }

    /// The callback FFmpeg polls; pass it to avio_open2 and the format context.
    /// The guard must outlive every FFmpeg object that holds it.
    var interruptCallback: AVIOInterruptCB {
        AVIOInterruptCB(callback: ffmpegReadGuardCallback, opaque: Unmanaged.passUnretained(self).toOpaque())
    }

    /// Whether FFmpeg must stop now.
    fileprivate func shouldInterrupt() -> Bool {
        if interrupt.isSet { return true }
        if bytesSincePacket > limit { tripped = true }
        return tripped
    }

    /// The error for an open that read `limit` bytes without finding audio.
    func nothingFound(_ url: String, _ container: String) -> CoreError {
        .unsupported("\(url): read \(limit >> 20) MiB as \(container) without finding any audio; it is not an audio file")
    }

    /// The error for a read that went `limit` bytes past the last packet.
    func nothingDecodable(_ url: String, at time: String) -> CoreError {
        .decodeError("\(url): \(limit >> 20) MiB of data after \(time) without a single audio packet; the file is corrupt")
    }
}

/// FFmpeg's interrupt callback: non-zero stops the blocking call with AVERROR_EXIT.
private func ffmpegReadGuardCallback(_ opaque: UnsafeMutableRawPointer?) -> Int32 {
    guard let opaque else { return 0 }
    return Unmanaged<FFmpegReadGuard>.fromOpaque(opaque).takeUnretainedValue().shouldInterrupt() ? 1 : 0
}
