// TextFile: reading the small text files the engine takes (CUE sheets,
// playlists), with the errors a user can act on.
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads a text file as UTF-8 (a leading byte-order mark removed) or, when
/// the bytes are not valid UTF-8, as Latin-1.
public enum TextFile {
    /// The largest text file read (16 MiB): larger is `unsupported`.
    public static let maxBytes = 16 << 20

    /// The text of `path`; `what` names the kind of file in messages ("a CUE
    /// sheet"). With `utf8Only`, bytes that are not UTF-8 are a `decodeError`.
    /// - Throws: `notFound`, `ioError` (permission, read failure),
    ///   `unsupported` (a directory, FIFO, device or socket, over `maxBytes`), `decodeError` (not UTF-8 when required).
    public static func read(_ path: String, what: String, utf8Only: Bool = false) throws(CoreError) -> String {
        var info = stat()
        if PathBytes.withCString(path, { stat($0, &info) }) != 0 {
            let code = errno
            switch code {
            case ENOENT, ENOTDIR: throw .notFound("\(path): no such file or directory; check the path")
            case EACCES, EPERM: throw .ioError("\(path): permission denied; check the file's permissions")
            default: throw .ioError("\(path): \(String(cString: strerror(code)))")
            }
        }
        switch info.st_mode & S_IFMT {
        case S_IFREG: break
        case S_IFDIR: throw .unsupported("\(path): is a directory, not \(what)")
        // Reading a FIFO without a writer would block (specs/inputs.md §Inputs (Special files)).
        case S_IFIFO: throw .unsupported("\(path): is a FIFO (named pipe), not \(what); give a regular file")
        default: throw .unsupported("\(path): is a device or socket, not \(what); give a regular file")
        }
        // A huge file is not a playlist — specs/hardening.md §Bounds.
        guard info.st_size <= maxBytes else {
            throw .unsupported("\(path): \(info.st_size) bytes is too large for \(what) (at most \(maxBytes >> 20) MiB)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .ioError("\(path): cannot be read; check the file's permissions")
        }
        if utf8Only {
            guard let text = String(data: withoutByteOrderMark(data), encoding: .utf8) else {
                throw .decodeError("\(path): not valid UTF-8, which \(what) must be")
            }
            return text
        }
        return decode(data)
    }

    /// UTF-8 (a leading byte-order mark removed), or Latin-1 when not valid UTF-8.
    public static func decode(_ data: Data) -> String {
        let bytes = withoutByteOrderMark(data)
        if let text = String(data: bytes, encoding: .utf8) { return text }
        return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
    }

    private static func withoutByteOrderMark(_ data: Data) -> Data {
        data.starts(with: [0xEF, 0xBB, 0xBF]) ? data.dropFirst(3) : data
    }
}
