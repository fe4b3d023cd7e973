// specs/snapcast.md §Address
import HarmoniaCore
import HarmoniaSnapcast
import Testing

@Suite struct SnapcastEndpointTests {
    @Test func defaults() throws {
        let endpoint = try SnapcastEndpoint(url: "snapcast://example.org")
        #expect(endpoint.host == "example.org")
        #expect(endpoint.port == 4953)
        #expect(endpoint.sampleRate == 48000 && endpoint.bits == 16 && endpoint.channels == 2)
        #expect(endpoint.bufferMilliseconds == 1000)
    }

    @Test func everyParameter() throws {
        let endpoint = try SnapcastEndpoint(url: "snapcast://127.0.0.1:4999/?sampleformat=44100:32:1&buffer=400&lead=100")
        #expect(endpoint == SnapcastEndpoint(host: "127.0.0.1", port: 4999, sampleRate: 44100, bits: 32, channels: 1,
                                             bufferMilliseconds: 400, leadMilliseconds: 100))
        #expect(try SnapcastEndpoint(url: "snapcast://[::1]:5000?buffer=500").host == "::1")
    }

    @Test(arguments: ["snapcast://", "snapcast://h:0", "snapcast://h:x", "snapcast://h/path", "snapcast://h/?buffer=5",
                      "snapcast://h/?sampleformat=48000:24:2", "snapcast://h/?colour=red", "http://h"])
    func refused(url: String) {
        #expect(throws: CoreError.self) { try SnapcastEndpoint(url: url) }
    }
}
