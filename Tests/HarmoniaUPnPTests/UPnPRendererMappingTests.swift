// The renderer's actions on a real playback service (stopped: nothing is
// opened), as specs/upnp.md §Mapping to the application layer says
@testable import HarmoniaUPnP
import HarmoniaControl
import HarmoniaCore
import HarmoniaTestSupport
import Testing

@Suite("UPnP renderer mapping")
struct UPnPRendererMappingTests {
    let avt = UPnPServiceSpec.avTransport.serviceType
    let rcs = UPnPServiceSpec.renderingControl.serviceType

    private func renderer() -> UPnPRenderer {
        let service = DefaultPlaybackService(decoder: CounterDecoder([:]), output: NullAudioOutput(pace: .manual), clock: ManualClock())
        return UPnPRenderer(actions: PlayerActions(service: service))
    }

    private func call(_ renderer: UPnPRenderer, _ service: String, _ action: String, _ arguments: [String: String]) throws(UPnPError) -> [String: String] {
        var all = arguments
        if service != UPnPServiceSpec.connectionManager.serviceType, all["InstanceID"] == nil { all["InstanceID"] = "0" }
        return Dictionary(try renderer.perform(SOAPRequest(serviceType: service, action: action, arguments: all)), uniquingKeysWith: { a, _ in a })
    }

    private func variables(_ renderer: UPnPRenderer) -> [String: String] {
        Dictionary(renderer.avTransportVariables() + renderer.renderingVariables(), uniquingKeysWith: { a, _ in a })
    }

    @Test("SetAVTransportURI replaces the queue with one entry titled from the DIDL-Lite; STOPPED until Play")
    func setURIReplacesTheQueue() throws {
        let renderer = renderer()
        defer { renderer.service.shutdown() }
        renderer.service.enqueue([Track(url: "/music/a.flac"), Track(url: "/music/b.flac")])
        let didl = #"<DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/"><item><dc:title>T</dc:title><upnp:artist>A</upnp:artist><upnp:album>B</upnp:album></item></DIDL-Lite>"#
        _ = try call(renderer, avt, "SetAVTransportURI", ["CurrentURI": "http://h/x.flac", "CurrentURIMetaData": didl])
        let queue = renderer.service.queue
        #expect(queue.count == 1 && queue.first?.url == "http://h/x.flac")
        #expect(queue.first?.title == "T" && queue.first?.artists == ["A"] && queue.first?.album == "B")
        let state = variables(renderer)
        #expect(state["TransportState"] == "STOPPED")
        #expect(state["AVTransportURI"] == "http://h/x.flac" && state["CurrentTrackURI"] == "http://h/x.flac")
        #expect(state["CurrentTrackMetaData"] == didl && state["AVTransportURIMetaData"] == didl)
        #expect(state["CurrentTransportActions"] == "Play,Seek,Previous")
        let position = try call(renderer, avt, "GetPositionInfo", [:])
        #expect(position["Track"] == "1" && position["TrackURI"] == "http://h/x.flac" && position["RelTime"] == "0:00:00")
    }

    @Test("SetNextAVTransportURI: the entries after the current become the one given; one another frontend removes is forgotten")
    func nextURI() throws {
        let renderer = renderer()
        defer { renderer.service.shutdown() }
        _ = try call(renderer, avt, "SetAVTransportURI", ["CurrentURI": "http://h/1.flac", "CurrentURIMetaData": ""])
        _ = try call(renderer, avt, "SetNextAVTransportURI", ["NextURI": "http://h/2.flac", "NextURIMetaData": ""])
        _ = try call(renderer, avt, "SetNextAVTransportURI", ["NextURI": "http://h/3.flac", "NextURIMetaData": ""])
        #expect(renderer.service.queue.map(\.url) == ["http://h/1.flac", "http://h/3.flac"])
        #expect(variables(renderer)["NextAVTransportURI"] == "http://h/3.flac")
        let media = try call(renderer, avt, "GetMediaInfo", [:])
        #expect(media["CurrentURI"] == "http://h/1.flac" && media["NextURI"] == "http://h/3.flac" && media["PlayMedium"] == "NETWORK")
        try renderer.service.remove(at: 1)  // MPD's `delete 1`
        renderer.prune()
        #expect(variables(renderer)["NextAVTransportURI"] == "")
        #expect(renderer.metadata.count == 1)
    }

    @Test("an empty renderer: NO_MEDIA_PRESENT, no actions, 701 for Play")
    func empty() throws {
        let renderer = renderer()
        defer { renderer.service.shutdown() }
        #expect(variables(renderer)["TransportState"] == "NO_MEDIA_PRESENT")
        #expect(variables(renderer)["CurrentTransportActions"] == "")
        #expect(try call(renderer, avt, "GetMediaInfo", [:])["PlayMedium"] == "NONE")
        #expect(faultCode { try call(renderer, avt, "Play", ["Speed": "1"]) } == 701)
        #expect(faultCode { try call(renderer, avt, "Play", ["InstanceID": "1", "Speed": "1"]) } == 718)
        #expect(faultCode { try call(renderer, avt, "Seek", ["Unit": "TRACK_NR", "Target": "1"]) } == 711)
    }

    @Test("volume and mute through PlayerActions: the level stays while muted")
    func volumeAndMute() throws {
        let renderer = renderer()
        defer { renderer.service.shutdown() }
        _ = try call(renderer, rcs, "SetVolume", ["Channel": "Master", "DesiredVolume": "30"])
        _ = try call(renderer, rcs, "SetMute", ["Channel": "Master", "DesiredMute": "true"])
        #expect(try call(renderer, rcs, "GetMute", ["Channel": "Master"])["CurrentMute"] == "1")
        #expect(try call(renderer, rcs, "GetVolume", ["Channel": "Master"])["CurrentVolume"] == "30")
        #expect(renderer.service.volume == 0)
        #expect(variables(renderer)["Volume"] == "30" && variables(renderer)["Mute"] == "1")
        _ = try call(renderer, rcs, "SetMute", ["Channel": "Master", "DesiredMute": "0"])
        #expect(abs(renderer.service.volume - 0.3) < 0.001)
        #expect(faultCode { try call(renderer, rcs, "SetMute", ["Channel": "Master", "DesiredMute": "maybe"]) } == 402)
    }

    @Test("play modes map to repeat and shuffle")
    func playModes() throws {
        let renderer = renderer()
        defer { renderer.service.shutdown() }
        _ = try call(renderer, avt, "SetPlayMode", ["NewPlayMode": "REPEAT_ALL"])
        #expect(renderer.service.repeatMode == .all)
        #expect(try call(renderer, avt, "GetTransportSettings", [:])["PlayMode"] == "REPEAT_ALL")
        _ = try call(renderer, avt, "SetPlayMode", ["NewPlayMode": "SHUFFLE"])
        #expect(variables(renderer)["CurrentPlayMode"] == "SHUFFLE")
        _ = try call(renderer, avt, "SetPlayMode", ["NewPlayMode": "NORMAL"])
        #expect(renderer.service.repeatMode == .off && !renderer.service.shuffle)
    }

    @Test("ConnectionManager: protocol info for every MIME type, connection 0 only")
    func connectionManager() throws {
        let renderer = renderer()
        defer { renderer.service.shutdown() }
        let cm = UPnPServiceSpec.connectionManager.serviceType
        let sink = try call(renderer, cm, "GetProtocolInfo", [:])["Sink"] ?? ""
        for mime in UPnPRenderer.mimeTypes { #expect(sink.contains("http-get:*:\(mime):*")) }
        #expect(try call(renderer, cm, "GetCurrentConnectionInfo", ["ConnectionID": "0"])["Status"] == "OK")
        #expect(faultCode { try call(renderer, cm, "GetCurrentConnectionInfo", ["ConnectionID": "1"]) } == 706)
    }
}
