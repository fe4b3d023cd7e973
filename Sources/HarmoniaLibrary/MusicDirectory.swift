// MusicDirectory — specs/library.md §MusicDirectory
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import HarmoniaCore

/// The music directory, and the one way to turn a path a client names into a
/// file: it must stay inside the directory after `..` and symlinks are
/// resolved. Immutable; any thread. Resolving calls `realpath` (may block on I/O).
public struct MusicDirectory: Sendable, Equatable {
    /// The directory's real absolute path (symlinks resolved, no trailing `/`).
    public let root: String

    /// MPD 0.23's `albumart` names, in its order (src/command/FileCommands.cxx;
    /// its protocol.rst still lists cover.tiff and cover.bmp, which the code
    /// no longer tries), then names other players use, which we also try.
    public static let coverNames = ["cover.png", "cover.jpg", "cover.webp",
                                    "cover.jpeg", "folder.jpg", "folder.png", "front.jpg", "front.png"]

    /// - Throws: `notFound` when `root` is not an existing directory.
    public init(root: String) throws(CoreError) {
        guard let real = Self.realPath(root), Self.isDirectory(real) else {
            throw .notFound("music directory '\(root)' does not exist or is not a folder: check the path in the configuration")
        }
        self.root = real
    }

    /// The real absolute path of the file or folder a client named by
    /// `relativePath` ("" is the top). Refused: an absolute path, a URL
    /// (`file://…`), NUL, a path that does not exist, and one that leads
    /// outside the directory by `..` or a symlink.
    /// - Throws: `notFound` for every refusal, with the same message, so an
    ///   answer reveals nothing about what is outside.
    public func resolve(_ relativePath: String) throws(CoreError) -> String {
        let refusal = CoreError.notFound("'\(relativePath)': no such file or folder in the music directory")
        guard !relativePath.hasPrefix("/"), !relativePath.contains("\0"), !relativePath.lowercased().hasPrefix("file:") else { throw refusal }
        var parts: [Substring] = []
        for part in relativePath.split(separator: "/") where part != "." {
            if part == ".." {
                guard parts.popLast() != nil else { throw refusal }
            } else {
                parts.append(part)
            }
        }
        let joined = parts.isEmpty ? root : (root == "/" ? "" : root) + "/" + parts.joined(separator: "/")
        guard let real = Self.realPath(joined), contains(realPath: real) else { throw refusal }
        return real
    }

    /// The cover image for the song at `songPath`: the first of `coverNames`
    /// in the song's folder that is a regular file inside the directory; nil
    /// when there is none.
    /// - Throws: `notFound` as `resolve` does for the song's folder.
    public func coverFile(forSong songPath: String) throws(CoreError) -> String? {
        let folder = LibrarySong(path: songPath, modified: 0, size: 0).directory
        let resolved = try resolve(folder)
        for name in Self.coverNames {
            if let real = Self.realPath((resolved == "/" ? "" : resolved) + "/" + name), contains(realPath: real), Self.isRegularFile(real) {
                return real
            }
        }
        return nil
    }

    /// True when the real path `path` is the root or inside it.
    public func contains(realPath path: String) -> Bool {
        // Bytes, not Characters: "/music" + U+0301 is not inside "/music".
        root == "/" || path.utf8.elementsEqual(root.utf8) || path.utf8.starts(with: (root + "/").utf8)
    }

    /// `realpath(3)` of `path`; nil when it fails (missing, loop, too long).
    /// Where a saved queue entry (a restored state) stands: an http(s) URL;
    /// a file inside the directory (its real path); a missing file; or a
    /// path whose real path is outside (`..`, links out, absolute paths
    /// elsewhere). A relative path is taken from the root.
    public enum SavedEntry: Equatable, Sendable {
        case stream
        case file(realPath: String)
        case missing
        case outside
    }

    /// Judges a saved queue entry's URL (any thread; reads the file system).
    public func judge(savedURL url: String) -> SavedEntry {
        let lower = url.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") { return .stream }
        guard !url.contains("\0"), !lower.hasPrefix("file:"), !url.isEmpty else { return .outside }
        let path = url.hasPrefix("/") ? url : (root == "/" ? "" : root) + "/" + url
        guard let real = Self.realPath(path) else { return .missing }
        guard contains(realPath: real), Self.isRegularFile(real) else { return .outside }
        return .file(realPath: real)
    }

    static func realPath(_ path: String) -> String? {
        PathBytes.withCString(path) { name -> String? in
            guard let resolved = realpath(name, nil) else { return nil }
            defer { free(resolved) }
            return PathBytes.string(cString: resolved)
        }
    }

    /// True when `path` is a folder (symlinks followed).
    public static func isDirectory(_ path: String) -> Bool {
        fileType(path) == S_IFDIR
    }

    static func isRegularFile(_ path: String) -> Bool {
        fileType(path) == S_IFREG
    }

    /// The `S_IFMT` bits of `stat(path)` (symlinks followed); nil when it fails.
    private static func fileType(_ path: String) -> mode_t? {
        var info = stat()
        let status = PathBytes.withCString(path) { stat($0, &info) }
        return status == 0 ? info.st_mode & S_IFMT : nil
    }
}
