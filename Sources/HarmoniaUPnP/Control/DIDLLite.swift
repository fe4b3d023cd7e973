// DIDL-Lite metadata: read from a control point, made for our own entries
// — specs/upnp.md §Mapping to the application layer
import Foundation
import HarmoniaCore

/// What a DIDL-Lite item says of a track.
public struct DIDLItem: Sendable, Equatable {
    public var title: String?
    /// `upnp:artist` (but those with role AlbumArtist) and `dc:creator`, in order.
    public var artists: [String] = []
    public var album: String?
    /// `upnp:artist role="AlbumArtist"`, in order.
    public var albumArtists: [String] = []
    /// `upnp:genre`, in order.
    public var genres: [String] = []
    /// The cover's URL: http or https only (another scheme is left out, so
    /// no frontend is ever handed a `file:` or `javascript:` URL).
    public var albumArtURI: String?
    /// The MIME type of the first `res` (its protocolInfo's third field).
    public var mimeType: String?
}

public enum DIDLLite {
    /// Reads the first item of DIDL-Lite `text` (an empty text: an empty item).
    /// - Throws: `UPnPError` 402 when it is not XML we accept (a DOCTYPE, an
    ///   entity, malformed) or over 64 KiB.
    public static func read(_ text: String) throws(UPnPError) -> DIDLItem {
        var item = DIDLItem()
        guard !text.isEmpty else { return item }
        guard text.utf8.count <= 64 << 10 else { throw .invalidArgs("DIDL-Lite: over 64 KiB") }
        let root: XMLElement
        do {
            root = try UPnPXML.parse(Array(text.utf8), maxDepth: 16, maxElements: 512)
        } catch {
            throw .invalidArgs("DIDL-Lite: \(error.description)")
        }
        guard let element = root.descendant("item") ?? (root.name == "item" ? root : nil) else { return item }
        func clean(_ value: String) -> String? {
            let trimmed = value.trimmingSpaces()
            return trimmed.isEmpty ? nil : String(trimmed.prefix(1024))
        }
        /// A value added once, at most 16 a list.
        func add(_ text: String, to list: inout [String]) {
            if let value = clean(text), !list.contains(value), list.count < 16 { list.append(value) }
        }
        for child in element.children {
            switch child.name {
            case "title": item.title = item.title ?? clean(child.text)
            case "artist" where child.attributes["role"]?.lowercased() == "albumartist": add(child.text, to: &item.albumArtists)
            case "artist", "creator": add(child.text, to: &item.artists)
            case "genre": add(child.text, to: &item.genres)
            case "album": item.album = item.album ?? clean(child.text)
            case "albumArtURI":
                // Whole or not at all: a cut URL names another resource.
                let text = child.text.trimmingSpaces()
                if item.albumArtURI == nil, text.utf8.count <= 2048 { item.albumArtURI = webURL(text) }
            case "res":
                if item.mimeType == nil, let info = child.attributes["protocolInfo"] {
                    let fields = info.split(separator: ":", omittingEmptySubsequences: false)
                    if fields.count == 4 { item.mimeType = String(fields[2]).lowercased() }
                }
            default: break
            }
        }
        return item
    }

    /// `text` when it is an http(s) URL with a host and no space or control character.
    static func webURL(_ text: String) -> String? {
        let lower = text.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"),
              !text.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 || $0 == 0x7F } == true }),
              URL(string: text)?.host?.isEmpty == false else { return nil }
        return text
    }

    /// A DIDL-Lite item for `track`, an entry we queued ourselves (or another frontend did).
    public static func make(for track: Track) -> String {
        make(title: track.title, artists: track.artists, album: track.album, url: track.url, artworkURL: track.artworkURL,
             albumArtists: track.albumArtists, genres: track.genres)
    }

    /// A DIDL-Lite item from these fields.
    public static func make(title: String?, artists: [String], album: String?, url: String, artworkURL: String? = nil,
                            albumArtists: [String] = [], genres: [String] = []) -> String {
        var item = "<DIDL-Lite xmlns=\"urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/\" xmlns:dc=\"http://purl.org/dc/elements/1.1/\" "
            + "xmlns:upnp=\"urn:schemas-upnp-org:metadata-1-0/upnp/\"><item id=\"0\" parentID=\"-1\" restricted=\"1\">"
        item += "<dc:title>\(UPnPXML.escape(title ?? lastComponent(url)))</dc:title>"
        for artist in artists { item += "<upnp:artist>\(UPnPXML.escape(artist))</upnp:artist>" }
        for artist in albumArtists { item += "<upnp:artist role=\"AlbumArtist\">\(UPnPXML.escape(artist))</upnp:artist>" }
        if let album { item += "<upnp:album>\(UPnPXML.escape(album))</upnp:album>" }
        for genre in genres { item += "<upnp:genre>\(UPnPXML.escape(genre))</upnp:genre>" }
        if let artworkURL { item += "<upnp:albumArtURI>\(UPnPXML.escape(artworkURL))</upnp:albumArtURI>" }
        item += "<upnp:class>object.item.audioItem.musicTrack</upnp:class></item></DIDL-Lite>"
        return item
    }

    private static func lastComponent(_ url: String) -> String {
        String(url.split(separator: "/").last ?? Substring(url))
    }
}
