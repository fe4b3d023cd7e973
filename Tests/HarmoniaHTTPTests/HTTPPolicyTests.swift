// The network policy (specs/network.md §Policy) against a real server on
// loopback that misbehaves on purpose (Tests/Network/fault_server.py), read
// through the real FFmpeg decoder: every fault either resumes at the exact
// next byte — the samples equal the local file's, bit for bit — or ends in
// the documented error.
import Foundation
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaHTTP
import HarmoniaTestSupport
import Testing

/// A decoder reading http(s) through HTTPSourcePort, and what it reported.
final class NetworkDecoder: @unchecked Sendable {
    let decoder: FFmpegDecoderAdapter
    let events = LockedValue<[NetworkEvent]>([])

    init(_ configure: (inout HTTPSourceConfiguration) -> Void = { _ in }) {
        var configuration = HTTPSourceConfiguration()
        configure(&configuration)
        decoder = FFmpegDecoderAdapter(networkTimeout: configuration.networkTimeout,
                                       networkSource: HTTPSourcePort(configuration: configuration),
                                       verifyTLS: configuration.verifyTLS)
        decoder.observeNetwork { [events] _, event in events.withLock { $0.append(event) } }
    }

    /// Opens `url`, reads it to the end, closes.
    func decode(_ url: String) throws -> [Float] {
        let handle = try decoder.open(url: url)
        defer { decoder.close(handle) }
        return try decodeToEnd(decoder, handle)
    }

    var reconnects: [(attempt: Int, byte: Int64)] {
        events.withLock { $0 }.compactMap { if case .reconnecting(let attempt, let byte) = $0 { (attempt, byte) } else { nil } }
    }
}

/// The local file, decoded by the same adapter: the reference.
func localSamples(_ name: String) throws -> [Float] {
    try NetworkDecoder().decode(Fixtures.named(name).path)
}

func coreError(_ body: () throws -> Void) -> CoreError? {
    do { try body() } catch let error as CoreError { return error } catch { return .ioError("not a CoreError: \(error)") }
    return nil
}

@Suite("HTTP policy against a misbehaving server", .serialized) struct HTTPPolicyTests {
    static let formats = ["mp3_cbr_stereo_44k.mp3", "flac_s16_stereo_44k.flac", "opus_stereo_48k.opus",
                          "aac_stereo_44k.m4a", "vorbis_stereo_44k.ogg", "wav_s16_stereo_44k.wav"]

    @Test("a well-behaved server: the local file's samples, with one GET per open", arguments: formats)
    func oneRequest(_ name: String) throws {
        let server = try FaultHTTPServer()
        let samples = try NetworkDecoder().decode(server.url(name))
        #expect(samples == (try localSamples(name)))
        let gets = server.requests.filter { $0.method == "GET" }
        #expect(gets.count == 1, "\(name): \(gets.map { "\($0.path) \($0.range ?? "")" })")
    }

    @Test("a stall mid-file: a Range request at the exact next byte, and the same samples", arguments: formats)
    func stallResumes(_ name: String) throws {
        let server = try FaultHTTPServer()
        let network = NetworkDecoder { $0.stallTimeout = 0.5 }
        let samples = try network.decode(server.url(name, "stall=10000"))  // every fixture is longer
        #expect(samples == (try localSamples(name)))
        #expect(network.reconnects.first?.byte == 10_000)
        #expect(server.requests.contains { $0.range == "bytes=10000-" })
        #expect(network.events.withLock { $0 }.contains(.resumed(byte: 10_000)))
    }

    @Test("a reset every 8 KiB: many exact resumes, the same samples")
    func resets() throws {
        let server = try FaultHTTPServer()
        let network = NetworkDecoder()
        let name = "flac_s16_stereo_44k.flac"
        #expect(try network.decode(server.url(name, "reset=8192")) == localSamples(name))
        let bytes = network.reconnects.map(\.byte)
        #expect(bytes.count >= 5)
        #expect(bytes.allSatisfy { $0 % 8192 == 0 }, "\(bytes)")
    }

    @Test("a server that ignores Range: the resumed response is read from the start and the bytes before the cut dropped")
    func noRange() throws {
        let server = try FaultHTTPServer()
        let network = NetworkDecoder { $0.stallTimeout = 0.5 }
        let name = "mp3_cbr_stereo_44k.mp3"
        #expect(try network.decode(server.url(name, "norange=1&stall=20000")) == localSamples(name))
        #expect(network.reconnects.count == 1)
    }

    @Test("a lying total in Content-Range: the body is read to its real end, nothing lost")
    func lyingTotal() throws {
        let server = try FaultHTTPServer()
        let network = NetworkDecoder { $0.stallTimeout = 0.5 }
        let name = "mp3_cbr_stereo_44k.mp3"
        #expect(try network.decode(server.url(name, "lietotal=1&stall=12000")) == localSamples(name))
    }

    @Test("a stall for good: reconnect attempts are reported, then ioError at the network timeout")
    func stallForGood() throws {
        let server = try FaultHTTPServer()
        let network = NetworkDecoder { $0.networkTimeout = 3; $0.stallTimeout = 0.5 }  // libcurl checks about once a second
        let url = server.url("flac_s16_stereo_44k.flac", "stallall=16000")
        let error = coreError { _ = try network.decode(url) }
        #expect(error?.category == .ioError)
        #expect(error?.message.contains("127.0.0.1") == true)
        #expect(network.reconnects.count >= 2)
        #expect(network.reconnects.allSatisfy { $0.byte == 16_000 })
    }

    @Test("every connection reset, a server that never answers: ioError at the network timeout", arguments: ["refuse=1", "never=1"])
    func deadServer(_ fault: String) throws {
        let server = try FaultHTTPServer()
        let network = NetworkDecoder { $0.networkTimeout = 1.5; $0.stallTimeout = 0.5 }
        let error = coreError { _ = try network.decode(server.url("mp3_cbr_stereo_44k.mp3", fault)) }
        #expect(error?.category == .ioError, "\(String(describing: error))")
        #expect(error?.message.contains("1.5 s") == true, "\(String(describing: error))")
    }

    @Test("status codes get their categories and say what to do")
    func statuses() throws {
        let server = try FaultHTTPServer()
        let network = NetworkDecoder { $0.networkTimeout = 2 }
        let file = "mp3_cbr_stereo_44k.mp3"
        #expect(coreError { _ = try network.decode(server.url(file, "status=404")) }?.category == .notFound)
        #expect(coreError { _ = try network.decode(server.url("missing.mp3")) }?.category == .notFound)
        for code in [401, 403, 410] {
            let error = coreError { _ = try network.decode(server.url(file, "status=\(code)")) }
            #expect(error?.category == .ioError)
            #expect(error?.message.contains("expired") == true, "\(code): \(String(describing: error))")
        }
        // Two 503s, then the file: retried, not an error.
        #expect(try network.decode(server.url(file, "status=503&times=2")) == localSamples(file))
        // Redirects: three are followed; a loop is named.
        #expect(try network.decode(server.url(file, "redirect=3")) == localSamples(file))
        let loop = coreError { _ = try network.decode(server.url(file, "redirect=loop")) }
        #expect(loop?.category == .ioError)
        #expect(loop?.message.contains("redirect") == true, "\(String(describing: loop))")
    }

    @Test("a signed link that expires mid-stream: linkExpired, renewLink gives a fresh one, the stream resumes at the same byte")
    func renewedLink() throws {
        let server = try FaultHTTPServer()
        let name = "flac_s16_stereo_44k.flac"
        let fresh = server.url(name, "fresh=1")
        let asked = LockedValue<[Int]>([])
        let network = NetworkDecoder {
            $0.stallTimeout = 0.5
            $0.renewLink = { _, status in asked.withLock { $0.append(status) }; return fresh }
        }
        #expect(try network.decode(server.url(name, "stall=10000&expire=1")) == localSamples(name))
        #expect(asked.withLock { $0 } == [403])
        #expect(network.events.withLock { $0 }.contains(.linkExpired(status: 403)))
        #expect(server.requests.contains { $0.path.contains("fresh=1") && $0.range == "bytes=10000-" })
        // Without a fresh link: ioError saying so.
        let refused = NetworkDecoder {
            $0.stallTimeout = 0.5
            $0.renewLink = { _, _ in nil }
        }
        let error = coreError { _ = try refused.decode(server.url(name, "stall=10000&expire=1&again=1")) }
        #expect(error?.category == .ioError)
        #expect(error?.message.contains("no fresh link") == true, "\(String(describing: error))")
    }

    @Test("headers per URL (a track's own token) go with every request for it, reconnects included, and not with others")
    func headersPerURL() throws {
        let server = try FaultHTTPServer()
        let name = "mp3_cbr_stereo_44k.mp3"
        let mine = server.url(name, "stall=12000&tok=1")
        let network = NetworkDecoder {
            $0.stallTimeout = 0.5
            $0.headersForURL = { url in url == mine ? ["Authorization: Bearer track-7"] : [] }
        }
        #expect(try network.decode(mine) == localSamples(name))
        _ = try network.decode(server.url(name))
        let requests = server.requests
        let forMine = requests.filter { $0.path.contains("tok=1") }
        #expect(forMine.count == 2 && forMine.allSatisfy { $0.authorization == "Bearer track-7" })
        #expect(requests.filter { !$0.path.contains("tok=1") }.allSatisfy { $0.authorization == nil })
    }

    @Test("ICY radio: the station and its titles are events; the audio is the file's without the metadata")
    func icy() throws {
        let server = try FaultHTTPServer()
        let network = NetworkDecoder()
        let name = "mp3_cbr_stereo_44k.mp3"
        #expect(try network.decode(server.url(name, "icy=8192")) == localSamples(name))
        let events = network.events.withLock { $0 }
        #expect(events.contains(.station(StationInfo(name: "Loopback Radio", genre: "Test", url: "http://example.invalid/"))))
        let titles = events.compactMap { if case .streamTitle(let title, let byte) = $0 { "\(title)@\(byte)" } else { nil } }
        #expect(titles.first == "Title 0@8192", "\(titles)")
    }

    @Test("a slow source (4 KB/s) plays to the end without an error")
    func slowSource() throws {
        let server = try FaultHTTPServer()
        let name = "mp3_vbr_mono_44k.mp3"
        #expect(try NetworkDecoder().decode(server.url(name, "rate=4000")) == localSamples(name))
    }

    @Test("https: a self-signed certificate is refused with a hint; without verification it reads to the very end without close_notify")
    func tls() throws {
        let server = try FaultHTTPServer(tls: true)
        let name = "mp3_cbr_stereo_44k.mp3"
        let refused = coreError { _ = try NetworkDecoder().decode(server.url(name)) }
        #expect(refused?.category == .ioError)
        #expect(refused?.message.contains("certificate") == true, "\(String(describing: refused))")
        #expect(try NetworkDecoder { $0.verifyTLS = false }.decode(server.url(name)) == localSamples(name))
    }
}

@Suite("ICY titles on the heard timeline") struct StreamTitleTimingTests {
    @Test("a StreamTitle is published when the listener reaches its audio, not when it arrives (seconds earlier)")
    func titleFollowsHeardPosition() throws {
        // 12 s of CBR MP3 at 128 kbit/s (16,000 bytes a second), made here;
        // the server's titles change every 65,536 audio bytes: 'Title 1'
        // applies from about 4.1 s. On loopback the whole stream arrives at once.
        let directory = NSTemporaryDirectory() + "harmonia-icy-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let made = try ProcessRunner.run("/usr/bin/ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "sine=frequency=440:duration=12",
                                                             "-ac", "2", "-ar", "44100", "-c:a", "libmp3lame", "-b:a", "128k",
                                                             "-write_xing", "0", "-id3v2_version", "0", directory + "/radio.mp3"])
        #expect(made.status == 0, "\(made.stderrText)")
        let server = try FaultHTTPServer(root: directory)
        let output = NullAudioOutput(pace: .manual, ringFrames: 1 << 17)
        let clock = ManualClock()
        let service = DefaultPlaybackService(decoder: FFmpegDecoderAdapter(networkSource: HTTPSourcePort()),
                                             output: output, clock: clock)
        let titles = LockedValue<[(title: String, heard: Int64)]>([])
        service.observe { event in
            if case .network(.streamTitle(let title, _), _) = event {
                titles.withLock { $0.append((title, output.framesPlayed)) }
            }
        }
        try service.load(url: server.url("radio.mp3", "icy=8192"))
        try service.play()
        service.waitUntilSettled()
        while output.framesPlayed < 441_000 {  // 10 s in 10 ms steps
            _ = output.advance(frames: 441)
            clock.advance(by: 10_000_000)
            service.waitUntilSettled()
        }
        service.stop()
        let heard = titles.withLock { $0 }
        let first = try #require(heard.first { $0.title == "Title 1" }, "\(heard.map(\.title))")
        print("[icy] 'Title 1' (byte 65536, about frame 180634) published at heard frame \(first.heard)")
        // 65,536 bytes at 16,000 a second: frame 180,634. A chunk (4,096
        // frames) and an MP3 frame (1,152) of slack either way.
        #expect(abs(first.heard - 180_634) < 6_000, "published at frame \(first.heard)")
        #expect(heard.first?.title == "Title 0" && heard.first!.heard < 44_100)
    }
}

@Suite("HTTP source: what its transfer reports") struct HTTPTransferTests {
    /// Reads `source` to its end, 4 KiB at a time.
    static func readAll(_ source: any ByteSource) throws -> Int64 {
        var buffer = [UInt8](repeating: 0, count: 4096)
        var total: Int64 = 0
        while true {
            let n = try buffer.withUnsafeMutableBytes { try source.read(into: $0.baseAddress!, count: $0.count) }
            if n == 0 { return total }
            total += Int64(n)
        }
    }

    /// The transfer once it has ended (polled every 10 ms, at most 10 s).
    static func ended(_ source: any ByteSource) -> ByteSourceTransfer? {
        for _ in 0..<1000 {
            if let transfer = source.transfer, transfer.end != nil { return transfer }
            Thread.sleep(forTimeInterval: 0.01)  // the transfer thread's last step, not a result we assume
        }
        return source.transfer
    }

    @Test("the response's own headers, every byte received, nothing buffered once read, ended complete — also across resets")
    func complete() throws {
        let server = try FaultHTTPServer()
        let name = "flac_s16_stereo_44k.flac"
        let size = Int64(try #require(FileManager.default.contents(atPath: Fixtures.named(name).path)).count)
        for query in ["", "reset=8192"] {
            let source = try HTTPSourcePort().open(url: server.url(name, query), observer: nil, interrupted: { false })
            defer { source.cancel() }
            let head = try #require(source.transfer?.responseHead)
            #expect(head.hasPrefix("HTTP/1.") && head.hasSuffix("\r\n\r\n"), "\(head)")
            #expect(head.lowercased().contains("content-length: \(size)\r\n"), "\(head)")
            #expect(try Self.readAll(source) == size)
            let transfer = try #require(Self.ended(source))
            #expect(transfer.end == .complete)
            #expect(transfer.received == size)
            #expect(transfer.buffered == 0)
            #expect(transfer.capacity == HTTPSourceConfiguration().windowBytes)
        }
    }

    @Test("a source the reader cancels ends cancelled")
    func cancelled() throws {
        let server = try FaultHTTPServer()
        let source = try HTTPSourcePort().open(url: server.url("flac_s16_stereo_44k.flac", "stall=10000"), observer: nil, interrupted: { false })
        source.cancel()
        #expect(source.transfer?.end == .cancelled)
    }
}
