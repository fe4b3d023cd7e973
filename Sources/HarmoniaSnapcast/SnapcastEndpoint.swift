// SnapcastEndpoint — specs/snapcast.md §Address
import HarmoniaCore

/// Where a `SnapcastOutputAdapter` sends its PCM, and in what format:
/// `snapcast://HOST[:PORT][/?sampleformat=R:B:C&buffer=MS&lead=MS]`.
///
/// - `HOST`: snapserver's host (a name, an IPv4 address, or `[IPv6]`).
/// - `PORT`: its TCP source's port in server mode (default 4953, as snapserver's).
/// - `sampleformat`: the source's `sampleformat` (default `48000:16:2`);
///   bits 16 or 32.
/// - `buffer`: snapserver's `[stream] buffer` in ms (default 1000): what the
///   rooms' delay is, for the heard position.
/// - `lead`: how far ahead of snapserver's reads we keep its socket
///   (default 150 ms, 40…250).
///
/// Keep the `/` before `?` (as in snapserver's own source URLs). Unknown
/// parameters are refused, so a typo is not silently ignored.
public struct SnapcastEndpoint: Sendable, Equatable {
    public var host: String
    public var port: UInt16
    public var sampleRate: Int
    public var bits: Int
    public var channels: Int
    /// snapserver's buffer, milliseconds.
    public var bufferMilliseconds: Int
    /// How far ahead of snapserver's reads we keep the socket, milliseconds.
    public var leadMilliseconds: Int

    public static let defaultPort: UInt16 = 4953

    public init(host: String, port: UInt16 = SnapcastEndpoint.defaultPort, sampleRate: Int = 48000, bits: Int = 16,
                channels: Int = 2, bufferMilliseconds: Int = 1000, leadMilliseconds: Int = 150) {
        self.host = host
        self.port = port
        self.sampleRate = sampleRate
        self.bits = bits
        self.channels = channels
        self.bufferMilliseconds = bufferMilliseconds
        self.leadMilliseconds = leadMilliseconds
    }

    /// Bytes of one frame on the wire.
    public var bytesPerFrame: Int { channels * bits / 8 }

    /// The URL back, for messages.
    public var description: String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "snapcast://\(shownHost):\(port)/?sampleformat=\(sampleRate):\(bits):\(channels)&buffer=\(bufferMilliseconds)"
    }

    /// Parses `snapcast://HOST[:PORT][/][?k=v&...]`.
    /// - Throws: `invalidArgument` naming what is wrong.
    public init(url: String) throws(CoreError) {
        let scheme = "snapcast://"
        guard url.lowercased().hasPrefix(scheme) else {
            throw .invalidArgument("\(url): a Snapcast output is snapcast://HOST[:PORT][/?sampleformat=R:B:C&buffer=MS]")
        }
        var rest = Substring(url.dropFirst(scheme.count))
        var query = Substring("")
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        if rest.hasSuffix("/") { rest = rest.dropLast() }
        guard !rest.contains("/") else {
            throw .invalidArgument("\(url): no path is allowed after HOST:PORT (only /?parameters)")
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else { throw .invalidArgument("\(url): unclosed [ in the host") }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty {
                throw .invalidArgument("\(url): expected :PORT after the host")
            }
        } else if let colon = rest.lastIndex(of: ":") {
            host = rest[..<colon]
            portText = rest[rest.index(after: colon)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw .invalidArgument("\(url): the host is missing") }
        self.init(host: String(host))
        if let portText {
            guard let port = UInt16(portText), port > 0 else {
                throw .invalidArgument("\(url): the port must be 1…65535; got '\(portText)'")
            }
            self.port = port
        }
        for pair in query.split(separator: "&") where !pair.isEmpty {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(parts[0]), value = parts.count > 1 ? String(parts[1]) : ""
            switch key {
            case "sampleformat":
                let fields = value.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
                guard fields.count == 3, let rate = fields[0], let bits = fields[1], let channels = fields[2],
                      (8000...384_000).contains(rate), bits == 16 || bits == 32, (1...8).contains(channels) else {
                    throw .invalidArgument("\(url): sampleformat is RATE:BITS:CHANNELS (8000…384000, 16 or 32, 1…8); got '\(value)'")
                }
                sampleRate = rate
                self.bits = bits
                self.channels = channels
            case "buffer":
                guard let ms = Int(value), (20...60_000).contains(ms) else {
                    throw .invalidArgument("\(url): buffer is snapserver's buffer in ms (20…60000); got '\(value)'")
                }
                bufferMilliseconds = ms
            case "lead":
                guard let ms = Int(value), (40...250).contains(ms) else {
                    throw .invalidArgument("\(url): lead is 40…250 ms; got '\(value)'")
                }
                leadMilliseconds = ms
            default:
                throw .invalidArgument("\(url): unknown parameter '\(key)' (known: sampleformat, buffer, lead)")
            }
        }
    }
}
