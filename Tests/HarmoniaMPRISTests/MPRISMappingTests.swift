// The MPRIS mapping as values: states, loop modes, microseconds, Metadata,
// URIs and property changes (specs/mpris.md §Mapping). No bus needed.
import Foundation
import HarmoniaCore
@testable import HarmoniaMPRIS
import Testing

@Suite("MPRIS mapping")
struct MPRISMappingTests {
    @Test("PlaybackStatus: buffering shows as Playing, error as Stopped")
    func playbackStatus() {
        #expect(MPRISMapping.playbackStatus(.playing) == "Playing")
        #expect(MPRISMapping.playbackStatus(.buffering) == "Playing")
        #expect(MPRISMapping.playbackStatus(.paused) == "Paused")
        #expect(MPRISMapping.playbackStatus(.stopped) == "Stopped")
        #expect(MPRISMapping.playbackStatus(.error(.ioError("x"))) == "Stopped")
    }

    @Test("LoopStatus is the repeat mode, both ways; other names are refused")
    func loopStatus() {
        for mode in RepeatMode.allCases {
            #expect(MPRISMapping.repeatMode(loopStatus: MPRISMapping.loopStatus(mode)) == mode)
        }
        #expect(MPRISMapping.loopStatus(.one) == "Track" && MPRISMapping.loopStatus(.all) == "Playlist")
        #expect(MPRISMapping.repeatMode(loopStatus: "none") == nil)
        #expect(MPRISMapping.repeatMode(loopStatus: "") == nil)
    }

    @Test("a frame as microseconds and back is the same frame, at 44.1, 48 and 96 kHz; outside numbers never trap")
    func microsecondsRoundTrip() {
        for rate in [44_100.0, 48_000, 96_000] {
            for frame in stride(from: Int64(0), through: 10_000_000, by: 997) {
                let µs = MPRISMapping.microseconds(Double(frame) / rate)
                #expect(Int64(clampingFrames: MPRISMapping.seconds(microseconds: µs) * rate) == frame)
            }
        }
        #expect(MPRISMapping.microseconds(2.0) == 2_000_000)
        #expect(MPRISMapping.microseconds(.nan) == 0)
        #expect(MPRISMapping.microseconds(.infinity) == 0)
        #expect(MPRISMapping.microseconds(1e300) == Int64(1) << 62)
        #expect(MPRISMapping.microseconds(-1e300) == -(Int64(1) << 62))
    }

    static let track = Track(url: "/music/A b/ç.flac", id: UUID(uuidString: "0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9")!,
                             title: nil, artist: "Zoë", album: nil, duration: 2.0)

    @Test("Metadata: track id per entry, exact length, xesam fields from the entry and the tags, the cover's URI")
    func metadata() {
        let tags = TagBundle(title: "Ünïcödé 東京", artist: "Tag Artist", album: "Ελληνικά", albumArtist: "AA",
                             composer: "C", genre: "Electronic", trackNumber: 3, discNumber: 1)
        let value = MPRISMapping.metadata(track: Self.track, tags: tags, lengthSeconds: 2.0,
                                          artURL: "file:///c/x.png", currentDirectory: "/")
        #expect(value == .dictionary([
            DBusDictEntry(key: "mpris:trackid", value: .objectPath("/org/harmonia/HarmoniaPlay/Track/0a1b2c3d4e5f60718293a4b5c6d7e8f9")),
            DBusDictEntry(key: "mpris:length", value: .int64(2_000_000)),
            DBusDictEntry(key: "mpris:artUrl", value: .string("file:///c/x.png")),
            DBusDictEntry(key: "xesam:url", value: .string("file:///music/A%20b/%C3%A7.flac")),
            DBusDictEntry(key: "xesam:title", value: .string("Ünïcödé 東京")),
            DBusDictEntry(key: "xesam:artist", value: .strings(["Zoë"])),  // the entry's own field wins
            DBusDictEntry(key: "xesam:album", value: .string("Ελληνικά")),
            DBusDictEntry(key: "xesam:albumArtist", value: .strings(["AA"])),
            DBusDictEntry(key: "xesam:trackNumber", value: .int32(3)),
            DBusDictEntry(key: "xesam:discNumber", value: .int32(1)),
            DBusDictEntry(key: "xesam:genre", value: .strings(["Electronic"])),
            DBusDictEntry(key: "xesam:composer", value: .strings(["C"])),
        ]))
        #expect(value.signature == "a{sv}")
    }

    @Test("Metadata of a duet: every artist, album artist, genre and composer, in file order, as xesam lists")
    func metadataLists() {
        var tags = TagBundle(title: "Together")
        tags.artists = ["Björk", "Ólafur Arnalds"]
        tags.albumArtists = ["Björk"]
        tags.genres = ["Electronic", "Ambient"]
        tags.composers = ["AC/DC; Friends", "B"]
        let value = MPRISMapping.metadata(track: Track(url: "/m/x.flac"), tags: tags, lengthSeconds: nil, artURL: nil, currentDirectory: "/")
        #expect(value["xesam:artist"] == .strings(["Björk", "Ólafur Arnalds"]))
        #expect(value["xesam:albumArtist"] == .strings(["Björk"]))
        #expect(value["xesam:genre"] == .strings(["Electronic", "Ambient"]))
        #expect(value["xesam:composer"] == .strings(["AC/DC; Friends", "B"]))
        // The queue entry's artists (the library's, under serve) win over the file's.
        let queued = Track(url: "/m/x.flac", artists: ["A", "B"])
        #expect(MPRISMapping.metadata(track: queued, tags: tags, lengthSeconds: nil, artURL: nil, currentDirectory: "/")["xesam:artist"]
                == .strings(["A", "B"]))
        // So do its album artists and genres (a UPnP control point's, with no file tags at all).
        let cast = Track(url: "http://h/a.flac", albumArtists: ["Various"], genres: ["Jazz", "Blues"])
        let casted = MPRISMapping.metadata(track: cast, tags: nil, lengthSeconds: nil, artURL: nil, currentDirectory: "/")
        #expect(casted["xesam:albumArtist"] == .strings(["Various"]) && casted["xesam:genre"] == .strings(["Jazz", "Blues"]))
    }

    @Test("A cover given by URL with the entry (a UPnP control point's) is mpris:artUrl when the file has no embedded cover")
    func coverURL() {
        let source = MPRISMetadataSource(tagReader: nil, covers: nil, currentDirectory: "/")
        let track = Track(url: "http://host/a.flac", title: "Cast", artworkURL: "http://host/c.jpg")
        #expect(source.metadata(for: track, lengthSeconds: nil)["mpris:artUrl"] == .string("http://host/c.jpg"))
        #expect(source.metadata(for: Track(url: "http://host/b.flac"), lengthSeconds: nil)["mpris:artUrl"] == nil)
    }

    @Test("Metadata without tags: the file name as title, no empty fields; no track: NoTrack alone")
    func metadataSparse() {
        let bare = MPRISMapping.metadata(track: Track(url: "http://host/live.ogg"), tags: nil, lengthSeconds: nil,
                                         artURL: nil, currentDirectory: "/")
        guard case .dictionary(let entries) = bare else { Issue.record("not a dictionary"); return }
        #expect(entries.map(\.key) == ["mpris:trackid", "xesam:url", "xesam:title"])
        #expect(bare["xesam:url"] == .string("http://host/live.ogg"))
        #expect(bare["xesam:title"] == .string("live.ogg"))
        #expect(MPRISMapping.metadata(track: nil, tags: nil, lengthSeconds: nil, artURL: nil, currentDirectory: "/")
                == .dictionary([DBusDictEntry(key: "mpris:trackid", value: .objectPath("/org/mpris/MediaPlayer2/TrackList/NoTrack"))]))
        // Numbers from a hostile file are clamped, text is cut at a character boundary.
        let huge = TagBundle(title: String(repeating: "é", count: 10_000), trackNumber: Int.max, discNumber: Int.min)
        let clamped = MPRISMapping.metadata(track: Track(url: "rel/a.flac"), tags: huge, lengthSeconds: .nan,
                                            artURL: nil, currentDirectory: "/home/u")
        #expect(clamped["xesam:trackNumber"] == .int32(.max) && clamped["xesam:discNumber"] == .int32(.min))
        #expect(clamped["mpris:length"] == .int64(0))
        #expect(clamped["xesam:url"] == .string("file:///home/u/rel/a.flac"))
        let title = clamped["xesam:title"]?.stringValue ?? ""
        #expect(title.utf8.count == 4096 && title == String(repeating: "é", count: 2048))
    }

    @Test("file URIs: percent-decoded to paths; other hosts, bad escapes and NUL refused")
    func fileURIs() {
        #expect(MPRISMapping.path(fileURI: "file:///a%20b/%C3%A7.flac") == "/a b/ç.flac")
        #expect(MPRISMapping.path(fileURI: "file://localhost/x.ogg") == "/x.ogg")
        #expect(MPRISMapping.path(fileURI: "file://otherhost/x.ogg") == nil)
        #expect(MPRISMapping.path(fileURI: "file:///x%2") == nil)
        #expect(MPRISMapping.path(fileURI: "file:///x%zz") == nil)
        #expect(MPRISMapping.path(fileURI: "file:///x%00y") == nil)
        #expect(MPRISMapping.path(fileURI: "file:///x%FF") == nil)  // not UTF-8
        #expect(MPRISMapping.path(fileURI: "http://h/x") == nil)
        #expect(MPRISMapping.hasScheme("https://x") && MPRISMapping.hasScheme("file:/x"))
        #expect(!MPRISMapping.hasScheme("/a:b") && !MPRISMapping.hasScheme(":x") && !MPRISMapping.hasScheme("1a:b") && !MPRISMapping.hasScheme("a b:c"))
    }

    @Test("PropertiesChanged carries exactly the properties that changed")
    func changes() {
        let facts = MPRISFacts(state: .playing, volume: 1, repeatMode: .off, shuffle: false, queueCount: 2,
                               currentIndex: 0, currentTrack: Self.track, serviceDuration: 2)
        let before = MPRISMapping.properties(facts, metadata: .dictionary([]))
        #expect(before.changes(since: nil).count == 10)
        #expect(before.canGoNext && !before.canGoPrevious && before.canSeek && before.canPlay)
        var later = facts
        later.state = .paused
        later.volume = 0.5
        let after = MPRISMapping.properties(later, metadata: .dictionary([]))
        #expect(after.changes(since: before).map(\.key) == ["PlaybackStatus", "Volume"])
        #expect(after.changes(since: after).isEmpty)
        var stopped = facts
        stopped.state = .stopped
        #expect(!MPRISMapping.properties(stopped, metadata: .dictionary([])).canSeek)
        var last = facts
        last.currentIndex = 1
        let end = MPRISMapping.properties(last, metadata: .dictionary([]))
        #expect(!end.canGoNext && end.canGoPrevious)
        last.repeatMode = .all
        #expect(MPRISMapping.properties(last, metadata: .dictionary([])).canGoNext)
    }

    @Test("covers: one file per picture, named by its content, written once")
    func coverCache() throws {
        let folder = NSTemporaryDirectory() + "harmonia-covers-\(UUID().uuidString.prefix(8))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let png = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 40))
        let cache = CoverArtCache(folder: folder)
        let uri = try #require(cache.uri(for: png))
        #expect(uri.hasPrefix("file://" + folder + "/") && uri.hasSuffix("-48.png"))
        let path = String(uri.dropFirst(7))
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == png)
        // A second cache (a later run) finds the file and does not write it again.
        let written = try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1000)], ofItemAtPath: path)
        #expect(CoverArtCache(folder: folder).uri(for: png) == uri)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date == Date(timeIntervalSince1970: 1000))
        #expect(written != nil)
        #expect(cache.uri(for: Data()) == nil)
        #expect(CoverArtCache.fileExtension(Data([0xFF, 0xD8, 0xFF, 0xE0])) == "jpg")
        #expect(CoverArtCache(folder: "/proc/no-such/covers").uri(for: png) == nil)  // unwritable: no artUrl
        #expect(CoverArtCache.defaultFolder(environment: ["XDG_CACHE_HOME": "/c", "HOME": "/h"]) == "/c/harmonia-play/covers")
        #expect(CoverArtCache.defaultFolder(environment: ["HOME": "/h"]) == "/h/.cache/harmonia-play/covers")
        #expect(CoverArtCache.defaultFolder(environment: [:]) == nil)
    }
}
