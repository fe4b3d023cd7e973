// Every raw libav* call whose failure matters goes through here: each failure
// becomes an FFmpegError carrying the C function and the AVERROR code, and
// is mapped to CoreError (naming the file) in exactly one place.
import CFFmpeg
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// A failed libav* call: which function, which AVERROR code.
struct FFmpegError: Error, CustomStringConvertible {
    let function: String
    let code: Int32

    /// FFmpeg's own text for the code ("Invalid data found when processing input").
    var text: String {
        withUnsafeTemporaryAllocation(of: CChar.self, capacity: 256) { buffer in
            hc_av_strerror(code, buffer.baseAddress, 256)
            return String(cString: buffer.baseAddress!)
        }
    }

    var description: String { "\(function) failed: \(text) (\(code))" }

    var isEOF: Bool { code == hc_averror_eof() }
    var isInvalidData: Bool { code == hc_averror_invaliddata() }
    /// The POSIX errno behind the code, when it is one (AVERROR(e) == -e).
    /// A bare -1 is not EPERM: demuxers return it as "failed", for no reason.
    var posixErrno: Int32? { code < -1 && code > -4096 ? -code : nil }
}

/// Throws an FFmpegError when `result` is negative; returns it otherwise.
@discardableResult
func check(_ result: Int32, _ function: String) throws(FFmpegError) -> Int32 {
    if result < 0 { throw FFmpegError(function: function, code: result) }
    return result
}

/// FFmpeg's HTTP status errors (FFERRTAG(0xF8,'4','0','3') etc.), computed
/// as the C macro does since the importer drops them.
private func httpError(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> Int32 {
    let tag = UInt32(0xF8) | UInt32(a) << 8 | UInt32(b) << 16 | UInt32(c) << 24
    return -Int32(bitPattern: tag)
}

extension FFmpegError {
    /// Maps a failure while opening or reading `url` to the CoreError category
    /// of specs/ports.md, with a message that names the file and says what to do.
    func coreError(url: String, while action: String) -> CoreError {
        let what = "\(url): \(action) failed (\(function): \(text))"
        if let e = posixErrno {
            switch e {
            case ENOENT:
                return .notFound("\(url): no such file or directory; check the path")
            case EACCES, EPERM:
                return .ioError("\(url): permission denied; check the file's permissions")
            case EISDIR:
                return .unsupported("\(url): is a directory, not an audio file")
            case ENOMEM:
                return .ioError("\(what): out of memory")
            case ETIMEDOUT, ECONNREFUSED, ECONNRESET, EHOSTUNREACH, ENETUNREACH, EPIPE, EIO, ENOTCONN:
                return .ioError("\(what); check the network or the server")
            default:
                return .ioError(what)
            }
        }
        switch code {
        case httpError(0x34, 0x30, 0x34): // '4','0','4'
            return .notFound("\(url): the server answered 404 Not Found; check the URL")
        case httpError(0x34, 0x30, 0x33), httpError(0x34, 0x30, 0x31):
            return .ioError("\(url): the server refused access (401/403); the link may have expired, fetch a fresh URL")
        case httpError(0x34, 0x58, 0x58), httpError(0x35, 0x58, 0x58), httpError(0x34, 0x30, 0x30):
            return .ioError("\(what); the server answered with an HTTP error")
        case hc_averror_decoder_not_found():
            return .unsupported("\(url): no decoder for this codec in the installed FFmpeg")
        case hc_averror_stream_not_found():
            return .unsupported("\(url): contains no audio stream")
        case hc_averror_eof():
            return .decodeError("\(url): \(action) failed: the data ends early; the file is truncated")
        case hc_averror_invaliddata():
            return .decodeError("\(url): \(action) failed: corrupt or truncated data (\(function))")
        default:
            return .decodeError("\(what)")
        }
    }
}

/// Process-wide FFmpeg settings, made once before the first open:
/// - FFmpeg logs to stderr by default; a library must not.
/// - No single FFmpeg allocation above 256 MiB — see specs/hardening.md §Bounds —
///   a forged index (an MP4 `stsz` declaring 500 million entries in a few
///   bytes) fails as ENOMEM instead of reserving gigabytes. Audio needs far
///   less; FFmpeg's own default is 2 GiB.
let ffmpegProcessSettings: Void = {
    av_log_set_level(AV_LOG_QUIET)
    av_max_alloc(ffmpegMaxAllocation)
}()

/// The largest single allocation FFmpeg may make in this process.
let ffmpegMaxAllocation = 256 << 20
