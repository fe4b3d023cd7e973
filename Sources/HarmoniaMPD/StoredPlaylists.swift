// Stored playlists on disk — specs/mpd-protocol.md §Stored playlists
//
// MPD's playlist directory (src/PlaylistFile.cxx): `NAME.m3u`, one path
// relative to the music folder (or a URL) per line, written atomically and
// durably; names confined to the folder.
import Foundation
import HarmoniaCore
import HarmoniaLibrary
#if canImport(Glibc)
import Glibc
#endif

/// The stored playlists of one folder: names, listing, reading, atomic
/// writes. The folder is created (mode 0700) on the first write.
///
/// Files: `NAME.m3u` holds one entry per line (a path relative to the music
/// folder, or a URL), UTF-8, no `#EXTM3U`; an empty playlist is an empty
/// file. A write goes to a temporary file in the same folder, which is
/// fsynced, renamed over (or linked to, when it must not replace) the
/// playlist, then the folder is fsynced: after a crash at any instant a
/// playlist is its old or its new whole file. A name never reaches the file
/// system unchecked (`isValidName`), every file is opened relative to the
/// folder with `O_NOFOLLOW`, and a symbolic link in the folder is replaced
/// or removed, never followed, so nothing is read or written outside it.
///
/// Errors are MPD's ACKs, as the commands answer them: `Bad playlist name`
/// (ARG), `No such playlist` (NO_EXIST), `Playlist already exists` /
/// `Playlist exists already` (EXIST), `Stored playlist is too large`
/// (PLAYLIST_MAX), and SYSTEM with the failing call for an I/O error.
///
/// Threads: any. Every operation holds one lock, and `flock` on the folder,
/// so edits from several connections, or from two servers sharing the
/// folder, never interleave (each read-modify-write is whole). A temporary
/// file a crash left behind is removed by the next listing (under the
/// folder's lock no write is in progress).
public final class StoredPlaylists: @unchecked Sendable {
    /// A playlist in the folder: its name and modification time (seconds since 1970).
    public struct Info: Sendable, Equatable {
        public let name: String
        public let modified: Int64
    }

    /// MPD's `max_playlist_length`: a playlist holds at most this many entries
    /// (more are dropped when read; an edit past it is refused).
    public static let maxEntries = 16_384
    /// A larger playlist file is not read (`Stored playlist is too large`).
    public static let maxFileBytes = 16 << 20
    /// NAME_MAX: the name plus `.m3u` must fit one file name.
    static let maxNameBytes = 255 - 4

    /// The folder's path (absolute or relative to the working directory; it may be a symbolic link).
    public let directory: String
    private let lock = ConditionLock()
    // Guarded by `lock`: numbers the temporary files.
    private var serial = 0

    /// The playlists of `directory`; nothing is created until the first write.
    public init(directory: String) {
        self.directory = directory
    }

    /// MPD's rule (spl_valid_name): not empty, no `/`, no CR or LF; and no
    /// NUL, and short enough for a file name. `.` and `..` are valid: their
    /// files are `..m3u` and `...m3u`, inside the folder.
    public static func isValidName(_ name: String) -> Bool {
        let bytes = name.utf8
        return !bytes.isEmpty && bytes.count <= maxNameBytes
            && !bytes.contains { $0 == UInt8(ascii: "/") || $0 == 0x0A || $0 == 0x0D || $0 == 0 }
    }

    /// The playlists, sorted by name (bytes). A missing folder has none.
    /// Entries that are not regular files (links, folders), not UTF-8, or
    /// whose name is not valid are left out.
    /// - Throws: SYSTEM when the folder exists but cannot be read.
    public func list() throws(MPDError) -> [Info] {
        try lock.withLock { () throws(MPDError) -> [Info] in
            guard let folder = try openFolder(create: false) else { return [] }
            defer { close(folder) }
            let copy = dup(folder)
            guard copy >= 0, let stream = fdopendir(copy) else {
                if copy >= 0 { close(copy) }
                throw Self.systemError("opendir", "the playlist folder")
            }
            defer { closedir(stream) }
            var found: [Info] = []
            while let entry = readdir(stream) {
                let bytes = withUnsafeBytes(of: &entry.pointee.d_name) { Array($0.prefix { $0 != 0 }) }
                if bytes.starts(with: Self.temporaryPrefix.utf8), bytes.suffix(4).elementsEqual(".tmp".utf8) {
                    unlinkat(folder, (bytes + [0]).map { CChar(bitPattern: $0) }, 0)  // left by a crash
                    continue
                }
                guard bytes.count > 4, bytes.suffix(4).elementsEqual(".m3u".utf8),
                      let name = String(validating: bytes.dropLast(4), as: UTF8.self), Self.isValidName(name) else { continue }
                var info = stat()
                guard fstatat(folder, (bytes + [0]).map { CChar(bitPattern: $0) }, &info, AT_SYMLINK_NOFOLLOW) == 0,
                      info.st_mode & S_IFMT == S_IFREG else { continue }
                found.append(Info(name: name, modified: Int64(info.st_mtim.tv_sec)))
            }
            return found.sorted { LibraryText.byteLess($0.name, $1.name) }
        }
    }

    /// True when the playlist's file exists (whatever it is).
    public func exists(_ name: String) -> Bool {
        guard Self.isValidName(name) else { return false }
        return lock.withLock { () -> Bool in
            guard let folder = try? openFolder(create: false) else { return false }
            defer { close(folder) }
            return existsLocked(name, in: folder)
        }
    }

    /// The playlist's entries as written (paths relative to the music folder,
    /// or URLs), at most `maxEntries`; blank and `#` lines skipped.
    /// - Throws: `Bad playlist name`; `No such playlist` (also for a link or
    ///   a folder by that name); `Stored playlist is too large`; SYSTEM.
    public func entries(of name: String) throws(MPDError) -> [String] {
        try Self.check(name)
        return try lock.withLock { () throws(MPDError) -> [String] in
            guard let folder = try openFolder(create: false) else { throw .noSuchPlaylist }
            defer { close(folder) }
            return try read(name, in: folder)
        }
    }

    /// Writes a new playlist (`save`).
    /// - Throws: `Bad playlist name`; `Playlist already exists`; SYSTEM.
    public func create(_ name: String, entries: [String]) throws(MPDError) {
        try Self.check(name)
        try lock.withLock { () throws(MPDError) in
            let folder = try openFolder(create: true)!
            defer { close(folder) }
            guard !existsLocked(name, in: folder) else { throw MPDError(.exist, "Playlist already exists") }
            try write(entries, to: name, in: folder, replace: false)
        }
    }

    /// Reads the playlist, lets `body` change its entries, writes it back:
    /// one step for every other caller (`playlistadd`, `playlistdelete`…).
    /// - Parameter createIfMissing: a missing playlist starts empty (MPD's `playlistadd`).
    /// - Throws: `Bad playlist name`; `No such playlist`; what `body` throws
    ///   (nothing is written then); `Stored playlist is too large` when the
    ///   result has more than `maxEntries`; SYSTEM.
    public func edit(_ name: String, createIfMissing: Bool = false,
                     _ body: (inout [String]) throws(MPDError) -> Void) throws(MPDError) {
        try Self.check(name)
        try lock.withLock { () throws(MPDError) in
            let folder = try openFolder(create: createIfMissing)
            guard let folder else { throw .noSuchPlaylist }
            defer { close(folder) }
            var entries: [String] = []
            if !createIfMissing || existsLocked(name, in: folder) {
                entries = try read(name, in: folder)
            }
            try body(&entries)
            guard entries.count <= Self.maxEntries else { throw .tooLarge }
            try write(entries, to: name, in: folder, replace: true)
        }
    }

    /// Renames a playlist (`rename`).
    /// - Throws: `Bad playlist name` (either name); `No such playlist`;
    ///   `Playlist exists already` (MPD's words for rename); SYSTEM.
    public func rename(_ name: String, to newName: String) throws(MPDError) {
        try Self.check(name)
        try Self.check(newName)
        try lock.withLock { () throws(MPDError) in
            guard let folder = try openFolder(create: false) else { throw .noSuchPlaylist }
            defer { close(folder) }
            guard existsLocked(name, in: folder) else { throw .noSuchPlaylist }
            guard !existsLocked(newName, in: folder) else { throw MPDError(.exist, "Playlist exists already") }
            guard renameat(folder, Self.fileName(name), folder, Self.fileName(newName)) == 0 else {
                throw Self.systemError("renameat", name)
            }
            try syncFolder(folder)
        }
    }

    /// Removes a playlist (`rm`); a link by that name is removed, not followed.
    /// - Throws: `Bad playlist name`; `No such playlist`; SYSTEM.
    public func remove(_ name: String) throws(MPDError) {
        try Self.check(name)
        try lock.withLock { () throws(MPDError) in
            guard let folder = try openFolder(create: false) else { throw .noSuchPlaylist }
            defer { close(folder) }
            guard unlinkat(folder, Self.fileName(name), 0) == 0 else {
                if errno == ENOENT { throw .noSuchPlaylist }
                throw Self.systemError("unlinkat", name)
            }
            try syncFolder(folder)
        }
    }

    // MARK: Inside the lock

    private static func check(_ name: String) throws(MPDError) {
        guard isValidName(name) else { throw MPDError(.arg, "Bad playlist name") }
    }

    private static func fileName(_ name: String) -> String { name + ".m3u" }

    /// How temporary files begin (never a playlist: those end in `.m3u`).
    static let temporaryPrefix = ".harmonia-"

    /// The folder, opened; nil when it does not exist and `create` is false.
    private func openFolder(create: Bool) throws(MPDError) -> Int32? {
        var fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0 && errno == ENOENT {
            guard create else { return nil }
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
            } catch {
                throw MPDError(.system, "cannot create the playlist folder")
            }
            fd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        guard fd >= 0 else { throw Self.systemError("open", "the playlist folder") }
        // Another process sharing the folder waits here (closing `fd` unlocks).
        while flock(fd, LOCK_EX) != 0 {
            guard errno == EINTR else {
                close(fd)
                throw Self.systemError("flock", "the playlist folder")
            }
        }
        return fd
    }

    private func existsLocked(_ name: String, in folder: Int32) -> Bool {
        var info = stat()
        return fstatat(folder, Self.fileName(name), &info, AT_SYMLINK_NOFOLLOW) == 0
    }

    /// The entries of `name`'s file: a regular file, not a link, at most `maxFileBytes`.
    private func read(_ name: String, in folder: Int32) throws(MPDError) -> [String] {
        let fd = openat(folder, Self.fileName(name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT || errno == ELOOP || errno == ENOTDIR { throw .noSuchPlaylist }
            throw Self.systemError("openat", name)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw Self.systemError("fstat", name) }
        guard info.st_mode & S_IFMT == S_IFREG else { throw .noSuchPlaylist }
        guard info.st_size <= Self.maxFileBytes else { throw .tooLarge }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while bytes.count <= Self.maxFileBytes {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n >= 0 else { throw Self.systemError("read", name) }
            if n == 0 { break }
            bytes += chunk[0..<n]
        }
        guard bytes.count <= Self.maxFileBytes else { throw .tooLarge }  // it grew while read
        let text = TextFile.decode(Data(bytes))
        return PlaylistParsers.m3uEntries(text).prefix(Self.maxEntries).map(\.location)
    }

    /// Writes `entries` as `name`'s file, atomically and durably: a
    /// temporary file, fsync, rename over (`replace`) or link (fails when
    /// the name exists), fsync of the folder.
    private func write(_ entries: [String], to name: String, in folder: Int32, replace: Bool) throws(MPDError) {
        serial += 1
        let temporary = "\(Self.temporaryPrefix)\(getpid())-\(serial).tmp"
        var text = [UInt8]()
        for entry in entries where !entry.utf8.contains(where: { $0 == 0x0A || $0 == 0x0D || $0 == 0 }) {
            text += entry.utf8
            text.append(0x0A)
        }
        let fd = openat(folder, temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw Self.systemError("openat", name) }
        var done = false
        defer { if !done { unlinkat(folder, temporary, 0) } }
        do {
            defer { close(fd) }
            var offset = 0
            while offset < text.count {
                let n = text[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { throw Self.systemError("write", name) }
                offset += n
            }
            guard fsync(fd) == 0 else { throw Self.systemError("fsync", name) }
        }
        if replace {
            guard renameat(folder, temporary, folder, Self.fileName(name)) == 0 else { throw Self.systemError("renameat", name) }
            done = true
        } else {
            guard linkat(folder, temporary, folder, Self.fileName(name), 0) == 0 else {
                if errno == EEXIST { throw MPDError(.exist, "Playlist already exists") }
                throw Self.systemError("linkat", name)
            }
            // `done` stays false: the temporary name goes; the playlist keeps the file.
        }
        try syncFolder(folder)
    }

    private func syncFolder(_ folder: Int32) throws(MPDError) {
        guard fsync(folder) == 0 else { throw Self.systemError("fsync", "the playlist folder") }
    }

    private static func systemError(_ call: String, _ what: String) -> MPDError {
        MPDError(.system, "\(call) failed for \(what): \(String(cString: strerror(errno)))")
    }
}

extension MPDError {
    /// `No such playlist` (NO_EXIST).
    static let noSuchPlaylist = MPDError(.noExist, "No such playlist")
    /// `Stored playlist is too large` (PLAYLIST_MAX): MPD's words past `max_playlist_length`.
    static let tooLarge = MPDError(.playlistMax, "Stored playlist is too large")
}
