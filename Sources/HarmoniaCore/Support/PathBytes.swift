// PathBytes — specs/inputs.md §Inputs (Names)
//
// File names on Linux are bytes; a Swift String is Unicode. This is the one
// lossless mapping between the two, so that a name holding bytes that are
// not UTF-8 (0xFF, Latin-1 names) is still found.

/// The lossless string form of a file name (or any byte string).
///
/// Valid UTF-8 maps to the same characters. Every byte that is not part of
/// valid UTF-8 becomes the code point U+10FF00 + byte (Unicode's last private
/// use block), and so do the bytes of a character already in U+10FF00…U+10FFFF,
/// so `bytes(string(b)) == b` for every byte string `b`. A name that is
/// plain UTF-8 (nearly all) is the same string either way.
///
/// Pure functions; any thread.
public enum PathBytes {
    /// The code point standing for byte 0: U+10FF00.
    static let escapeBase: UInt32 = 0x10FF00

    /// The lossless string for `bytes` (which should not contain NUL).
    public static func string<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        // Nearly every name: valid UTF-8 with no byte 0xF4 (which every
        // scalar from U+100000 on, escapes included, starts with) is the
        // same string either way, decoded at once.
        if !bytes.contains(0xF4), let plain = String(validating: bytes, as: UTF8.self) { return plain }
        var scalars = String.UnicodeScalarView()
        var parser = Unicode.UTF8.ForwardParser()
        var iterator = bytes.makeIterator()
        var remaining = bytes[...]
        loop: while true {
            switch parser.parseScalar(from: &iterator) {
            case .valid(let encoded):
                let scalar = Unicode.UTF8.decode(encoded)
                if scalar.value >= escapeBase {
                    for byte in remaining.prefix(encoded.count) { scalars.append(escape(byte)) }
                } else {
                    scalars.append(scalar)
                }
                remaining = remaining.dropFirst(encoded.count)
            case .error(let length):
                for byte in remaining.prefix(length) { scalars.append(escape(byte)) }
                remaining = remaining.dropFirst(length)
            case .emptyInput:
                break loop
            }
        }
        return String(scalars)
    }

    /// The lossless string for a NUL-terminated C string (argv, readdir).
    public static func string(cString: UnsafePointer<CChar>) -> String {
        var count = 0
        while cString[count] != 0 { count += 1 }
        return cString.withMemoryRebound(to: UInt8.self, capacity: count) {
            string(UnsafeBufferPointer(start: $0, count: count))
        }
    }

    /// The bytes `string` stands for: the inverse of `string(_:)`.
    public static func bytes(_ string: String) -> [UInt8] {
        // No byte 0xF4: no scalar from U+100000 on, so no escape: the UTF-8 as it is.
        if !string.utf8.contains(0xF4) { return Array(string.utf8) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(string.utf8.count)
        for scalar in string.unicodeScalars {
            if let byte = byte(standingFor: scalar) {
                bytes.append(byte)
            } else {
                bytes.append(contentsOf: String(scalar).utf8)
            }
        }
        return bytes
    }

    /// Calls `body` with the NUL-terminated bytes `string` stands for, for a
    /// C call that takes a path (`stat`, `open`, `avio_open2`).
    public static func withCString<T, E: Error>(_ string: String, _ body: (UnsafePointer<CChar>) throws(E) -> T) throws(E) -> T {
        var bytes = bytes(string)
        bytes.append(0)
        return try bytes.withUnsafeBufferPointer { buffer throws(E) -> T in
            try buffer.withMemoryRebound(to: CChar.self) { chars throws(E) -> T in try body(chars.baseAddress!) }
        }
    }

    /// The byte an escape code point stands for, nil for any other scalar.
    public static func byte(standingFor scalar: Unicode.Scalar) -> UInt8? {
        scalar.value >= escapeBase ? UInt8(scalar.value - escapeBase) : nil
    }

    private static func escape(_ byte: UInt8) -> Unicode.Scalar {
        Unicode.Scalar(escapeBase + UInt32(byte))!
    }
}
