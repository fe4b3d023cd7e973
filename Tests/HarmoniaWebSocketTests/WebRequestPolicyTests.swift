// The web remote's Host/Origin rule (cross-site WebSocket hijacking, DNS
// rebinding) and the bearer header — specs/control-protocol.md §WebSocket
import HarmoniaWebSocket
import Testing

@Suite struct WebRequestPolicyTests {
    let loopback = WebRequestPolicy(listenHost: "127.0.0.1")
    let everywhere = WebRequestPolicy(listenHost: "0.0.0.0", allowedHosts: ["Music.Local"])
    let lan = WebRequestPolicy(listenHost: "192.168.1.5")

    @Test func programsWithoutOriginAreLetIn() {
        #expect(loopback.refusal(host: "127.0.0.1:6680", origin: nil) == nil)
        #expect(loopback.refusal(host: "localhost:6680", origin: nil) == nil)
        #expect(loopback.refusal(host: "[::1]:6680", origin: nil) == nil)
    }

    @Test func thePageServedHereIsLetIn() {
        #expect(loopback.refusal(host: "127.0.0.1:6680", origin: "http://127.0.0.1:6680") == nil)
        #expect(loopback.refusal(host: "LOCALHOST:6680", origin: "http://localhost:6680") == nil)
        #expect(everywhere.refusal(host: "192.168.1.5:6680", origin: "http://192.168.1.5:6680") == nil)
        #expect(everywhere.refusal(host: "music.local:6680", origin: "https://music.local:6680") == nil)
        #expect(lan.refusal(host: "192.168.1.5", origin: "http://192.168.1.5") == nil)
        #expect(loopback.refusal(host: "127.0.0.1", origin: "http://127.0.0.1:80") == nil)
    }

    @Test func anotherSiteIsRefused() {
        // Cross-site WebSocket hijacking: a page elsewhere opens ws://127.0.0.1:6680/ws.
        #expect(loopback.refusal(host: "127.0.0.1:6680", origin: "http://evil.example") != nil)
        #expect(loopback.refusal(host: "127.0.0.1:6680", origin: "http://127.0.0.1:8080") != nil)
        #expect(loopback.refusal(host: "127.0.0.1:6680", origin: "null") != nil)
        #expect(loopback.refusal(host: "127.0.0.1:6680", origin: "file://") != nil)
    }

    @Test func foreignHostNamesAreRefused() {
        // DNS rebinding: evil.example made to resolve to this machine; Origin and Host agree.
        #expect(loopback.refusal(host: "evil.example:6680", origin: "http://evil.example:6680") != nil)
        #expect(everywhere.refusal(host: "evil.example:6680", origin: nil) != nil)
        #expect(lan.refusal(host: "10.0.0.9:6680", origin: nil) != nil)
        #expect(loopback.refusal(host: "192.168.1.5:6680", origin: nil) != nil)
        #expect(loopback.refusal(host: nil, origin: nil) != nil)
        #expect(loopback.refusal(host: "127.0.0.1:99999", origin: nil) != nil)
        #expect(loopback.refusal(host: "user@127.0.0.1", origin: nil) != nil)
        #expect(loopback.refusal(host: String(repeating: "a", count: 10_000), origin: nil) != nil)
    }
}
