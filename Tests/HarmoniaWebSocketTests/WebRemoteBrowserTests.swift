// The web remote's page in a real browser: Tests/Web/remote_browser_test.py
// starts `harmonia-play serve --listen 127.0.0.1:0` on a generated music tree
// and drives the page in headless Chromium (Selenium), checking the player's
// side through the WebSocket protocol (issue 24, specs/control-protocol.md).
import Foundation
import HarmoniaTestSupport
import Testing

@Suite("harmonia-play web remote")
struct HarmoniaPlayWebRemoteTests {
    static let python = "/usr/bin/python3"  // Debian's, with python3-selenium and python3-websockets
    static let script = Fixtures.repositoryRoot + "/Tests/Web/remote_browser_test.py"

    @Test("the page in headless Chromium: now playing, pause and play, seek by the bar, search and add, browse, the queue, volume, phone and desktop screenshots, a server restart")
    func browser() throws {
        // Screenshots and the server's logs stay beside the build, to be looked at.
        let artifacts = ProcessRunner.productsDirectory + "/web-remote-artifacts"
        let result = try ProcessRunner.run(Self.python, [Self.script, ProcessRunner.productsDirectory + "/harmonia-play",
                                                         "--artifacts", artifacts])
        #expect(result.status == 0, "\(result.stdoutText.suffix(4000))\n\(result.stderrText.suffix(2000))")
        #expect(result.stdoutText.contains("all checks passed"))
        print(result.stdoutText, terminator: "")
    }
}
