// The server over real loopback TCP with a fake handler — specs/mpd-protocol.md
// §Connections, §Command lists, §Idle, §Limits, §Security. Waits are awaited
// conditions with deadlines (MPDTestClient, MPDServer.waitForConnections).
#if canImport(Glibc)
import Glibc
#endif
import HarmoniaCore
import Testing
@testable import HarmoniaMPD

private func makeServer(_ configure: (inout MPDServerConfiguration) -> Void = { _ in },
                        handler: FakeHandler = FakeHandler()) throws -> MPDServer {
    var configuration = MPDServerConfiguration(host: "127.0.0.1", port: 0)
    configure(&configuration)
    let server = MPDServer(configuration: configuration, handler: handler)
    try server.start()
    return server
}

@Suite struct MPDServerTests {
    @Test func greetingCommandsAndErrors() throws {
        let server = try makeServer()
        defer { server.shutdown() }
        let client = try MPDTestClient(port: server.port)
        #expect(client.greeting == "OK MPD 0.23.5")
        #expect(client.command("ping") == ["OK"])
        #expect(client.command("status") == ["state: stop", "OK"])
        #expect(client.command("bogus") == [#"ACK [5@0] {} unknown command "bogus""#])
        #expect(client.command("ping extra") == [#"ACK [2@0] {ping} wrong number of arguments for "ping""#])
        #expect(client.command("lsinfo a b") == [#"ACK [2@0] {lsinfo} too many arguments for "lsinfo""#])
        #expect(client.command(#"find "x"#) == [#"ACK [5@0] {} Missing closing '"'"#])
        #expect(client.command(#"echo "a b" c\d"#) == ["arg0: a b", #"arg1: c\d"#, "client: 0", "OK"])
        #expect(client.command("fail") == ["partial: yes", "ACK [50@0] {fail} No such thing"])
        #expect(client.command("ping\r") == ["OK"])
    }

    /// A client's socket sends at once (TCP_NODELAY): a long answer's last
    /// chunk does not wait for the client's delayed ACK.
    @Test func acceptedConnectionsSendWithoutNaglesDelay() throws {
        let (listener, port) = try MPDSocket.listen(host: "127.0.0.1", port: 0)
        defer { MPDSocket.closeDescriptor(listener) }
        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { MPDSocket.closeDescriptor(client) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(client, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0)
        let accepted = try #require(MPDSocket.accept(listener))
        defer { MPDSocket.closeDescriptor(accepted.fd) }
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        #expect(getsockopt(accepted.fd, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &length) == 0)
        #expect(value != 0)
    }

    @Test func songRecordsFollowTheClientsTagTypes() throws {
        let server = try makeServer()
        defer { server.shutdown() }
        let client = try MPDTestClient(port: server.port)
        let head = ["file: a/b.flac", "Last-Modified: 2023-11-14T22:13:20Z", "Format: 44100:16:2"]
        let tail = ["Time: 2", "duration: 2.000", "OK"]
        #expect(client.command("lsinfo") == head + ["Artist: A", "Title: T"] + tail)
        #expect(client.command("tagtypes disable artist") == ["OK"])
        #expect(client.command("lsinfo") == head + ["Title: T"] + tail)
        #expect(client.command("tagtypes clear") == ["OK"])
        #expect(client.command("tagtypes") == ["OK"])
        #expect(client.command("tagtypes enable Title") == ["OK"])
        #expect(client.command("tagtypes") == ["tagtype: Title", "OK"])
        #expect(client.command("tagtypes all") == ["OK"])
        #expect(client.command("tagtypes") == MPDTagMask.library.tags.map { "tagtype: \($0.name)" } + ["OK"])
        #expect(client.command("tagtypes bogus") == ["ACK [2@0] {tagtypes} Unknown sub command"])
        #expect(client.command("tagtypes enable NoSuchTag") == ["ACK [2@0] {tagtypes} Unknown tag type"])
        #expect(client.command("tagtypes enable") == ["ACK [2@0] {tagtypes} Not enough arguments"])
        #expect(client.command("tagtypes all x") == ["ACK [2@0] {tagtypes} Too many arguments"])
        #expect(client.command("binarylimit 10") == ["ACK [2@0] {binarylimit} Value too small"])
        #expect(client.command("binarylimit -1") == ["ACK [2@0] {binarylimit} Number too large: -1"])
        #expect(client.command("binarylimit 100") == ["OK"])
    }

    @Test func commandListsAnswerOnceWithTheFailingIndex() throws {
        let server = try makeServer()
        defer { server.shutdown() }
        let client = try MPDTestClient(port: server.port)
        for line in ["command_list_ok_begin", "status", "ping", "command_list_end"] { client.send(line) }
        #expect(client.readAnswer() == ["state: stop", "list_OK", "list_OK", "OK"])
        for line in ["command_list_begin", "status", "ping", "command_list_end"] { client.send(line) }
        #expect(client.readAnswer() == ["state: stop", "OK"])
        for line in ["command_list_ok_begin", "status", "fail", "status", "command_list_end"] { client.send(line) }
        #expect(client.readAnswer() == ["state: stop", "list_OK", "partial: yes", "ACK [50@1] {fail} No such thing"])
        for line in ["command_list_begin", "ping", "ping", "bogus", "ping", "command_list_end"] { client.send(line) }
        #expect(client.readAnswer() == [#"ACK [5@2] {} unknown command "bogus""#])
        for line in ["command_list_begin", "command_list_end"] { client.send(line) }
        #expect(client.readAnswer() == ["OK"])
        // Nested begin is a command like any other inside a list: unknown.
        for line in ["command_list_begin", "command_list_begin", "command_list_end"] { client.send(line) }
        #expect(client.readAnswer() == [#"ACK [5@0] {} unknown command "command_list_begin""#])
        #expect(client.command("command_list_end") == [#"ACK [5@0] {} unknown command "command_list_end""#])
        #expect(client.command("ping") == ["OK"])
    }

    @Test func aCommandListPastItsLimitClosesTheConnection() throws {
        let server = try makeServer { $0.maxCommandListBytes = 100 }
        defer { server.shutdown() }
        let client = try MPDTestClient(port: server.port)
        client.send("command_list_begin")
        for _ in 0..<20 { client.send("ping 123456789") }
        #expect(client.waitForClose())
    }

    @Test func idleWakesOnPostedChanges() throws {
        let server = try makeServer()
        defer { server.shutdown() }
        let client = try MPDTestClient(port: server.port)
        // A change before idle is kept and answered at once.
        server.notify(.database)
        #expect(client.command("idle database player") == ["changed: database", "OK"])
        // Only subscribed subsystems wake the client; the answer clears every pending flag.
        client.send("idle player")
        server.notify(.mixer)
        server.notify([.player, .playlist])
        #expect(client.readAnswer() == ["changed: player", "OK"])
        client.send("idle")
        server.notify([.player, .playlist, .database])
        #expect(client.readAnswer() == ["changed: database", "changed: playlist", "changed: player", "OK"])
        // noidle ends a wait with an empty answer; outside idle it answers nothing.
        client.send("idle")
        client.send("noidle")
        #expect(client.readAnswer() == ["OK"])
        client.send("noidle")
        #expect(client.command("status") == ["state: stop", "OK"])
        #expect(client.command("idle bogus") == ["ACK [2@0] {idle} Unrecognized idle event: bogus"])
        // idle ends a command list (no OK), and waits.
        for line in ["command_list_ok_begin", "ping", "idle options", "ping", "command_list_end"] { client.send(line) }
        #expect(client.readLine() == "list_OK")
        server.notify(.options)
        #expect(client.readAnswer() == ["changed: options", "OK"])
        // Anything but noidle while idle closes the connection, as MPD.
        client.send("idle")
        client.send("ping")
        #expect(client.waitForClose())
    }

    @Test func closeAndMalformedLinesEndTheConnection() throws {
        let server = try makeServer()
        defer { server.shutdown() }
        let closer = try MPDTestClient(port: server.port)
        closer.send("close")
        closer.send("ping")
        #expect(closer.readLine() == nil)
        #expect(closer.closed)
        let badWord = try MPDTestClient(port: server.port)
        badWord.send("pi-ng")
        #expect(badWord.readLine() == "ACK [5@0] {} Invalid word character")
        #expect(badWord.waitForClose())
        for line in ["Ping", "", " ping", "GET / HTTP/1.1"] {
            let client = try MPDTestClient(port: server.port)
            client.send(line)
            #expect(client.readLine() == nil)
            #expect(client.closed)
        }
    }

    @Test func aLineOverOneMebibyteClosesOnlyThatConnection() throws {
        let handler = FakeHandler()
        let server = try makeServer(handler: handler)
        defer { server.shutdown() }
        let other = try MPDTestClient(port: server.port)
        let flooder = try MPDTestClient(port: server.port)
        #expect(server.waitForConnections(timeout: 10) { $0 == 2 })
        flooder.sendRaw([UInt8](repeating: UInt8(ascii: "a"), count: (1 << 20) + 1))
        #expect(flooder.waitForClose())
        #expect(other.command("ping") == ["OK"])
        #expect(server.waitForConnections(timeout: 10) { $0 == 1 })
        #expect(handler.closedClients.withLock { $0 } == [1])
        // A line of exactly the limit is still a line.
        let exact = "echo " + String(repeating: "b", count: (1 << 20) - 5)
        #expect(other.command(exact).last == "OK")
    }

    @Test func aClientThatNeverReadsIsDroppedWhileOthersAreAnswered() throws {
        // Its streamed answer waits for it, then drops it after the stall limit.
        let server = try makeServer {
            $0.maxOutputBytes = 1 << 20
            $0.stalledClientSeconds = 1
        }
        defer { server.shutdown() }
        let reader = try MPDTestClient(port: server.port)
        let stalled = try MPDTestClient(port: server.port, receiveBuffer: 4096)
        #expect(server.waitForConnections(timeout: 10) { $0 == 2 })
        // 64 answers of about 1 MB each: far more than the kernel's buffers
        // and the 1 MiB outbox hold.
        for _ in 0..<64 { stalled.send("big 1000") }
        #expect(server.waitForConnections(timeout: 20) { $0 == 1 })
        #expect(reader.command("ping") == ["OK"])
        #expect(reader.command("big 10").count == 11)
    }

    @Test func theClientLimitRefusesWithoutAGreeting() throws {
        let server = try makeServer { $0.maxClients = 2 }
        defer { server.shutdown() }
        var first: MPDTestClient? = try MPDTestClient(port: server.port)
        let second = try MPDTestClient(port: server.port)
        #expect(first?.greeting != nil && second.greeting != nil)
        let refused = try MPDTestClient(port: server.port)
        #expect(refused.greeting == nil)
        #expect(refused.closed)
        first = nil  // closes its socket
        #expect(server.waitForConnections(timeout: 10) { $0 == 1 })
        let third = try MPDTestClient(port: server.port)
        #expect(third.greeting == "OK MPD 0.23.5")
        #expect(second.command("ping") == ["OK"])
    }

    @Test func passwordsGateCommandsAndWrongOnesAreSlowedAlone() throws {
        let server = try makeServer {
            $0.passwords = ["secret": .all, "reader": [.read]]
            $0.defaultPermissions = [.read]
            $0.wrongPasswordDelay = 2
        }
        defer { server.shutdown() }
        let client = try MPDTestClient(port: server.port)
        let other = try MPDTestClient(port: server.port)
        #expect(client.command("add x") == [#"ACK [4@0] {add} you don't have permission for "add""#])
        #expect(client.command("status") == ["state: stop", "OK"])
        let commands = client.command("commands")
        #expect(commands.contains("command: status") && commands.contains("command: ping") && !commands.contains("command: add"))
        #expect(client.command("notcommands") == ["command: add", "OK"])
        // A wrong password: its answer waits; the other client is answered meanwhile.
        let start = monotonicSeconds()
        client.send("password wrong")
        #expect(other.command("ping") == ["OK"])
        #expect(!client.hasPendingData)
        #expect(client.readAnswer() == ["ACK [3@0] {password} incorrect password"])
        #expect(monotonicSeconds() - start >= 2)
        #expect(client.command("password secret") == ["OK"])
        #expect(client.command("add x") == ["added: x", "OK"])
        #expect(client.command("notcommands") == ["OK"])
        // A password replaces the permissions it had.
        #expect(client.command("password reader") == ["OK"])
        #expect(client.command("add x") == [#"ACK [4@0] {add} you don't have permission for "add""#])
        // Without read permission even idle is refused.
        let none = try makeServer { $0.passwords = ["secret": .all] }
        defer { none.shutdown() }
        let stranger = try MPDTestClient(port: none.port)
        #expect(stranger.command("idle") == [#"ACK [4@0] {idle} you don't have permission for "idle""#])
        #expect(stranger.command("ping") == ["OK"])
    }

    @Test func aRestartedServerBindsTheSamePortAtOnce() throws {
        let first = try makeServer()
        let port = first.port
        let client = try MPDTestClient(port: port)
        #expect(client.command("ping") == ["OK"])
        first.shutdown()
        #expect(client.waitForClose())
        let second = try makeServer { $0.port = port }
        defer { second.shutdown() }
        #expect(try MPDTestClient(port: port).command("ping") == ["OK"])
        // The port is now taken: a third server says so.
        let third = MPDServer(configuration: MPDServerConfiguration(host: "127.0.0.1", port: port), handler: FakeHandler())
        #expect(throws: CoreError.self) { try third.start() }
    }

    @Test func ipv6Loopback() throws {
        var configuration = MPDServerConfiguration(host: "::1", port: 0)
        configuration.maxClients = 4
        let server = MPDServer(configuration: configuration, handler: FakeHandler())
        do {
            try server.start()
        } catch {
            return  // no IPv6 on this machine: nothing to test
        }
        defer { server.shutdown() }
        let client = try MPDTestClient(port: server.port, host: "::1")
        #expect(client.greeting == "OK MPD 0.23.5")
        #expect(client.command("echo") == ["client: 0", "OK"])
        let notNumeric = MPDServer(configuration: MPDServerConfiguration(host: "localhost", port: 0), handler: FakeHandler())
        #expect(throws: CoreError.invalidArgument(#"MPD server: "localhost" is not a numeric IPv4 or IPv6 address"#)) { try notNumeric.start() }
    }

    @Test func shutdownClosesIdleClients() throws {
        let server = try makeServer()
        let client = try MPDTestClient(port: server.port)
        client.send("idle")
        #expect(server.waitForConnections(timeout: 10) { $0 == 1 })
        server.shutdown()
        #expect(client.waitForClose())
        #expect(server.connectionCount == 0)
    }
}
