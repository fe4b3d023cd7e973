// Request lines — specs/mpd-protocol.md §Request lines
//
// Framing (lines of at most `maxLineBytes`) and MPD's tokenizer rules
// (src/util/Tokenizer.cxx, src/command/AllCommands.cxx, src/client/Read.cxx,
// src/client/Process.cxx), checked against MPD 0.23.12.

/// One command: its name and its arguments (quotes removed, escapes applied).
public struct MPDRequest: Sendable, Equatable, Hashable {
    public var command: String
    public var arguments: [String]

    public init(_ command: String, _ arguments: [String] = []) {
        self.command = command
        self.arguments = arguments
    }
}

/// What a request line comes to.
public enum MPDParsedLine: Sendable, Equatable {
    case request(MPDRequest)
    /// Answered with this ACK; the connection stays (a bad argument token).
    case error(MPDError)
    /// Answered with this ACK, then the connection closes: the client does
    /// not speak MPD (a bad character in the command name).
    case errorThenClose(MPDError)
    /// Closed without an answer: the line does not start with a lowercase
    /// ASCII letter (an empty line, a stray HTTP request).
    case close
}

extension MPDRequest {
    /// Parses one line (without its newline) as MPD does:
    /// - the line ends at its first NUL byte; trailing bytes ≤ 0x20 are dropped;
    /// - it must start with a lowercase ASCII letter, or the connection closes silently;
    /// - the command name is a letter then letters, digits or `_`, up to a
    ///   byte ≤ 0x20 (else `ACK [5@0] {} Invalid word character`, then close);
    /// - arguments are separated by bytes 0x01…0x20; a quoted argument is
    ///   `"…"` where `\` takes the next byte as it is, and must be followed by
    ///   a separator or the end (`Space expected after closing '"'`); an
    ///   unquoted one is bytes > 0x20 other than `"` and `'`
    ///   (`Invalid unquoted character`); `Missing closing '"'`;
    /// - at most `maxArguments` − 1 arguments: a line with `maxArguments`
    ///   is refused (`ACK [2@0] {} Too many arguments`), as MPD's COMMAND_ARGV_MAX check.
    /// Argument bytes become Strings as UTF-8 (invalid sequences replaced).
    public static func parse(line raw: some Collection<UInt8>, maxArguments: Int = MPDProtocol.maxArguments) -> MPDParsedLine {
        let line = stripped(raw)
        guard let first = line.first, first >= 0x61 && first <= 0x7A else { return .close }

        var i = 0
        let n = line.count
        // The command name.
        while i < n && line[i] > 0x20 {
            let c = line[i]
            guard isAlphaNumeric(c) || c == 0x5F else {
                return .errorThenClose(MPDError(.unknown, "Invalid word character", command: ""))
            }
            i += 1
        }
        let command = String(decoding: line[0..<i], as: UTF8.self)
        skipSeparators(line, &i)

        var arguments: [String] = []
        while true {
            if arguments.count == maxArguments {
                return .error(MPDError(.arg, "Too many arguments", command: ""))
            }
            guard i < n else { break }
            var bytes: [UInt8] = []
            if line[i] == 0x22 {  // "
                i += 1
                while true {
                    guard i < n else { return .error(MPDError(.unknown, "Missing closing '\"'", command: "")) }
                    var c = line[i]
                    if c == 0x22 { break }
                    if c == 0x5C {  // backslash: the next byte as it is
                        i += 1
                        guard i < n else { return .error(MPDError(.unknown, "Missing closing '\"'", command: "")) }
                        c = line[i]
                    }
                    bytes.append(c)
                    i += 1
                }
                i += 1  // past the closing quote
                if i < n && line[i] > 0x20 {
                    return .error(MPDError(.unknown, "Space expected after closing '\"'", command: ""))
                }
            } else {
                while i < n && line[i] > 0x20 {
                    let c = line[i]
                    guard c != 0x22 && c != 0x27 else {
                        return .error(MPDError(.unknown, "Invalid unquoted character", command: ""))
                    }
                    bytes.append(c)
                    i += 1
                }
            }
            arguments.append(String(decoding: bytes, as: UTF8.self))
            skipSeparators(line, &i)
        }
        return .request(MPDRequest(command, arguments))
    }

    private static func skipSeparators(_ line: [UInt8], _ i: inout Int) {
        while i < line.count && line[i] <= 0x20 { i += 1 }
    }
}

@inline(__always) func isAlphaNumeric(_ c: UInt8) -> Bool {
    (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A)
}

/// Splits a byte stream into lines, bounded: bytes are appended as they are
/// read; complete lines are taken out in order. Not thread-safe (one reader).
public struct MPDLineBuffer: Sendable {
    public enum Event: Sendable, Equatable {
        /// A line, without its `\n`.
        case line([UInt8])
        /// More than `maxLineBytes` without a newline: the connection must close.
        case tooLong
    }

    public let maxLineBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0
    /// Where the search for the next newline resumes (bytes before it have none).
    private var scanned = 0

    public init(maxLineBytes: Int = MPDProtocol.defaultMaxLineBytes) {
        self.maxLineBytes = maxLineBytes
    }

    /// Bytes held that are not yet a line.
    public var pendingBytes: Int { buffer.count - start }

    public mutating func append(_ bytes: some Collection<UInt8>) {
        if start > 0 && start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 65_536)
            scanned -= start
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The next complete line, `.tooLong` once the unfinished line passes the
    /// limit (then nothing more: the caller closes), or nil: read more.
    public mutating func next() -> Event? {
        if let newline = buffer[scanned...].firstIndex(of: 0x0A) {
            let line = Array(buffer[start..<newline])
            start = newline + 1
            scanned = start
            if start > 65_536 && start * 2 > buffer.count {  // compact now and then
                buffer.removeFirst(start)
                start = 0
                scanned = 0
            }
            return line.count > maxLineBytes ? .tooLong : .line(line)
        }
        scanned = buffer.count
        return buffer.count - start > maxLineBytes ? .tooLong : nil
    }
}
