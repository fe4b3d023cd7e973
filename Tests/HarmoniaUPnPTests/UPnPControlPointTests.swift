// The renderer against a real control point: Tests/UPnP/upnp_renderer_test.py
// drives `harmonia-play serve --upnp` on loopback with async-upnp-client
// (the library of Home Assistant and Music Assistant; pinned, installed by
// `make test` into .build/python-upnp) — specs/upnp.md §Tests
import Foundation
import HarmoniaTestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("harmonia-play UPnP renderer")
struct UPnPControlPointTests {
    static let python = Fixtures.repositoryRoot + "/.build/python-upnp/bin/python3"
    static let script = Fixtures.repositoryRoot + "/Tests/UPnP/upnp_renderer_test.py"
    static let interfacesScript = Fixtures.repositoryRoot + "/Tests/UPnP/ssdp_interfaces_test.py"
    static let deadSubscriberScript = Fixtures.repositoryRoot + "/Tests/UPnP/upnp_dead_subscriber_test.py"

    @Test("async-upnp-client: SSDP discovery, description, SetAVTransportURI with DIDL-Lite, Play, position, Pause/Seek/Stop, SetNextAVTransportURI, volume and mute, LastChange events, MPD's view, XXE and billion laughs refused, 716, 413, the subscription cap, a dead subscriber, byebye")
    func controlPoint() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            Issue.record("\(Self.python) is missing: `make test` installs async-upnp-client there (make upnp-client)")
            return
        }
        // Bounded: the script bounds every wait; `timeout` bounds the whole.
        let result = try ProcessRunner.run("/usr/bin/timeout", ["--kill-after=10", "300", Self.python, Self.script, ProcessRunner.productsDirectory + "/harmonia-play"])
        #expect(result.status == 0, "\(result.stdoutText.suffix(4000))\n\(result.stderrText.suffix(3000))")
        #expect(result.stdoutText.contains(" passed, 0 failed"))
        print(result.stdoutText, terminator: "")
    }

    @Test("A GENA subscriber whose callback accepts TCP and never answers delays no one: async-upnp-client's DmrDevice hears PAUSED_PLAYBACK, PLAYING and a volume within 1 s while it hangs; it is dropped after the 5 s answer timeout (renewal 412) and sent nothing more")
    func deadSubscriber() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            Issue.record("\(Self.python) is missing: `make test` installs async-upnp-client there (make upnp-client)")
            return
        }
        // Bounded: the script bounds every wait; `timeout` bounds the whole.
        let result = try ProcessRunner.run("/usr/bin/timeout", ["--kill-after=10", "120", Self.python, Self.deadSubscriberScript, ProcessRunner.productsDirectory + "/harmonia-play"])
        #expect(result.status == 0, "\(result.stdoutText.suffix(4000))\n\(result.stderrText.suffix(3000))")
        #expect(result.stdoutText.contains(" passed, 0 failed"))
        print(result.stdoutText, terminator: "")
    }

    @Test("SSDP on two interfaces (a network namespace of its own): each told its own LOCATION, byebye on both; listening on one address, a search on the other is not answered")
    func interfaces() throws {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            Issue.record("\(Self.python) is missing: `make test` installs async-upnp-client there (make upnp-client)")
            return
        }
        // Root makes the namespace itself; anyone else through a user
        // namespace of their own (root inside it only).
        let namespace = getuid() == 0 ? ["-n"] : ["-r", "-n"]
        let result = try ProcessRunner.run("/usr/bin/timeout", ["--kill-after=10", "120", "unshare"] + namespace
                                           + ["--", Self.python, Self.interfacesScript, ProcessRunner.productsDirectory + "/harmonia-play"])
        #expect(result.status == 0, "\(result.stdoutText.suffix(4000))\n\(result.stderrText.suffix(3000))")
        #expect(result.stdoutText.contains(" passed, 0 failed"))
        print(result.stdoutText, terminator: "")
    }
}
