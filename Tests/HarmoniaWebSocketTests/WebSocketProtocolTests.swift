// The control protocol over WebSocket, driven from outside by a real client
// (Python's websockets, Debian's python3-websockets): every command, events
// and their order, authentication, the Host/Origin policy, the limits, 100
// clients, TLS, a restart on the same port — Tests/WebSocket/ws_protocol_test.py.
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("WebSocket transport", .serialized)
struct WebSocketProtocolTests {
    static let python = "/usr/bin/python3"  // Debian's, with python3-websockets
    static let script = Fixtures.repositoryRoot + "/Tests/WebSocket/ws_protocol_test.py"

    @Test("every check of ws_protocol_test.py passes against harmonia-play serve and play --listen")
    func protocolSuite() throws {
        let work = NSTemporaryDirectory() + "hp-ws-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: work) }
        let result = try ProcessRunner.run(Self.python, [Self.script, ProcessRunner.productsDirectory + "/harmonia-play", work])
        let passed = result.stdoutText.split(separator: "\n").filter { $0.hasPrefix("ok ") }
        #expect(result.status == 0, "\(result.stderrText.suffix(3000))\npassed before the failure:\n\(passed.joined(separator: "\n"))")
        #expect(result.stdoutText.contains("all checks passed"))
        #expect(passed.count >= 17, "\(passed.count) checks passed")
    }
}
