// The object /org/mpris/MediaPlayer2: method calls and property access
// — specs/mpris.md §Methods (Properties interface, Errors)
import Foundation
import HarmoniaCore

/// Answers calls on the MPRIS object: reads come from the playback service,
/// commands go to `MPRISCommands`. Bus-free (values in, values out), so its
/// rules are tested without a bus.
///
/// Threads: the adapter's D-Bus thread only.
final class MPRISObject {
    /// What a call is answered with.
    enum Answer: Equatable {
        case values([DBusValue])
        case error(name: String, message: String)
    }

    let service: any PlaybackService
    let commands: any MPRISCommands
    let identity: String
    private let metadataSource: MPRISMetadataSource

    /// ICY facts for the Metadata of radio streams (D-Bus thread).
    func noteRadio(_ news: [String: RadioFacts]) { metadataSource.noteRadio(news) }

    init(service: any PlaybackService, commands: any MPRISCommands, identity: String, metadataSource: MPRISMetadataSource) {
        self.service = service
        self.commands = commands
        self.identity = identity
        self.metadataSource = metadataSource
    }

    // MARK: Reading

    func facts() -> MPRISFacts {
        MPRISFacts(state: service.state, volume: service.volume, repeatMode: service.repeatMode,
                   shuffle: service.shuffle, queueCount: service.queue.count,
                   currentIndex: service.currentIndex, currentTrack: service.currentTrack,
                   serviceDuration: service.duration())
    }

    /// The Player properties as they are now (Position aside).
    func playerProperties() -> MPRISPlayerProperties {
        let facts = facts()
        let metadata = metadataSource.metadata(for: facts.currentTrack, lengthSeconds: MPRISMapping.lengthSeconds(facts))
        return MPRISMapping.properties(facts, metadata: metadata)
    }

    /// The heard position in microseconds.
    func position() -> Int64 { MPRISMapping.microseconds(service.currentTime()) }

    /// Every Player property, in GetAll order.
    func allPlayerProperties() -> [DBusDictEntry] {
        var entries = playerProperties().entries
        entries += [
            DBusDictEntry(key: "Position", value: .int64(position())),
            DBusDictEntry(key: "Rate", value: .double(1)),
            DBusDictEntry(key: "MinimumRate", value: .double(1)),
            DBusDictEntry(key: "MaximumRate", value: .double(1)),
            DBusDictEntry(key: "CanControl", value: .boolean(true)),
        ]
        return entries
    }

    // MARK: Calls

    /// Answers `member` of `interface` called on `path` with `arguments`.
    func call(path: String, interface: String?, member: String, arguments: [DBusValue]) -> Answer {
        guard path == MPRISNames.objectPath else {
            if interface == MPRISNames.introspectable || interface == nil, member == "Introspect",
               let child = Self.childNode(of: path) {
                return .values([.string("<node><node name=\"\(child)\"/></node>")])
            }
            return .error(name: MPRISNames.Error.unknownObject, message: "No object at \(path.prefix(200))")
        }
        switch (interface ?? Self.interface(of: member), member) {
        case (MPRISNames.introspectable, "Introspect"):
            return .values([.string(MPRISIntrospection.xml)])
        case (MPRISNames.properties, "Get"):
            guard arguments.count == 2, let interface = arguments[0].stringValue, let name = arguments[1].stringValue else {
                return Self.badArguments("Get", "ss")
            }
            return get(interface: interface, name: name)
        case (MPRISNames.properties, "GetAll"):
            guard arguments.count == 1, let interface = arguments[0].stringValue else { return Self.badArguments("GetAll", "s") }
            switch interface {
            case MPRISNames.root: return .values([.dictionary(MPRISRoot.properties(identity: identity))])
            case MPRISNames.player: return .values([.dictionary(allPlayerProperties())])
            default: return .values([.dictionary([])])
            }
        case (MPRISNames.properties, "Set"):
            guard arguments.count == 3, let interface = arguments[0].stringValue, let name = arguments[1].stringValue,
                  let value = arguments[2].variantValue else {
                return Self.badArguments("Set", "ssv")
            }
            return set(interface: interface, name: name, value: value)
        case (MPRISNames.root, "Raise"):
            return .values([])
        case (MPRISNames.root, "Quit"):
            // Answered first: the adapter runs `commands.quit()` after the reply is out.
            return .values([])
        case (MPRISNames.player, let method):
            return player(method, arguments)
        default:
            return .error(name: MPRISNames.Error.unknownMethod,
                          message: "No method \(member.prefix(100)) in interface \((interface ?? "(none)").prefix(100))")
        }
    }

    private func player(_ method: String, _ arguments: [DBusValue]) -> Answer {
        let signature = arguments.map(\.signature).joined()
        do throws(CoreError) {
            switch method {
            case "Play", "Pause", "PlayPause", "Stop", "Next", "Previous":
                guard arguments.isEmpty else { return Self.badArguments(method, "") }
                switch method {
                case "Play": try commands.play()
                case "Pause": try commands.pause()
                case "PlayPause": try commands.playPause()
                case "Stop": commands.stop()
                case "Next": try commands.next()
                default: try commands.previous()
                }
            case "Seek":
                guard signature == "x", let offset = arguments[0].int64Value else { return Self.badArguments(method, "x") }
                // No effect when the track cannot seek (specification).
                guard playerProperties().canSeek else { break }
                try commands.seek(by: MPRISMapping.seconds(microseconds: offset))
            case "SetPosition":
                guard signature == "ox", let trackID = arguments[0].objectPathValue, let position = arguments[1].int64Value else {
                    return Self.badArguments(method, "ox")
                }
                // Ignored unless it names the current track and lies inside it (specification).
                let facts = facts()
                guard let track = facts.currentTrack, MPRISMapping.trackID(track) == trackID,
                      MPRISMapping.properties(facts, metadata: .dictionary([])).canSeek,
                      let length = MPRISMapping.lengthSeconds(facts),
                      position >= 0, position <= MPRISMapping.microseconds(length) else { break }
                try commands.seek(to: min(MPRISMapping.seconds(microseconds: position), length))
            case "OpenUri":
                guard signature == "s", let uri = arguments[0].stringValue else { return Self.badArguments(method, "s") }
                return open(uri: uri)
            default:
                return .error(name: MPRISNames.Error.unknownMethod, message: "No method \(method.prefix(100)) in \(MPRISNames.player)")
            }
        } catch {
            return Self.failure(error)
        }
        return .values([])
    }

    private func open(uri: String) -> Answer {
        let url: String
        if uri.hasPrefix("/") {
            url = uri
        } else if let path = MPRISMapping.path(fileURI: uri) {
            url = path
        } else if uri.lowercased().hasPrefix("http://") || uri.lowercased().hasPrefix("https://") {
            url = uri
        } else {
            return .error(name: MPRISNames.Error.notSupported,
                          message: "unsupported: OpenUri takes file, http and https URIs; got '\(uri.prefix(100))'")
        }
        do throws(CoreError) {
            try commands.open(url: url)
        } catch {
            return Self.failure(error)
        }
        return .values([])
    }

    // MARK: Properties

    private func get(interface: String, name: String) -> Answer {
        switch interface {
        case MPRISNames.root:
            guard let value = MPRISRoot.properties(identity: identity).first(where: { $0.key == name })?.value else {
                return Self.unknownProperty(interface, name)
            }
            return .values([.variant(value)])
        case MPRISNames.player:
            // Position alone is read without building the rest.
            if name == "Position" { return .values([.variant(.int64(position()))]) }
            guard let value = allPlayerProperties().first(where: { $0.key == name })?.value else {
                return Self.unknownProperty(interface, name)
            }
            return .values([.variant(value)])
        default:
            return .error(name: MPRISNames.Error.unknownInterface, message: "No interface \(interface.prefix(100))")
        }
    }

    private func set(interface: String, name: String, value: DBusValue) -> Answer {
        guard interface == MPRISNames.player else {
            if interface == MPRISNames.root, MPRISRoot.properties(identity: identity).contains(where: { $0.key == name }) {
                return .error(name: MPRISNames.Error.propertyReadOnly, message: "\(name) is read-only")
            }
            return Self.unknownProperty(interface, name)
        }
        switch name {
        case "Volume":
            guard let level = value.doubleValue else { return Self.wrongType(name, value) }
            guard !level.isNaN else { return .error(name: MPRISNames.Error.invalidArgs, message: "Volume must be a number") }
            // Below 0 is 0 (specification); above 1 is our maximum.
            commands.setVolume(min(max(level, 0), 1))
        case "LoopStatus":
            guard let status = value.stringValue else { return Self.wrongType(name, value) }
            guard let mode = MPRISMapping.repeatMode(loopStatus: status) else {
                return .error(name: MPRISNames.Error.invalidArgs,
                              message: "LoopStatus must be None, Track or Playlist; got '\(status.prefix(40))'")
            }
            commands.setRepeatMode(mode)
        case "Shuffle":
            guard let enabled = value.booleanValue else { return Self.wrongType(name, value) }
            commands.setShuffle(enabled)
        case "Rate":
            // Only 1.0 is supported; 0 means pause (specification); other rates are ignored.
            guard let rate = value.doubleValue else { return Self.wrongType(name, value) }
            if rate == 0 {
                do throws(CoreError) { try commands.pause() } catch { return Self.failure(error) }
            }
        default:
            if allPlayerProperties().contains(where: { $0.key == name }) {
                return .error(name: MPRISNames.Error.propertyReadOnly, message: "\(name) is read-only")
            }
            return Self.unknownProperty(interface, name)
        }
        return .values([])
    }

    // MARK: Helpers

    /// The interface a member belongs to, for calls that name none.
    private static func interface(of member: String) -> String? {
        switch member {
        case "Introspect": MPRISNames.introspectable
        case "Get", "GetAll", "Set": MPRISNames.properties
        case "Raise", "Quit": MPRISNames.root
        default: MPRISNames.player
        }
    }

    /// The next path element towards our object, for introspecting its parents.
    static func childNode(of path: String) -> String? {
        switch path {
        case "/": "org"
        case "/org": "mpris"
        case "/org/mpris": "MediaPlayer2"
        default: nil
        }
    }

    private static func badArguments(_ method: String, _ signature: String) -> Answer {
        .error(name: MPRISNames.Error.invalidArgs, message: "\(method) takes arguments of signature '\(signature)'")
    }

    private static func wrongType(_ name: String, _ value: DBusValue) -> Answer {
        .error(name: MPRISNames.Error.invalidArgs, message: "\(name) given as '\(value.signature)', the wrong type")
    }

    private static func unknownProperty(_ interface: String, _ name: String) -> Answer {
        .error(name: MPRISNames.Error.unknownProperty, message: "No property \(name.prefix(100)) in \(interface.prefix(100))")
    }

    /// A service error as a D-Bus error: `org.freedesktop.DBus.Error.Failed`, "category: message".
    static func failure(_ error: CoreError) -> Answer {
        .error(name: MPRISNames.Error.failed, message: "\(error.category.rawValue): \(error.message)")
    }
}

/// The Metadata map of the current track, with the tags only a tag reader
/// gives (album artist, numbers, genre, composer) and the cover's cache file.
/// Tags are read once per queue entry (local files only: a network read could
/// stall), and the last few entries are remembered.
///
/// Threads: the adapter's D-Bus thread only.
final class MPRISMetadataSource {
    private let tagReader: (any TagReaderPort)?
    private let covers: CoverArtCache?
    private let currentDirectory: String
    private var cache: [(id: UUID, url: String, tags: TagBundle?, artURL: String?)] = []
    /// What radio streams said about themselves (the newest 8 URLs).
    private var radio: [(url: String, facts: RadioFacts)] = []

    /// Merges the latest ICY facts per URL.
    func noteRadio(_ news: [String: RadioFacts]) {
        for (url, facts) in news {
            var merged = radio.first { $0.url == url }?.facts ?? RadioFacts()
            if let title = facts.title { merged.title = title }
            if let station = facts.station { merged.station = station }
            radio.removeAll { $0.url == url }
            radio.append((url, merged))
        }
        if radio.count > 8 { radio.removeFirst(radio.count - 8) }
    }

    init(tagReader: (any TagReaderPort)?, covers: CoverArtCache?, currentDirectory: String = FileManager.default.currentDirectoryPath) {
        self.tagReader = tagReader
        self.covers = covers
        self.currentDirectory = currentDirectory
    }

    func metadata(for track: Track?, lengthSeconds: Double?) -> DBusValue {
        guard var track else {
            return MPRISMapping.metadata(track: nil, tags: nil, lengthSeconds: nil, artURL: nil, currentDirectory: currentDirectory)
        }
        let known: (tags: TagBundle?, artURL: String?)
        if let entry = cache.first(where: { $0.id == track.id && $0.url == track.url }) {
            known = (entry.tags, entry.artURL)
        } else {
            let tags = Self.isLocal(track.url) ? try? tagReader?.read(url: track.url) : nil
            // The embedded cover as a cached file; else a cover URL given with the entry.
            let artURL = (tags?.artworkData ?? track.artwork).flatMap { covers?.uri(for: $0) } ?? track.artworkURL
            known = (tags, artURL)
            cache.append((track.id, track.url, tags, artURL))
            if cache.count > 4 { cache.removeFirst() }
        }
        // A radio's current StreamTitle is the title; its station, the album.
        if let facts = radio.first(where: { $0.url == track.url })?.facts {
            if let title = facts.title { track.title = title }
            if let station = facts.station, track.album == nil { track.album = station }
        }
        return MPRISMapping.metadata(track: track, tags: known.tags, lengthSeconds: lengthSeconds,
                                     artURL: known.artURL, currentDirectory: currentDirectory)
    }

    private static func isLocal(_ url: String) -> Bool {
        !MPRISMapping.hasScheme(url) || url.hasPrefix("file:")
    }
}

/// What an internet radio stream said about itself (ICY).
struct RadioFacts: Sendable, Equatable {
    var title: String?
    var station: String?
}
