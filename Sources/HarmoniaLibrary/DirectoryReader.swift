// Reading one folder of the music directory — specs/library.md §Scanner
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import HarmoniaCore

/// One entry of a folder, symlinks followed: what the scanner needs to know.
struct DirectoryEntry {
    enum Kind { case file, directory }

    let name: String
    let kind: Kind
    /// Modification time, whole seconds since 1970.
    let modified: Int64
    let size: Int64
    /// Device and inode of the target: a folder's identity, for loop detection.
    let identity: FileIdentity
}

/// A file's device and inode.
struct FileIdentity: Hashable {
    let device: UInt64
    let inode: UInt64
}

/// Reads folders with opendir/readdir/fstatat. Names are kept losslessly
/// (PathBytes), so a name that is not UTF-8 is still found again.
enum DirectoryReader {
    /// The entries of the folder at absolute `path` in the order the file
    /// system gives them (the scanner sorts what it walks or reads): hidden
    /// names (starting with ".") and names holding a newline skipped, symlinks
    /// followed, but not to a target outside `musicDirectory` unless
    /// `followOutside`; entries that are neither regular files nor folders,
    /// dangling links and entries `stat` refuses are left out, each with a warning.
    /// - Throws: `ioError` when the folder cannot be opened.
    static func entries(of path: String, in musicDirectory: MusicDirectory, followOutside: Bool,
                        warn: (String) -> Void) throws(CoreError) -> [DirectoryEntry] {
        var names: [String] = []
        let opened = PathBytes.withCString(path) { opendir($0) }
        guard let directory = opened else {
            throw .ioError("cannot open folder '\(path)': \(String(cString: strerror(errno))); check its permissions")
        }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) {
                    PathBytes.string(cString: $0)
                }
            }
            if name.hasPrefix(".") || name.utf8.contains(UInt8(ascii: "\n")) { continue }
            names.append(name)
        }

        // Each name is looked up in the open folder (fstatat on its
        // descriptor), not through the whole path again.
        let folder = dirfd(directory)
        var result: [DirectoryEntry] = []
        for name in names {
            var link = stat()
            guard PathBytes.withCString(name, { fstatat(folder, $0, &link, AT_SYMLINK_NOFOLLOW) }) == 0 else { continue }
            // Not a link: lstat's answer is stat's (one call per entry, not two).
            var info = link
            if link.st_mode & S_IFMT == S_IFLNK {
                let full = path + "/" + name
                if !followOutside {
                    guard let target = MusicDirectory.realPath(full) else {
                        warn("skipped '\(full)': the symbolic link leads nowhere (or loops)")
                        continue
                    }
                    guard musicDirectory.contains(realPath: target) else {
                        warn("skipped '\(full)': the symbolic link leads outside the music directory")
                        continue
                    }
                }
                guard PathBytes.withCString(full, { stat($0, &info) }) == 0 else {
                    warn("skipped '\(full)': \(String(cString: strerror(errno)))")
                    continue
                }
            }
            let type = info.st_mode & S_IFMT
            guard type == S_IFREG || type == S_IFDIR else { continue }
            result.append(DirectoryEntry(
                name: name, kind: type == S_IFDIR ? .directory : .file,
                modified: Int64(info.st_mtim.tv_sec), size: Int64(info.st_size),
                identity: FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))))
        }
        return result
    }

    /// The identity and modification time of the folder at `path`; nil when `stat` fails.
    static func folderInfo(_ path: String) -> (identity: FileIdentity, modified: Int64)? {
        var info = stat()
        guard PathBytes.withCString(path, { stat($0, &info) }) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        return (FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino)), Int64(info.st_mtim.tv_sec))
    }
}
