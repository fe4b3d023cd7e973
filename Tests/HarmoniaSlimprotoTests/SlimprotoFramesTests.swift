// The slimproto codec on frames built by hand, and on hostile bytes
// — specs/slimproto.md §Frames
import HarmoniaCore
import HarmoniaSlimproto
import Testing

@Suite("slimproto frames")
struct SlimprotoFramesTests {
    /// A server frame: 2-byte length (opcode included), opcode, payload.
    static func serverFrame(_ opcode: String, _ payload: [UInt8]) -> [UInt8] {
        let length = payload.count + 4
        return [UInt8(length >> 8), UInt8(length & 0xFF)] + Array(opcode.utf8) + payload
    }

    /// `strm` as aioslimproto packs it ("!cc5sBcBcBBBLHL" + request).
    static func strm(_ command: Character, autostart: Character = "0", format: Character = "f", pcm: [UInt8] = Array("????".utf8),
                     replayGain: UInt32 = 0, port: UInt16 = 8080, ip: UInt32 = 0x7F00_0001, request: String = "") -> [UInt8] {
        var payload: [UInt8] = [UInt8(ascii: command.unicodeScalars.first!), UInt8(ascii: autostart.unicodeScalars.first!),
                                UInt8(ascii: format.unicodeScalars.first!)] + pcm
        payload += [200, UInt8(ascii: "0"), 0, UInt8(ascii: "0"), 0, 20, 0]
        payload += [UInt8(replayGain >> 24), UInt8((replayGain >> 16) & 0xFF), UInt8((replayGain >> 8) & 0xFF), UInt8(replayGain & 0xFF)]
        payload += [UInt8(port >> 8), UInt8(port & 0xFF)]
        payload += [UInt8(ip >> 24), UInt8((ip >> 16) & 0xFF), UInt8((ip >> 8) & 0xFF), UInt8(ip & 0xFF)]
        return serverFrame("strm", payload + Array(request.utf8))
    }

    static func decodeAll(_ bytes: [UInt8]) -> [SlimprotoCommand] {
        var reader = SlimprotoFrameReader()
        reader.append(bytes)
        var commands: [SlimprotoCommand] = []
        while let command = reader.next() { commands.append(command) }
        return commands
    }

    @Test("strm s: every field, the request line's path, the server address")
    func streamStart() throws {
        let request = "GET /stream/track.flac?x=1 HTTP/1.0\r\nHost: 127.0.0.1:8080\r\nRange: bytes=0-\r\n\r\n"
        let commands = Self.decodeAll(Self.strm("s", autostart: "3", format: "f", replayGain: 0x0001_0000, request: request))
        guard case .stream(let strm)? = commands.first, commands.count == 1 else {
            Issue.record("not one strm: \(commands)")
            return
        }
        #expect(strm.command == UInt8(ascii: "s"))
        #expect(strm.autostart == UInt8(ascii: "3"))
        #expect(strm.format == UInt8(ascii: "f"))
        #expect(strm.threshold == 200)
        #expect(strm.outputThreshold == 20)
        #expect(strm.replayGain == 65536)
        #expect(strm.serverPort == 8080)
        #expect(SlimprotoFrames.dotted(strm.serverIP) == "127.0.0.1")
        #expect(strm.requestPath == "/stream/track.flac?x=1")
    }

    @Test("strm format p: the PCM fields as squeezelite reads them; '?' leaves it to the header; any other code is refused with its reason")
    func rawPCMFields() throws {
        func format(_ fields: String) -> Result<RawPCMFormat?, StreamFieldError>? { format(bytes: Array(fields.utf8)) }
        func format(bytes: [UInt8]) -> Result<RawPCMFormat?, StreamFieldError>? {
            guard case .stream(let strm)? = Self.decodeAll(Self.strm("s", format: "p", pcm: bytes)).first else { return nil }
            return strm.rawPCMFormat
        }
        #expect(format("1321") == .success(RawPCMFormat(bitsPerSample: 16, sampleRate: 44100, channels: 2, bigEndian: false)))
        #expect(format("2420") == .success(RawPCMFormat(bitsPerSample: 24, sampleRate: 48000, channels: 2, bigEndian: true)))
        #expect(format("3>11") == .success(RawPCMFormat(bitsPerSample: 32, sampleRate: 384000, channels: 1, bigEndian: false)))
        #expect(format("0511") == .success(RawPCMFormat(bitsPerSample: 8, sampleRate: 8000, channels: 1, bigEndian: false)))
        #expect(format("1A21") == .success(RawPCMFormat(bitsPerSample: 16, sampleRate: 768000, channels: 2, bigEndian: false)))
        #expect(format("??2?") == .success(nil))
        #expect(format("1321").flatMap { try? $0.get() }??.demuxerName == "s16le")
        #expect(format("2420").flatMap { try? $0.get() }??.demuxerName == "s24be")
        let hostile: [([UInt8], String)] = [(Array("4321".utf8), "sample size"), (Array("1B21".utf8), "sample rate"),
                                             (Array("1/21".utf8), "sample rate"), (Array("1331".utf8), "channels"),
                                             (Array("1301".utf8), "channels"), (Array("1322".utf8), "endianness"),
                                             ([0, 0, 0, 0], "sample size"), ([0x31, 0xFF, 0x32, 0x31], "sample rate")]
        for (fields, reason) in hostile {
            guard case .failure(let error)? = format(bytes: fields) else {
                Issue.record("\(fields) accepted")
                continue
            }
            #expect(error.reason.contains(reason), "\(fields): \(error.reason)")
        }
        #expect(RawPCMFormat(bitsPerSample: 12, sampleRate: 44100, channels: 2, bigEndian: false) == nil)
        #expect(RawPCMFormat(bitsPerSample: 16, sampleRate: 0, channels: 2, bigEndian: false) == nil)
        #expect(RawPCMFormat(bitsPerSample: 16, sampleRate: 44100, channels: 9, bigEndian: false) == nil)
    }

    @Test("A frame split anywhere comes out whole once its last byte arrives; several in one read come out in order")
    func splitting() {
        let bytes = Self.strm("t", replayGain: 7) + Self.serverFrame("aude", [0, 1]) + Self.serverFrame("vers", Array("7.9".utf8))
        for cut in 0...bytes.count {
            var reader = SlimprotoFrameReader()
            var got: [SlimprotoCommand] = []
            reader.append(bytes[0..<cut])
            while let command = reader.next() { got.append(command) }
            reader.append(bytes[cut...])
            while let command = reader.next() { got.append(command) }
            #expect(got.count == 3)
            #expect(got.last == .ignored(opcode: "vers"))
            #expect(got.dropFirst().first == .enableOutput(false))
        }
    }

    @Test("audg: the 16.16 gains; adjust 0 is the fixed level")
    func gain() {
        func audg(adjust: UInt8, gain: UInt32) -> [UInt8] {
            let g = [UInt8(gain >> 24), UInt8((gain >> 16) & 0xFF), UInt8((gain >> 8) & 0xFF), UInt8(gain & 0xFF)]
            return Self.serverFrame("audg", [0, 0, 0, 0, 0, 0, 0, 0, adjust, 255] + g + g)
        }
        #expect(Self.decodeAll(audg(adjust: 1, gain: 3840)) == [.gain(left: 3840.0 / 65536, right: 3840.0 / 65536)])
        #expect(Self.decodeAll(audg(adjust: 0, gain: 3840)) == [.gain(left: 1, right: 1)])
    }

    @Test("setd and serv")
    func settings() {
        #expect(Self.decodeAll(Self.serverFrame("setd", [0])) == [.setting(id: 0, data: [])])
        #expect(Self.decodeAll(Self.serverFrame("setd", [0] + Array("Kitchen\0".utf8))) == [.setting(id: 0, data: Array("Kitchen\0".utf8))])
        #expect(Self.decodeAll(Self.serverFrame("serv", [192, 168, 1, 10])) == [.switchServer(address: "192.168.1.10")])
    }

    @Test("Hostile frames: short, too short for an opcode, unknown, non-printable opcode, bad strm command; each one result, the stream stays in step")
    func hostile() {
        var bytes: [UInt8] = []
        bytes += Self.serverFrame("strm", [1, 2, 3])                   // short strm
        bytes += [0, 2, 0x41, 0x42]                                    // length 2: no room for an opcode
        bytes += [0, 0]                                                // length 0
        bytes += Self.serverFrame("zzzz", [1, 2, 3])                   // unknown
        bytes += Self.serverFrame("\u{1}\u{2}ab", [])                  // not printable
        bytes += Self.strm("X")                                        // no such strm command
        bytes += Self.serverFrame("audg", [1])                         // short audg
        bytes += Self.serverFrame("aude", [])                          // short aude
        bytes += Self.serverFrame("setd", [])                          // no id
        bytes += Self.serverFrame("serv", [0, 0, 0, 0])                // address 0
        bytes += Self.strm("t", replayGain: 42)                        // and a good one after them
        let commands = Self.decodeAll(bytes)
        #expect(commands.count == 11)
        for command in commands.prefix(10) {
            switch command {
            case .malformed, .unknown: break
            default: Issue.record("not refused: \(command)")
            }
        }
        guard case .stream(let last)? = commands.last else {
            Issue.record("the good frame after them was lost")
            return
        }
        #expect(last.replayGain == 42)
    }

    @Test("A huge length holds at most one frame: 64 KiB of garbage is one frame, read and skipped")
    func hugeLength() {
        var reader = SlimprotoFrameReader()
        reader.append([0xFF, 0xFF] + Array("zzzz".utf8))
        #expect(reader.next() == nil)  // waits for the rest
        reader.append([UInt8](repeating: 0xAB, count: 65_531))
        #expect(reader.next() == .unknown(opcode: "zzzz"))
        #expect(reader.pending == 0)
        // A request line that is not GET /path gives no path.
        let strm = Self.decodeAll(Self.strm("s", request: "POST / HTTP/1.0\r\n\r\n"))
        if case .stream(let request)? = strm.first { #expect(request.requestPath == nil) } else { Issue.record("no strm") }
    }

    @Test("STAT is 8 + 53 bytes with the fields where aioslimproto unpacks them; HELO carries device 12, the MAC, the reconnect flag and the capabilities")
    func clientFrames() {
        var status = SlimprotoFrames.Status()
        status.jiffies = 0x0102_0304
        status.elapsedMilliseconds = 61_500
        status.serverTimestamp = 99
        let stat = SlimprotoFrames.stat("STMt", status)
        #expect(stat.count == 8 + 53)
        #expect(Array(stat[0..<4]) == Array("STAT".utf8))
        #expect(Array(stat[4..<8]) == [0, 0, 0, 53])
        #expect(Array(stat[8..<12]) == Array("STMt".utf8))
        // After the event: B B B L L L L H (jiffies at 12 + 21) L L L(elapsed s) H L(elapsed ms) L(server timestamp)
        let body = Array(stat[12...])
        func u32(_ at: Int) -> UInt32 { body[at...].prefix(4).reduce(0) { $0 << 8 | UInt32($1) } }
        #expect(u32(21) == 0x0102_0304)
        #expect(u32(33) == 61)
        #expect(u32(39) == 61_500)
        #expect(u32(43) == 99)

        let helo = SlimprotoFrames.helo(mac: [2, 1, 2, 3, 4, 5], reconnect: true, bytesReceived: 0, capabilities: "Model=squeezelite")
        #expect(Array(helo[0..<4]) == Array("HELO".utf8))
        #expect(helo[8] == 12)
        #expect(Array(helo[10..<16]) == [2, 1, 2, 3, 4, 5])
        #expect(Array(helo[32..<34]) == [0x40, 0])
        #expect(String(decoding: helo[(8 + 36)...], as: UTF8.self) == "Model=squeezelite")
    }

    @Test("The MAC: parsed, printed, made stably from a seed as a locally administered address")
    func mac() {
        #expect(SlimprotoMAC.parse("02:ab:CD:00:11:ff") == [2, 0xAB, 0xCD, 0, 0x11, 0xFF])
        #expect(SlimprotoMAC.parse("02:ab:cd:00:11") == nil)
        #expect(SlimprotoMAC.parse("02:ab:cd:00:11:fff") == nil)
        #expect(SlimprotoMAC.text([2, 0xAB, 0xCD, 0, 0x11, 0xFF]) == "02:ab:cd:00:11:ff")
    }
}
