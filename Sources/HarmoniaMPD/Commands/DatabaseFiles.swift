// listfiles, albumart, readpicture — specs/mpd-protocol.md §Files
//
// MPD 0.23's src/command/StorageCommands.cxx (listfiles on the local
// storage), src/command/FileCommands.cxx (albumart, readpicture). Every path
// is confined by MusicDirectory before the disk is touched: what MPD would
// read outside the music directory (`listfiles ..`, `albumart ../x`, symlinks
// leading out) is refused with MPD's "no such" answer for that command.
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaCore
import HarmoniaLibrary

extension MPDDatabaseCommands {
    // MARK: listfiles

    /// `listfiles [URI]`: the folder's entries on disk, in the order the
    /// file system gives them (MPD does not sort): `file: NAME`, `size: N`
    /// for regular files, `directory: NAME` for folders, each with
    /// `Last-Modified`; symbolic links and other kinds are left out (MPD
    /// does not follow them here), as are names with a newline or that are
    /// not UTF-8. Hidden names are listed, as MPD lists them.
    /// - Throws: `No such directory` (NO_EXIST) for a folder that does not
    ///   exist, is not a folder, or is outside the music directory; MPD
    ///   answers SYSTEM with the absolute path, which we do not reveal.
    func listFiles(_ argument: String, into writer: inout MPDResponseWriter) throws(MPDError) {
        let uri = try Self.relativeURI(argument)
        let real: String
        do {
            real = try library.musicDirectory.resolve(uri)
        } catch {
            throw .noSuchDirectory
        }
        // O_NOFOLLOW: the real path has no link; one swapped in since is refused.
        let fd = PathBytes.withCString(real) { open($0, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) }
        guard fd >= 0 else { throw .noSuchDirectory }
        guard let directory = fdopendir(fd) else {
            close(fd)
            throw .noSuchDirectory
        }
        defer { closedir(directory) }
        while !writer.isFull, let entry = readdir(directory) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if bytes == [0x2E] || bytes == [0x2E, 0x2E] || bytes.contains(0x0A) { continue }
            guard let name = String(validating: bytes, as: UTF8.self) else { continue }
            var info = stat()
            let cName = bytes + [0]
            let status = cName.withUnsafeBufferPointer {
                $0.withMemoryRebound(to: CChar.self) { fstatat(dirfd(directory), $0.baseAddress!, &info, AT_SYMLINK_NOFOLLOW) }
            }
            guard status == 0 else { continue }
            switch info.st_mode & S_IFMT {
            case S_IFREG:
                writer.append("file", name)
                writer.append("size", Int64(info.st_size))
            case S_IFDIR:
                writer.append("directory", name)
            default:
                continue
            }
            if info.st_mtim.tv_sec >= 0 {
                writer.append("Last-Modified", MPDResponseWriter.iso8601(Int64(info.st_mtim.tv_sec)))
            }
        }
    }

    // MARK: albumart

    /// `albumart URI OFFSET`: the cover file of the folder holding URI
    /// (`MusicDirectory.coverFile`; the song need not be in the library, as
    /// in MPD): `size: TOTAL` and one binary chunk of at most the client's
    /// binary limit from OFFSET, read from the file (never the whole file).
    /// - Throws: MPD's `No file exists` (NO_EXIST) when there is no cover or
    ///   the folder is missing or outside; `Offset too large` (ARG).
    func albumArt(_ uri: String, offset text: String, into writer: inout MPDResponseWriter) throws(MPDError) {
        let offset = Int64(try MPDArgument.unsigned(text))
        let relative = try Self.relativeURI(uri)
        let noFile = MPDError(.noExist, "No file exists")
        guard let cover = (try? library.musicDirectory.coverFile(forSong: relative)) ?? nil else { throw noFile }
        let fd = PathBytes.withCString(cover) { open($0, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK) }
        guard fd >= 0 else { throw noFile }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { throw noFile }
        let size = Int64(info.st_size)
        guard offset <= size else { throw MPDError(.arg, "Offset too large") }
        let wanted = Int(min(size - offset, Int64(max(writer.binaryLimit, 0))))
        var chunk = [UInt8](repeating: 0, count: wanted)
        var done = 0
        while done < wanted {
            let n = chunk.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, wanted - done, off_t(offset) + off_t(done)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { break }  // the file shrank: send what was read, as MPD does
            done += n
        }
        writer.append("size", size)
        writer.appendBinary(chunk[0..<done])
    }

    // MARK: readpicture

    /// `readpicture URI OFFSET`: the song's first embedded picture through
    /// the `readPicture` reader: `size:`, `type:` (when known), one binary
    /// chunk; nothing (just OK) when the file has no picture.
    /// - Throws: `No such song` (NO_EXIST) when the library has no song at
    ///   URI; `Failed to load file` (NO_EXIST) when the file cannot be read
    ///   or has left the music directory; `Bad file offset` (ARG).
    func embeddedPicture(_ uri: String, offset text: String, into writer: inout MPDResponseWriter) throws(MPDError) {
        let offset = Int(try MPDArgument.unsigned(text))
        let relative = try Self.relativeURI(uri)
        let found = MPDFilterParser.isSafeLocalURI(relative)
            ? try mapped { () throws(CoreError) in try library.store.song(at: relative) } : nil
        guard let song = found else { throw MPDError(.noExist, "No such song") }
        let failed = MPDError(.noExist, "Failed to load file")
        let picture: (data: [UInt8], mimeType: String?)?
        do {
            picture = try self.readPicture(try library.musicDirectory.resolve(song.path))
        } catch {
            throw failed
        }
        guard let picture else { return }
        guard offset <= picture.data.count else { throw MPDError(.arg, "Bad file offset") }
        writer.append("size", picture.data.count)
        if let mimeType = picture.mimeType { writer.append("type", mimeType) }
        let end = offset + min(picture.data.count - offset, max(writer.binaryLimit, 0))
        writer.appendBinary(picture.data[offset..<end])
    }
}
