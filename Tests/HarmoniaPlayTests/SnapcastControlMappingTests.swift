// The Snapcast control bridge's pure half: Properties from a status,
// plugin requests to control-protocol commands, malformed JSON-RPC
// (specs/snapcast-control.md §Mapping).
import HarmoniaControl
import Testing
@testable import HarmoniaSnapcastControl

@Suite("snapcast-control mapping")
struct SnapcastControlMappingTests {
    static func json(_ text: String) -> JSONValue { try! JSONValue.parse(Array(text.utf8)) }

    static var playing: JSONValue { json("""
        {"state":"playing","position":12.3456,"duration":200.0,"volume":57.5,"muted":false,"index":1,
         "track":{"id":"E1","url":"/music/b.flac","title":"Song","artist":"Artist","album":"Album","duration":200.0},
         "count":3,"repeat":"off","shuffle":false}
        """) }

    @Test("a playing status: every property, metadata in Snapcast's types")
    func propertiesFromStatus() throws {
        let snapshot = try #require(PlayerSnapshot(status: Self.playing))
        let p = SnapcastProperties.properties(snapshot, albumArtists: ["Band"])
        #expect(p.serialized == """
            {"playbackStatus":"playing","loopStatus":"none","shuffle":false,"volume":58,"position":12.346,\
            "canGoNext":true,"canGoPrevious":true,"canPlay":true,"canPause":true,"canSeek":true,"canControl":true,\
            "metadata":{"trackId":"E1","title":"Song","artist":["Artist"],"album":"Album","albumArtist":["Band"],"duration":200.0}}
            """)
    }

    @Test("a duet: the player's artists array becomes Snapcast's artist list; album artists as read")
    func artistLists() throws {
        let status = Self.json("""
            {"state":"playing","position":1,"duration":2,"volume":50,"muted":false,"index":0,"count":1,"repeat":"off","shuffle":false,
             "track":{"id":"E2","url":"/m/d.flac","title":"Together","artist":"Björk; Ólafur Arnalds",
                      "artists":["Björk","Ólafur Arnalds"],"album":"Duets","duration":2}}
            """)
        let snapshot = try #require(PlayerSnapshot(status: status))
        let metadata = SnapcastProperties.properties(snapshot, albumArtists: ["Björk", "Ólafur Arnalds"])["metadata"]
        #expect(metadata?["artist"] == .array([.string("Björk"), .string("Ólafur Arnalds")]))
        #expect(metadata?["albumArtist"] == .array([.string("Björk"), .string("Ólafur Arnalds")]))
        // An older player without `artists`: its one artist string.
        #expect(PlayerSnapshot(status: Self.playing)?.artists == ["Artist"])
    }

    @Test("a cover given by URL (the player's artworkUrl) is Snapcast's artUrl; an embedded cover's artData wins")
    func coverURL() throws {
        let status = Self.json("""
            {"state":"playing","position":1,"duration":2,"volume":50,"muted":false,"index":0,"count":1,"repeat":"off","shuffle":false,
             "track":{"id":"E3","url":"http://h/a.flac","title":"Cast","artworkUrl":"http://h/c.jpg","duration":2}}
            """)
        let snapshot = try #require(PlayerSnapshot(status: status))
        #expect(SnapcastProperties.properties(snapshot, albumArtists: [])["metadata"]?["artUrl"] == .string("http://h/c.jpg"))
        let cover = try #require(SnapcastCover(result: Self.json(#"{"mime":"image/png","extension":"png","bytes":4,"data":"iVBORw=="}"#)))
        let withCover = SnapcastProperties.properties(snapshot, albumArtists: [], cover: cover)["metadata"]
        #expect(withCover?["artUrl"] == nil && withCover?["artData"] != nil)
        let plain = try #require(PlayerSnapshot(status: Self.playing))
        #expect(SnapcastProperties.properties(plain, albumArtists: [])["metadata"]?["artUrl"] == nil)
    }

    @Test("every property is always present (snapserver replaces the whole set)")
    func complete() throws {
        let keys = ["playbackStatus", "loopStatus", "shuffle", "volume", "position", "canGoNext", "canGoPrevious",
                    "canPlay", "canPause", "canSeek", "canControl", "metadata"]
        let statuses = [Self.playing, Self.json(#"{"state":"stopped","count":0,"track":null,"index":null}"#), Self.json("{}")]
        for status in statuses {
            let p = SnapcastProperties.properties(PlayerSnapshot(status: status))
            for key in keys { #expect(p[key] != nil, "\(key) missing for \(status.brief)") }
        }
        let disconnected = SnapcastProperties.properties(nil)
        for key in keys { #expect(disconnected[key] != nil) }
        #expect(disconnected["canControl"] == .bool(false))
        #expect(disconnected["canPlay"] == .bool(false))
        #expect(disconnected["metadata"] == .object([]))
    }

    @Test("states, loop modes, the edges of the queue, mute, unknown tags")
    func states() throws {
        func props(_ edit: (inout String) -> Void) -> JSONValue {
            var text = Self.playing.serialized
            edit(&text)
            return SnapcastProperties.properties(PlayerSnapshot(status: Self.json(text)))
        }
        #expect(props { $0 = $0.replacingOccurrences(of: "\"playing\"", with: "\"buffering\"") }["playbackStatus"] == .string("playing"))
        #expect(props { $0 = $0.replacingOccurrences(of: "\"playing\"", with: "\"paused\"") }["playbackStatus"] == .string("paused"))
        let stopped = props { $0 = $0.replacingOccurrences(of: "\"playing\"", with: "\"stopped\"") }
        #expect(stopped["playbackStatus"] == .string("stopped"))
        #expect(stopped["canSeek"] == .bool(false))
        #expect(stopped["position"] == .double(0))
        #expect(props { $0 = $0.replacingOccurrences(of: "\"playing\"", with: "\"error\"") }["playbackStatus"] == .string("stopped"))
        #expect(props { $0 = $0.replacingOccurrences(of: "\"repeat\":\"off\"", with: "\"repeat\":\"one\"") }["loopStatus"] == .string("track"))
        #expect(props { $0 = $0.replacingOccurrences(of: "\"repeat\":\"off\"", with: "\"repeat\":\"all\"") }["loopStatus"] == .string("playlist"))
        // The last entry: no next, unless repeat-all or shuffle.
        let last = props { $0 = $0.replacingOccurrences(of: "\"index\":1", with: "\"index\":2") }
        #expect(last["canGoNext"] == .bool(false))
        #expect(last["canGoPrevious"] == .bool(true))
        let lastAll = props { $0 = $0.replacingOccurrences(of: "\"index\":1", with: "\"index\":2").replacingOccurrences(of: "\"repeat\":\"off\"", with: "\"repeat\":\"all\"") }
        #expect(lastAll["canGoNext"] == .bool(true))
        let first = props { $0 = $0.replacingOccurrences(of: "\"index\":1", with: "\"index\":0") }
        #expect(first["canGoPrevious"] == .bool(false))
        #expect(props { $0 = $0.replacingOccurrences(of: "\"muted\":false", with: "\"muted\":true") }["volume"] == .int(0))
        // No tags: the file's name as the title, no artist or album.
        let bare = SnapcastProperties.properties(PlayerSnapshot(status: Self.json(
            #"{"state":"playing","index":0,"count":1,"track":{"id":"E1","url":"/music/b.flac","duration":200.0}}"#)))
        #expect(bare["metadata"]?.serialized == #"{"trackId":"E1","title":"b.flac","duration":200.0}"#)
        // A radio's heard "Artist - Song".
        let radio = props { $0 = $0.replacingOccurrences(of: "\"shuffle\":false", with: "\"shuffle\":false,\"stream_title\":\"Band - Tune\"") }
        #expect(radio["metadata"]?["title"] == .string("Tune"))
        #expect(radio["metadata"]?["artist"] == .array([.string("Band")]))
        // Out-of-range and non-finite numbers never trap.
        let odd = props { $0 = $0.replacingOccurrences(of: "57.5", with: "1e300").replacingOccurrences(of: "\"index\":1", with: "\"index\":-4") }
        #expect(odd["volume"] == .int(100))
        #expect(odd["canGoNext"] == .bool(false))
    }

    @Test("Control commands as snapserver 0.26 sends them → control-protocol commands")
    func controls() {
        func action(_ params: String) -> Result<SnapcastAction, JSONRPCError> {
            SnapcastPlugin.action(method: SnapcastPlugin.control, params: Self.json(params))
        }
        let empty = JSONValue.object([])
        #expect(action(#"{"command":"play"}"#) == .success(.player(command: "play", args: empty)))
        #expect(action(#"{"command":"pause"}"#) == .success(.player(command: "pause", args: empty)))
        #expect(action(#"{"command":"playPause"}"#) == .success(.player(command: "toggle", args: empty)))
        #expect(action(#"{"command":"stop"}"#) == .success(.player(command: "stop", args: empty)))
        #expect(action(#"{"command":"next"}"#) == .success(.player(command: "next", args: empty)))
        #expect(action(#"{"command":"previous"}"#) == .success(.player(command: "previous", args: empty)))
        #expect(action(#"{"command":"seek","params":{"offset":-10.0}}"#) == .success(.player(command: "seek", args: .object([("by", .double(-10))]))))
        #expect(action(#"{"command":"setPosition","params":{"position":30.5}}"#) == .success(.player(command: "seek", args: .object([("position", .double(30.5))]))))
        // Snapcast before 0.26 capitalised.
        #expect(action(#"{"command":"SetPosition","params":{"Position":3}}"#) == .success(.player(command: "seek", args: .object([("position", .double(3))]))))
        for bad in [#"{}"#, #"{"command":7}"#, #"{"command":"fly"}"#, #"{"command":"seek"}"#, #"{"command":"seek","params":{"offset":"x"}}"#,
                    #"{"command":"setPosition","params":{"position":-1}}"#, #"{"command":"seek","params":[]}"#] {
            guard case .failure(let error) = action(bad) else { Issue.record("\(bad) accepted"); continue }
            #expect(error.code == -32602, "\(bad)")
        }
    }

    @Test("SetProperty: loopStatus, shuffle, volume, mute, rate")
    func setProperty() {
        func action(_ params: String) -> Result<SnapcastAction, JSONRPCError> {
            SnapcastPlugin.action(method: SnapcastPlugin.setProperty, params: Self.json(params))
        }
        #expect(action(#"{"loopStatus":"none"}"#) == .success(.player(command: "repeat", args: .object([("mode", .string("off"))]))))
        #expect(action(#"{"loopStatus":"track"}"#) == .success(.player(command: "repeat", args: .object([("mode", .string("one"))]))))
        #expect(action(#"{"loopStatus":"playlist"}"#) == .success(.player(command: "repeat", args: .object([("mode", .string("all"))]))))
        #expect(action(#"{"shuffle":true}"#) == .success(.player(command: "shuffle", args: .object([("enabled", .bool(true))]))))
        #expect(action(#"{"volume":42}"#) == .success(.player(command: "volume", args: .object([("level", .double(42))]))))
        #expect(action(#"{"mute":true}"#) == .success(.player(command: "mute", args: .object([("enabled", .bool(true))]))))
        #expect(action(#"{"rate":1.0}"#) == .success(.nothing))
        for bad in [#"{"loopStatus":"forever"}"#, #"{"shuffle":"yes"}"#, #"{"volume":101}"#, #"{"volume":-1}"#, #"{"volume":"x"}"#,
                    #"{"rate":2}"#, #"{"colour":"red"}"#, #"{}"#, #"{"volume":1,"shuffle":true}"#] {
            guard case .failure(let error) = action(bad) else { Issue.record("\(bad) accepted"); continue }
            #expect(error.code == -32602, "\(bad)")
        }
        #expect(SnapcastPlugin.action(method: SnapcastPlugin.getProperties, params: .null) == .success(.getProperties))
        guard case .failure(let error) = SnapcastPlugin.action(method: "Plugin.Stream.Player.Fly", params: .null) else { return }
        #expect(error.code == -32601)
    }

    @Test("malformed JSON-RPC: each line read as an error to answer, never a trap")
    func malformed() {
        func parse(_ text: String) -> SnapcastIncoming { SnapcastPlugin.parse(Array(text.utf8)) }
        #expect(parse(#"{"id":3,"jsonrpc":"2.0","method":"Plugin.Stream.Player.GetProperties"}"#)
                == .request(id: .int(3), method: "Plugin.Stream.Player.GetProperties", params: .null))
        #expect(parse(#"{"id":"a","method":"m","params":{"x":1}}"#) == .request(id: .string("a"), method: "m", params: .object([("x", .int(1))])))
        #expect(parse(#"{"jsonrpc":"2.0","method":"Something"}"#) == .notification(method: "Something"))
        #expect(parse(#"{"id":4,"jsonrpc":"2.0","result":"ok"}"#) == .response(id: .int(4)))
        func code(_ incoming: SnapcastIncoming) -> Int? { if case .invalid(_, let e) = incoming { e.code } else { nil } }
        #expect(code(parse("not json")) == -32700)
        #expect(code(parse("{\"id\":1,\"method\":\"m\"")) == -32700)
        #expect(code(SnapcastPlugin.parse([0x7B, 0xFF, 0xFE, 0x7D])) == -32700)
        #expect(code(parse("[1,2]")) == -32600)
        #expect(code(parse(#"{"id":{},"method":"m"}"#)) == -32600)
        #expect(code(parse(#"{"id":1,"method":7}"#)) == -32600)
        #expect(code(parse(#"{"id":1}"#)) == -32600)
        #expect(code(parse(#"{"id":1,"method":"m","params":"x"}"#)) == -32600)
        #expect(code(parse(String(repeating: "[", count: 100_000))) == -32600)
        #expect(code(parse("\"" + String(repeating: "x", count: 70_000) + "\"")) == -32600)
        #expect(code(parse(#"{"id":1e999,"method":"m"}"#)) != nil)
        if case .invalid(let id, _) = parse(#"{"id":9,"method":"m","params":"x"}"#) { #expect(id == .int(9)) }
        // The answers.
        #expect(SnapcastPlugin.result(id: .int(2), .string("ok")).serialized == #"{"id":2,"jsonrpc":"2.0","result":"ok"}"#)
        #expect(SnapcastPlugin.error(id: .null, .methodNotFound("x")).serialized
                == #"{"id":null,"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found","data":"unknown method 'x'"}}"#)
        #expect(SnapcastPlugin.ready.serialized == #"{"jsonrpc":"2.0","method":"Plugin.Stream.Ready"}"#)
    }

    @Test("a player's failure becomes a JSON-RPC error with its words")
    func playerErrors() {
        let e = SnapcastPlugin.error(fromPlayerReply: Self.json(#"{"message_id":1,"error_code":"invalidState","error":"nothing loaded"}"#))
        #expect(e == .internalError("invalidState: nothing loaded"))
        let a = SnapcastPlugin.error(fromPlayerReply: Self.json(#"{"message_id":1,"error_code":"invalidArgument","error":"outside"}"#))
        #expect(a.code == -32602)
    }

    @Test("bounded lines: a long line dropped as it comes, the next read as usual")
    func lineReader() {
        var reader = BoundedLineReader(limit: 8)
        var items: [BoundedLineReader.Item] = []
        let input = Array("abc\r\n\n0123456789012\nxy".utf8)
        input.withUnsafeBytes { raw in
            // Fed in small pieces, as reads come.
            var i = 0
            while i < raw.count {
                let end = min(i + 3, raw.count)
                reader.feed(UnsafeRawBufferPointer(rebasing: raw[i..<end])) { items.append($0) }
                i = end
            }
        }
        Array("z\n".utf8).withUnsafeBytes { reader.feed($0) { items.append($0) } }
        #expect(items == [.line(Array("abc".utf8)), .tooLong, .line(Array("xyz".utf8))])
    }
}
