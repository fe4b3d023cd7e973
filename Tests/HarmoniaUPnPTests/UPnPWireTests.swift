// The renderer's wire formats alone: the strict XML reader (no DOCTYPE, no
// entities), SOAP envelopes, DIDL-Lite, UPnP times, GENA callbacks and
// bodies, SSDP searches — specs/upnp.md
@testable import HarmoniaUPnP
import Testing

/// The UPnP error code `body` threw (nil: it threw none, or another error).
func faultCode(_ body: () throws -> Any) -> Int? {
    do {
        _ = try body()
        return nil
    } catch {
        return (error as? UPnPError)?.code
    }
}

@Suite struct UPnPXMLTests {
    @Test func readsNamespacesTextAndAttributes() throws {
        let xml = #"<?xml version="1.0"?><a:root xmlns:a="urn:x" xmlns="urn:d"><b k="v &amp; w">x &lt; y<![CDATA[<z>]]>&#65;&#x42;</b><!-- c --><c/></a:root>"#
        let root = try UPnPXML.parse(Array(xml.utf8))
        #expect(root.name == "root" && root.namespace == "urn:x")
        #expect(root.child("b")?.text == "x < y<z>AB")
        #expect(root.child("b")?.attributes["k"] == "v & w")
        #expect(root.child("b")?.namespace == "urn:d")
        #expect(root.child("c") != nil)
    }

    @Test(arguments: [
        #"<!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]><r>&x;</r>"#,
        #"<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;">]><r>&lol2;</r>"#,
        "<r>&unknown;</r>", "<r><!ENTITY x 'y'></r>", "<r>", "<r></s>", "<r a='1' a='2'/>", "<r/><r/>", "", "&amp;",
        String(repeating: "<a>", count: 100) + String(repeating: "</a>", count: 100),
    ])
    func refuses(_ text: String) {
        #expect(throws: XMLRefusal.self) { try UPnPXML.parse(Array(text.utf8)) }
    }

    /// Seeded mutations (bytes replaced, inserted, removed; markup
    /// characters favoured) of an envelope carrying DIDL-Lite: every one is
    /// read or refused, never a trap — the renderer's whole input path.
    @Test func neverTrapsOnMutations() {
        let didl = UPnPXML.escape(#"<DIDL-Lite xmlns:dc="http://purl.org/dc/elements/1.1/"><item><dc:title>T &amp; U</dc:title><res protocolInfo="http-get:*:audio/flac:*">http://h/a</res></item></DIDL-Lite>"#)
        let avt = UPnPServiceSpec.avTransport.serviceType
        let seed = Array(#"<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body><u:SetAVTransportURI xmlns:u="\#(avt)"><InstanceID>0</InstanceID><CurrentURI>http://h/a.flac</CurrentURI><CurrentURIMetaData>\#(didl)</CurrentURIMetaData></u:SetAVTransportURI></s:Body></s:Envelope>"#.utf8)
        let alphabet = Array("<>&;/!?=\"'#x:[]-DOCTYPE ENTITY".utf8) + [0, 0xFF, 0xC3]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        func next(_ bound: Int) -> Int {  // SplitMix64
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return Int((z ^ (z >> 31)) % UInt64(bound))
        }
        var read = 0
        for _ in 0..<3000 {
            var bytes = seed
            for _ in 0...next(4) {
                let at = next(bytes.count)
                let byte = next(2) == 0 ? alphabet[next(alphabet.count)] : UInt8(next(256))
                switch next(3) {
                case 0: bytes[at] = byte
                case 1: bytes.insert(byte, at: at)
                default: bytes.remove(at: at)
                }
            }
            guard let request = try? UPnPSOAP.parse(body: bytes, soapAction: "\"\(avt)#SetAVTransportURI\"", serviceType: avt) else { continue }
            read += 1
            _ = try? UPnPRenderer.track(uri: request.arguments["CurrentURI"], metadata: request.arguments["CurrentURIMetaData"])
        }
        #expect(read > 100, "the mutations also reach the DIDL-Lite reader (\(read) envelopes read)")
    }

    @Test func neverTrapsOnTruncations() {
        let xml = Array(#"<s:Envelope xmlns:s="u"><s:Body><u:Play xmlns:u="t"><InstanceID>0&#x41;</InstanceID></u:Play></s:Body></s:Envelope>"#.utf8)
        for cut in 0...xml.count { _ = try? UPnPXML.parse(Array(xml[..<cut])) }
    }
}

@Suite struct UPnPSOAPTests {
    let avt = UPnPServiceSpec.avTransport.serviceType

    func envelope(_ action: String, _ args: String = "<InstanceID>0</InstanceID>") -> [UInt8] {
        Array(#"<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" s:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body><u:\#(action) xmlns:u="\#(avt)">\#(args)</u:\#(action)></s:Body></s:Envelope>"#.utf8)
    }

    @Test func readsTheActionAndArguments() throws {
        let request = try UPnPSOAP.parse(body: envelope("Seek", "<InstanceID>0</InstanceID><Unit>REL_TIME</Unit><Target>0:0:30</Target>"),
                                         soapAction: "\"\(avt)#Seek\"", serviceType: avt)
        #expect(request.action == "Seek")
        #expect(request.arguments == ["InstanceID": "0", "Unit": "REL_TIME", "Target": "0:0:30"])
    }

    @Test func aHeaderThatDisagreesIsAnError() {
        #expect(faultCode { try UPnPSOAP.parse(body: envelope("Play"), soapAction: "\"\(avt)#Stop\"", serviceType: avt) } == 401)
        #expect(faultCode { try UPnPSOAP.parse(body: envelope("Play"), soapAction: nil, serviceType: avt) } == 401)
        #expect(faultCode { try UPnPSOAP.parse(body: envelope("Play"), soapAction: "\"\(avt)#Play\"", serviceType: UPnPServiceSpec.renderingControl.serviceType) } == 401)
    }

    @Test func aDoctypeIsAFault() {
        let body = Array((#"<?xml version="1.0"?><!DOCTYPE s [<!ENTITY x SYSTEM "file:///etc/passwd">]>"# + String(decoding: envelope("Play"), as: UTF8.self).dropFirst(21)).utf8)
        #expect(faultCode { try UPnPSOAP.parse(body: body, soapAction: "\"\(avt)#Play\"", serviceType: avt) } == 402)
        let fault = UPnPSOAP.fault(.invalidArgs("x <y>"))
        #expect(fault.contains("<errorCode>402</errorCode>") && fault.contains("x &lt;y&gt;"))
    }
}

@Suite struct UPnPValuesTests {
    @Test func times() {
        #expect(UPnPTime.parse("0:0:30") == 30)
        #expect(UPnPTime.parse("00:01:30.500") == 90.5)
        #expect(UPnPTime.parse("1:00:00") == 3600)
        for bad in ["", "30", "0:60:00", "0:00:60", "-1:00:00", "a:b:c", "99999999999999:00:00", "0:0:1e3", "0:0:nan"] {
            #expect(UPnPTime.parse(bad) == nil, "\(bad)")
        }
        #expect(UPnPTime.format(3723.4) == "1:02:03")
        #expect(UPnPTime.format(3723.5) == "1:02:04")
        #expect(UPnPTime.format(.nan) == "0:00:00")
        #expect(UPnPTime.format(.infinity) == "0:00:00")
    }

    @Test func didlAsHomeAssistantWritesIt() throws {
        let didl = #"<DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/"><item id="0" parentID="-1" restricted="false"><dc:title>Sine &amp; Co</dc:title><upnp:artist>A</upnp:artist><upnp:album>B</upnp:album><upnp:albumArtURI>http://h/c.jpg</upnp:albumArtURI><upnp:class>object.item.audioItem.musicTrack</upnp:class><res protocolInfo="http-get:*:audio/flac:*">http://h/a.flac</res></item></DIDL-Lite>"#
        let item = try DIDLLite.read(didl)
        #expect(item == DIDLItem(title: "Sine & Co", artists: ["A"], album: "B", albumArtURI: "http://h/c.jpg", mimeType: "audio/flac"))
        #expect(faultCode { try DIDLLite.read("<!DOCTYPE x><DIDL-Lite/>") } == 402)
    }

    @Test("upnp:genre and upnp:artist role=AlbumArtist become the entry's genres and album artists, and our own DIDL-Lite carries them")
    func didlGenresAndAlbumArtists() throws {
        let didl = #"<DIDL-Lite xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/" xmlns:dc="http://purl.org/dc/elements/1.1/"><item>"#
            + #"<dc:title>T</dc:title><upnp:artist role="AlbumArtist">Various</upnp:artist><upnp:artist>A</upnp:artist>"#
            + #"<dc:creator>B</dc:creator><upnp:genre>Jazz</upnp:genre><upnp:genre> </upnp:genre><upnp:genre>Blues</upnp:genre></item></DIDL-Lite>"#
        let (track, _) = try UPnPRenderer.track(uri: "http://h/a.flac", metadata: didl)
        #expect(track.artists == ["A", "B"] && track.albumArtists == ["Various"] && track.genres == ["Jazz", "Blues"])
        let again = try DIDLLite.read(DIDLLite.make(for: track))
        #expect(again.artists == ["A", "B"] && again.albumArtists == ["Various"] && again.genres == ["Jazz", "Blues"])
    }

    @Test("albumArtURI: an http(s) cover becomes the entry's artworkURL and is in our own DIDL-Lite; other schemes are dropped")
    func albumArt() throws {
        func didl(_ art: String) -> String {
            #"<DIDL-Lite><item><dc:title>T</dc:title><upnp:albumArtURI>"# + art + #"</upnp:albumArtURI></item></DIDL-Lite>"#
        }
        let (track, _) = try UPnPRenderer.track(uri: "http://h/a.flac", metadata: didl("https://h/cover.jpg?size=500&amp;q=1"))
        #expect(track.artworkURL == "https://h/cover.jpg?size=500&q=1")
        for bad in ["file:///etc/passwd", "javascript:alert(1)", "data:image/png;base64,AAAA", "/c.jpg", "http://h/a b.jpg", "http://"] {
            #expect(try UPnPRenderer.track(uri: "http://h/a.flac", metadata: didl(bad)).0.artworkURL == nil, "\(bad)")
        }
        let made = DIDLLite.make(title: "T", artists: [], album: nil, url: "http://h/a.flac", artworkURL: "http://h/c.jpg?a=1&b=2")
        #expect(made.contains("<upnp:albumArtURI>http://h/c.jpg?a=1&amp;b=2</upnp:albumArtURI>"))
        #expect(try DIDLLite.read(made).albumArtURI == "http://h/c.jpg?a=1&b=2")
        #expect(!DIDLLite.make(title: "T", artists: [], album: nil, url: "http://h/a.flac").contains("albumArtURI"))
        // Whole or not at all: a long cover URL is kept as it is, one past 2 KiB is dropped, never cut.
        let long = "http://h/" + String(repeating: "c", count: 1500)
        #expect(try UPnPRenderer.track(uri: "http://h/a.flac", metadata: didl(long)).0.artworkURL == long)
        #expect(try UPnPRenderer.track(uri: "http://h/a.flac", metadata: didl(long + long)).0.artworkURL == nil)
    }

    @Test func onlyHTTPURIsArePlayed() throws {
        for bad in ["file:///etc/passwd", "/etc/passwd", "ftp://h/a.mp3", "http://", "smb://h/a", "http://h/a b"] {
            #expect(faultCode { try UPnPRenderer.track(uri: bad, metadata: nil) } == 716)
        }
        #expect(faultCode { try UPnPRenderer.track(uri: "http://h/v.mp4", metadata: #"<DIDL-Lite><item><res protocolInfo="http-get:*:video/mp4:*">x</res></item></DIDL-Lite>"#) } == 714)
        #expect(try UPnPRenderer.track(uri: "https://h/a.flac", metadata: "").0.url == "https://h/a.flac")
    }

    @Test func callbacks() {
        let callback = GENACallback(header: "<http://127.0.0.1:8123/notify>")
        #expect(callback?.host == "127.0.0.1" && callback?.port == 8123 && callback?.path == "/notify")
        #expect(GENACallback(header: "<http://[::1]:80>")?.host == "::1")
        #expect(GENACallback(header: "<http://h>")?.port == 80)
        for bad in ["", "http://h/", "<https://h/>", "<http://h:0/>", "<http://h:99999/>", "<http://:80/>", "<http://h/a b>"] {
            #expect(GENACallback(header: bad) == nil, "\(bad)")
        }
        #expect(GENASubscriptions.timeout("Second-30") == 60)
        #expect(GENASubscriptions.timeout("Second-infinite") == 1800)
        #expect(GENASubscriptions.timeout("Second-99999999999999999999") == 1800)
    }

    @Test func lastChangeIsEscapedEventXML() throws {
        let body = GENABody.make(service: "RenderingControl", variables: [("Volume", "40"), ("Mute", "0")])
        let set = try UPnPXML.parse(Array(body.utf8))
        let lastChange = try #require(set.descendant("LastChange"))
        let event = try UPnPXML.parse(Array(lastChange.text.utf8))
        #expect(event.namespace == "urn:schemas-upnp-org:metadata-1-0/RCS/")
        #expect(event.child("InstanceID")?.child("Volume")?.attributes == ["channel": "Master", "val": "40"])
    }

    @Test func hostsByAddressOnly() {
        for ok in ["127.0.0.1:49594", "192.168.1.5", "[::1]:80", "localhost:1", "LOCALHOST"] { #expect(UPnPHTTPHandler.isAddressLiteral(ok), "\(ok)") }
        for bad in ["evil.example", "evil.example:49594", "127.0.0.1.nip.io:80", "[evil]:80", "", "1.2.3.4.5"] {
            #expect(!UPnPHTTPHandler.isAddressLiteral(bad), "\(bad)")
        }
    }

    @Test func searches() {
        let search = SSDPSearch("M-SEARCH * HTTP/1.1\r\nHOST: 239.255.255.250:1900\r\nMAN: \"ssdp:discover\"\r\nMX: 9\r\nST: ssdp:all\r\n\r\n")
        #expect(search?.target == "ssdp:all" && search?.mx == 5)
        #expect(SSDPSearch("M-SEARCH * HTTP/1.1\r\nST: ssdp:all\r\n\r\n") == nil)
        #expect(SSDPSearch("NOTIFY * HTTP/1.1\r\n\r\n") == nil)
    }

    @Test func descriptionsAreReadableXML() throws {
        let device = try UPnPXML.parse(Array(UPnPDescription.device(friendlyName: "A <&> B", uuid: "u").utf8))
        #expect(device.descendant("friendlyName")?.text == "A <&> B")
        for service in UPnPServiceSpec.all {
            let scpd = try UPnPXML.parse(Array(UPnPDescription.scpd(service).utf8))
            let names = Set(scpd.descendant("serviceStateTable")?.children.compactMap { $0.child("name")?.text } ?? [])
            for action in service.actions {
                for (_, variable) in action.inputs + action.outputs { #expect(names.contains(variable), "\(service.name).\(action.name): \(variable)") }
            }
        }
    }
}
