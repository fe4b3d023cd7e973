// The slimproto wire format: frames from the server read, frames to it
// written — specs/slimproto.md §Frames
//
// Pure: no socket, no clock. Every number from the server is checked before
// it is used; a frame that does not parse is a `SlimprotoCommand.malformed`
// with a one-line reason, never a trap.
import HarmoniaCore

/// One frame from the server, decoded.
public enum SlimprotoCommand: Equatable, Sendable {
    /// `strm`: start, stop, pause, unpause, flush, skip, status request.
    case stream(StreamRequest)
    /// `audg`: the output gain, linear (16.16 fixed point / 65536), left and right.
    case gain(left: Double, right: Double)
    /// `aude`: output enabled (`true`) or disabled (muted: squeezelite turns its output off).
    case enableOutput(Bool)
    /// `setd`: a player setting; id 0 is the name (`data` empty: the server asks for it).
    case setting(id: UInt8, data: [UInt8])
    /// `serv`: connect to another server (IPv4, host byte order as dotted text).
    case switchServer(address: String)
    /// A frame that needs no action: `vers`, `cont`, `codc`, the display
    /// and visualiser frames (`grfb`, `grfe`, `grfd`, `grfs`, `grfg`, `vfdc`, `visu`, …).
    case ignored(opcode: String)
    /// An opcode we do not know: logged once, skipped.
    case unknown(opcode: String)
    /// A known opcode whose payload does not parse.
    case malformed(String)
}

/// `strm`'s fixed 24 bytes and the HTTP request after them.
public struct StreamRequest: Equatable, Sendable {
    /// `s` start, `p` pause, `u` unpause, `q` stop, `t` status, `f` flush, `a` skip ahead.
    public var command: UInt8
    /// '0' wait for `u`, '1' start at the threshold, '2'/'3' as 0/1 after the server's `cont`.
    public var autostart: UInt8
    /// 'f' FLAC, 'm' MP3, 'o' Ogg Vorbis, 'u' Opus, 'a' AAC, 'l' ALAC, 'p' PCM, '?' unknown.
    public var format: UInt8
    public var pcmSampleSize: UInt8
    public var pcmSampleRate: UInt8
    public var pcmChannels: UInt8
    public var pcmEndianness: UInt8
    /// Stream bytes (KiB) before the buffer counts as ready.
    public var threshold: UInt8
    public var flags: UInt8
    /// Tenths of a second of decoded audio before output starts.
    public var outputThreshold: UInt8
    /// ReplayGain (16.16) for `s`; milliseconds for `p`/`a`; jiffies for `u`;
    /// the server's timestamp for `t`.
    public var replayGain: UInt32
    public var serverPort: UInt16
    /// IPv4 address, 0: the slimproto server's own address.
    public var serverIP: UInt32
    /// The HTTP request to send (request line and headers), as bytes.
    public var httpRequest: [UInt8]

    /// squeezelite's rates by `pcmSampleRate` code, from '0'; 0 for '?' (from a header).
    static let pcmRates = [11025, 22050, 32000, 44100, 48000, 8000, 12000, 16000, 24000, 96000, 88200, 176400,
                           192000, 352800, 384000, 0, 705600, 768000]

    /// The raw PCM format its four PCM fields give for format `p`, as
    /// squeezelite reads them (size '0'–'3': 8–32 bits; rate: an index into
    /// squeezelite's table; channels '1' or '2'; endianness '0' big, '1'
    /// little); nil when any field is '?' (the stream's WAV or AIFF header
    /// says). A field outside those: `.failure` with the reason.
    public var rawPCMFormat: Result<RawPCMFormat?, StreamFieldError> {
        let fields = [pcmSampleSize, pcmSampleRate, pcmChannels, pcmEndianness]
        if fields.contains(UInt8(ascii: "?")) { return .success(nil) }
        guard (UInt8(ascii: "0")...UInt8(ascii: "3")).contains(pcmSampleSize) else {
            return .failure(StreamFieldError("PCM sample size code \(SlimprotoFrames.printable(pcmSampleSize)) is not '0'-'3'"))
        }
        let rateIndex = Int(pcmSampleRate) - Int(UInt8(ascii: "0"))
        guard rateIndex >= 0, rateIndex < Self.pcmRates.count, Self.pcmRates[rateIndex] > 0 else {
            return .failure(StreamFieldError("PCM sample rate code \(SlimprotoFrames.printable(pcmSampleRate)) is not a rate"))
        }
        guard pcmChannels == UInt8(ascii: "1") || pcmChannels == UInt8(ascii: "2") else {
            return .failure(StreamFieldError("PCM channels code \(SlimprotoFrames.printable(pcmChannels)) is not '1' or '2'"))
        }
        guard pcmEndianness == UInt8(ascii: "0") || pcmEndianness == UInt8(ascii: "1") else {
            return .failure(StreamFieldError("PCM endianness code \(SlimprotoFrames.printable(pcmEndianness)) is not '0' or '1'"))
        }
        let format = RawPCMFormat(bitsPerSample: 8 * (Int(pcmSampleSize - UInt8(ascii: "0")) + 1), sampleRate: Self.pcmRates[rateIndex],
                                  channels: Int(pcmChannels - UInt8(ascii: "0")), bigEndian: pcmEndianness == UInt8(ascii: "0"))
        return format.map { .success($0) } ?? .failure(StreamFieldError("PCM fields out of range"))
    }

    /// The path of the request line (`GET /path HTTP/1.0`), nil when there is none.
    public var requestPath: String? {
        let lineEnd = httpRequest.firstIndex(where: { $0 == 0x0D || $0 == 0x0A }) ?? httpRequest.endIndex
        let parts = String(decoding: httpRequest[..<lineEnd], as: UTF8.self).split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count >= 2, parts[0] == "GET", parts[1].hasPrefix("/"),
              parts[1].utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else { return nil }
        return String(parts[1])
    }
}

/// A `strm` field the player cannot use: the reason, for STMn's log line.
public struct StreamFieldError: Error, Equatable, Sendable {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
}

/// The codec of server frames: 2-byte big-endian length (opcode included),
/// 4-byte opcode, payload.
public enum SlimprotoFrames {
    /// Largest frame a server can send: its length field is 16 bits.
    public static let maximumServerFrame = 2 + 65_535

    /// Display, visualiser and firmware frames a headless player ignores.
    static let ignoredOpcodes: Set<String> = ["vers", "cont", "codc", "vfdc", "grfb", "grfe", "grfd", "grfs", "grfg",
                                              "visu", "ledc", "knob", "body", "rhex", "i2cc", "bdac", "upgr", "updn", "test"]

    /// Decodes one frame's opcode and payload (without its length field).
    public static func decode(opcode: [UInt8], payload: ArraySlice<UInt8>) -> SlimprotoCommand {
        guard opcode.count == 4, opcode.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else {
            return .malformed("an opcode that is not 4 printable bytes")
        }
        let name = String(decoding: opcode, as: UTF8.self)
        var reader = ByteReader(payload)
        switch name {
        case "strm":
            guard payload.count >= 24 else { return .malformed("strm of \(payload.count) bytes (24 at least)") }
            var request = StreamRequest(command: reader.u8(), autostart: reader.u8(), format: reader.u8(),
                                        pcmSampleSize: reader.u8(), pcmSampleRate: reader.u8(), pcmChannels: reader.u8(),
                                        pcmEndianness: reader.u8(), threshold: reader.u8(), flags: 0, outputThreshold: 0,
                                        replayGain: 0, serverPort: 0, serverIP: 0, httpRequest: [])
            _ = reader.u8()  // spdif enable
            _ = reader.u8()  // transition period
            _ = reader.u8()  // transition type
            request.flags = reader.u8()
            request.outputThreshold = reader.u8()
            _ = reader.u8()  // slaves
            request.replayGain = reader.u32()
            request.serverPort = reader.u16()
            request.serverIP = reader.u32()
            request.httpRequest = reader.rest()
            guard "spuqtfa".utf8.contains(request.command) else {
                return .malformed("strm command \(printable(request.command)) (not s, p, u, q, t, f or a)")
            }
            return .stream(request)
        case "audg":
            guard payload.count >= 18 else { return .malformed("audg of \(payload.count) bytes (18 at least)") }
            _ = reader.u32()
            _ = reader.u32()  // the old gains: superseded by the 16.16 ones
            let adjust = reader.u8()
            _ = reader.u8()  // preamp
            let left = reader.u32(), right = reader.u32()
            // adjust 0: fixed level (digital volume off), as squeezelite.
            guard adjust != 0 else { return .gain(left: 1, right: 1) }
            return .gain(left: Double(left) / 65_536, right: Double(right) / 65_536)
        case "aude":
            guard payload.count >= 2 else { return .malformed("aude of \(payload.count) bytes (2 at least)") }
            return .enableOutput(reader.u8() != 0)
        case "setd":
            guard payload.count >= 1 else { return .malformed("setd with no id") }
            let id = reader.u8()
            return .setting(id: id, data: reader.rest())
        case "serv":
            guard payload.count >= 4 else { return .malformed("serv of \(payload.count) bytes (4 at least)") }
            let ip = reader.u32()
            guard ip != 0, ip != 1 else { return .malformed("serv to address \(ip) (SqueezeNetwork or none)") }
            return .switchServer(address: dotted(ip))
        default:
            if ignoredOpcodes.contains(name) { return .ignored(opcode: name) }
            return .unknown(opcode: name)
        }
    }

    /// An IPv4 address in network order as a 32-bit number, dotted.
    public static func dotted(_ ip: UInt32) -> String {
        "\(ip >> 24).\((ip >> 16) & 0xFF).\((ip >> 8) & 0xFF).\(ip & 0xFF)"
    }

    static func printable(_ byte: UInt8) -> String {
        byte >= 0x21 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "0x" + String(byte, radix: 16)
    }

    // MARK: Frames to the server: 4-byte opcode, 4-byte big-endian length, payload

    /// A client frame.
    public static func clientFrame(_ opcode: String, _ payload: [UInt8]) -> [UInt8] {
        var bytes = Array(opcode.utf8.prefix(4))
        append(UInt32(payload.count), to: &bytes)
        return bytes + payload
    }

    /// HELO: device 12 (squeezelite), the MAC, the reconnect flag (0x4000 in
    /// the channel list), the capabilities text.
    public static func helo(mac: [UInt8], reconnect: Bool, bytesReceived: UInt64, capabilities: String) -> [UInt8] {
        var payload: [UInt8] = [12, 0]
        payload += mac.count == 6 ? mac : [UInt8](repeating: 0, count: 6)
        payload += [UInt8](repeating: 0, count: 16)  // uuid
        append(UInt16(reconnect ? 0x4000 : 0), to: &payload)
        append(UInt32(truncatingIfNeeded: bytesReceived >> 32), to: &payload)
        append(UInt32(truncatingIfNeeded: bytesReceived), to: &payload)
        payload += [0x65, 0x6E]  // language "en"
        payload += Array(capabilities.utf8)
        return clientFrame("HELO", payload)
    }

    /// What a STAT frame reports besides its event code.
    public struct Status: Equatable, Sendable {
        public var streamBufferSize: UInt32 = 0
        public var streamBufferFullness: UInt32 = 0
        public var bytesReceived: UInt64 = 0
        public var jiffies: UInt32 = 0
        public var outputBufferSize: UInt32 = 0
        public var outputBufferFullness: UInt32 = 0
        /// From the heard position.
        public var elapsedMilliseconds: UInt32 = 0
        public var serverTimestamp: UInt32 = 0
        public init() {}
    }

    /// STAT: the event (`STMt`, `STMs`, …) and the status, 53 bytes.
    public static func stat(_ event: String, _ status: Status) -> [UInt8] {
        var payload = Array(event.utf8.prefix(4))
        payload += [0, 0, 0]  // crlf count, MAS initialised, MAS mode
        append(status.streamBufferSize, to: &payload)
        append(status.streamBufferFullness, to: &payload)
        append(UInt32(truncatingIfNeeded: status.bytesReceived >> 32), to: &payload)
        append(UInt32(truncatingIfNeeded: status.bytesReceived), to: &payload)
        append(UInt16(0xFFFF), to: &payload)  // signal strength: wired
        append(status.jiffies, to: &payload)
        append(status.outputBufferSize, to: &payload)
        append(status.outputBufferFullness, to: &payload)
        append(status.elapsedMilliseconds / 1000, to: &payload)
        append(UInt16(0), to: &payload)  // voltage
        append(status.elapsedMilliseconds, to: &payload)
        append(status.serverTimestamp, to: &payload)
        append(UInt16(0), to: &payload)  // error code
        return clientFrame("STAT", payload)
    }

    /// SETD id 0: the player's name, NUL-terminated.
    public static func setdName(_ name: String) -> [UInt8] {
        clientFrame("SETD", [0] + Array(name.utf8.prefix(64)) + [0])
    }

    /// RESP: the stream's HTTP response headers.
    public static func resp(_ headers: String) -> [UInt8] { clientFrame("RESP", Array(headers.utf8)) }

    /// META: ICY metadata (`StreamTitle='…';`).
    public static func meta(_ text: String) -> [UInt8] { clientFrame("META", Array(text.utf8.prefix(4096))) }

    /// DSCO: the stream connection ended; 0 closed normally, 1 reset, 2 by the remote end, 3 unreachable, 4 timeout.
    public static func dsco(reason: UInt8) -> [UInt8] { clientFrame("DSCO", [reason]) }

    static func append(_ value: UInt32, to bytes: inout [UInt8]) {
        bytes += [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    static func append(_ value: UInt16, to bytes: inout [UInt8]) {
        bytes += [UInt8(value >> 8), UInt8(value & 0xFF)]
    }
}

/// Splits the server's byte stream into frames. Holds at most one frame
/// (`SlimprotoFrames.maximumServerFrame` bytes) beyond what it was given:
/// memory is bounded whatever the server sends. One thread.
public struct SlimprotoFrameReader {
    private var buffer: [UInt8] = []
    private var head = 0

    public init() {}

    /// Adds received bytes.
    public mutating func append(_ bytes: some Collection<UInt8>) {
        if head > 0 && head == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            head = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next whole frame, or nil until more bytes come. A length below 4
    /// (no room for the opcode) is a malformed frame; its bytes are skipped.
    public mutating func next() -> SlimprotoCommand? {
        guard buffer.count - head >= 2 else { return compact() }
        let length = Int(buffer[head]) << 8 | Int(buffer[head + 1])
        guard buffer.count - head >= 2 + length else { return compact() }
        defer { head += 2 + length }
        guard length >= 4 else { return .malformed("a frame of length \(length) (4 at least: the opcode)") }
        let opcode = Array(buffer[(head + 2)..<(head + 6)])
        return SlimprotoFrames.decode(opcode: opcode, payload: buffer[(head + 6)..<(head + 2 + length)])
    }

    /// Bytes held for a frame not yet whole.
    public var pending: Int { buffer.count - head }

    private mutating func compact() -> SlimprotoCommand? {
        if head > 0 {
            buffer.removeSubrange(0..<head)
            head = 0
        }
        return nil
    }
}

/// Big-endian reads from a slice whose length the caller checked.
struct ByteReader {
    private let bytes: ArraySlice<UInt8>
    private var index: Int

    init(_ bytes: ArraySlice<UInt8>) {
        self.bytes = bytes
        self.index = bytes.startIndex
    }

    mutating func u8() -> UInt8 {
        guard index < bytes.endIndex else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func u16() -> UInt16 { UInt16(u8()) << 8 | UInt16(u8()) }

    mutating func u32() -> UInt32 { UInt32(u16()) << 16 | UInt32(u16()) }

    mutating func rest() -> [UInt8] {
        defer { index = bytes.endIndex }
        return Array(bytes[index...])
    }
}
