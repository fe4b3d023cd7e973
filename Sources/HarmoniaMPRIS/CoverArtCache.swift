// Embedded covers as files for mpris:artUrl — specs/mpris.md §Mapping (Cover art)
import Foundation

/// Writes each distinct embedded picture once to a cache folder and gives
/// its `file://` URI. Files are named by their content (a 64-bit FNV-1a hash
/// and the byte count), so a picture seen again — in this run or a later
/// one — is not written again. A file is written whole under a temporary
/// name, then renamed. Pictures larger than `maxBytes` are not cached.
///
/// Threads: the adapter's D-Bus thread only (not Sendable state).
final class CoverArtCache {
    static let maxBytes = 16 << 20
    let folder: String
    /// The URIs given so far, by file name (bounded: cleared past 256).
    private var known: [String: String] = [:]

    init(folder: String) {
        self.folder = folder
    }

    /// `$XDG_CACHE_HOME/harmonia-play/covers`, or `~/.cache/harmonia-play/covers`.
    static func defaultFolder(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        if let cache = environment["XDG_CACHE_HOME"], cache.hasPrefix("/") { return cache + "/harmonia-play/covers" }
        if let home = environment["HOME"], home.hasPrefix("/") { return home + "/.cache/harmonia-play/covers" }
        return nil
    }

    /// The `file://` URI of `picture`'s cache file, writing it if it is not
    /// there yet; nil when the picture is empty, too large, or cannot be written.
    func uri(for picture: Data) -> String? {
        guard !picture.isEmpty, picture.count <= Self.maxBytes else { return nil }
        let name = Self.fileName(for: picture)
        if let uri = known[name] { return uri }
        let path = folder + "/" + name
        let manager = FileManager.default
        let existing = (try? manager.attributesOfItem(atPath: path))?[.size] as? Int
        if existing != picture.count {
            do {
                try manager.createDirectory(atPath: folder, withIntermediateDirectories: true,
                                            attributes: [.posixPermissions: 0o700])
                try picture.write(to: URL(fileURLWithPath: path), options: .atomic)
            } catch {
                return nil
            }
        }
        if known.count >= 256 { known.removeAll() }
        let uri = "file://" + MPRISMapping.percentEncoded(path)
        known[name] = uri
        return uri
    }

    /// `<hash>-<bytes>.<png|jpg|gif|webp|img>`.
    static func fileName(for picture: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in picture {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex + "-\(picture.count)." + fileExtension(picture)
    }

    /// The picture's format from its first bytes.
    static func fileExtension(_ picture: Data) -> String {
        let head = Array(picture.prefix(12))
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47]) { return "png" }
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return "jpg" }
        if head.starts(with: Array("GIF8".utf8)) { return "gif" }
        if head.count == 12, head.starts(with: Array("RIFF".utf8)), Array(head[8..<12]) == Array("WEBP".utf8) { return "webp" }
        return "img"
    }
}
