// The web remote's token when none is given: made once, kept owner-only
// — specs/control-protocol.md §Authentication
import Foundation
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// A token generated on first start and kept in a file of mode 0600, so
/// that a remote listening beyond loopback is never open to everyone.
public enum WebRemoteToken {
    /// The token in `file`; a new one (192 random bits, base64url) written
    /// there when the file is missing. `created` is true for a new one (the
    /// caller prints it once).
    /// - Throws: `ioError` when the file cannot be read or written, or is
    ///   readable by others (its mode must be 0600 or stricter).
    public static func load(orCreateAt file: String) throws(CoreError) -> (token: String, created: Bool) {
        var info = stat()
        if stat(file, &info) == 0 {
            guard info.st_mode & 0o077 == 0 else {
                throw .ioError("\(file): the web remote's token file is readable by others (mode \(String(info.st_mode & 0o777, radix: 8))): chmod 600 it")
            }
            guard let data = FileManager.default.contents(atPath: file), data.count <= 1024,
                  let text = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else {
                throw .ioError("\(file): the web remote's token file is empty or unreadable: remove it to make a new token")
            }
            return (text, false)
        }
        var generator = SystemRandomNumberGenerator()  // getrandom(2)
        let bytes = (0..<24).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let token = Data(bytes).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        let fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .ioError("\(file): cannot create the web remote's token file (\(String(cString: strerror(errno))))") }
        defer { close(fd) }
        let line = Array((token + "\n").utf8)
        guard line.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == line.count else {
            throw .ioError("\(file): cannot write the web remote's token file (\(String(cString: strerror(errno))))")
        }
        return (token, true)
    }
}
