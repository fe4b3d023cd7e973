// Interrupting FFmpeg's blocking I/O (specs/ports.md §DecoderPort (Interrupting I/O)), and
// refusing local special files before FFmpeg's open(2) can block on them
// (specs/inputs.md §Inputs (Special files)).
import CFFmpeg
import HarmoniaCore
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A flag FFmpeg's interrupt callback reads: once set, every open, probe and
/// read of the inputs that share it fails at its next check (AVERROR_EXIT),
/// at once or within FFmpeg's network poll interval (0.1 s).
///
/// Threads: any. Set once, never cleared.
final class FFmpegInterruptFlag: Sendable {
    private let flag = Atomic<Bool>(false)

    func set() { flag.store(true, ordering: .releasing) }

    var isSet: Bool { flag.load(ordering: .acquiring) }

    /// The callback for `avio_open2` and `AVFormatContext.interrupt_callback`.
    /// The flag must outlive every context that holds it (FFmpegInput keeps it).
    var callback: AVIOInterruptCB {
        AVIOInterruptCB(callback: { opaque in
            guard let opaque else { return 0 }
            return Unmanaged<FFmpegInterruptFlag>.fromOpaque(opaque).takeUnretainedValue().isSet ? 1 : 0
        }, opaque: Unmanaged.passUnretained(self).toOpaque())
    }
}

enum LocalFileCheck {
    /// Throws `unsupported` when the local `path` is a FIFO, a device, a
    /// socket or a directory: FFmpeg's open(2) of a FIFO without a writer
    /// would block beyond the reach of its interrupt callback, and a device
    /// can be endless. Does nothing when `path` cannot be stat'ed (FFmpeg's
    /// open then reports why) or is a regular file.
    static func requireRegularFile(_ path: String, url: String) throws(CoreError) {
        var info = stat()
        guard PathBytes.withCString(path, { stat($0, &info) }) == 0 else { return }
        let what: String
        switch info.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFDIR: what = "a directory"
        case S_IFIFO: what = "a FIFO (named pipe)"
        case S_IFCHR: what = "a character device"
        case S_IFBLK: what = "a block device"
        case S_IFSOCK: what = "a socket"
        default: what = "a special file"
        }
        throw .unsupported("\(url): is \(what), not an audio file; give a regular file or an http(s) URL")
    }
}
