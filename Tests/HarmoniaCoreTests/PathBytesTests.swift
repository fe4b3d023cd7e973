// PathBytes: the lossless string form of file names (specs/inputs.md, Names).
import HarmoniaCore
import Testing

@Suite("PathBytes")
struct PathBytesTests {
    @Test("UTF-8 names are the same string; every other byte string round-trips exactly")
    func roundTrip() {
        #expect(PathBytes.string(Array("Música/01 – Ärger.flac".utf8)) == "Música/01 – Ärger.flac")
        var cases: [[UInt8]] = [
            [0x61, 0xFF, 0x62],                   // a lone 0xFF
            [0xC3],                               // a truncated sequence
            [0xE2, 0x82],                         // truncated three-byte
            [0xC0, 0xAF],                         // overlong "/"
            [0xED, 0xA0, 0x80],                   // an encoded surrogate
            [0xF4, 0x8F, 0xBF, 0xBF],             // U+10FFFF itself: escaped too
            [0xF4, 0x8F, 0xBC, 0x80, 0x41],       // U+10FF00, then "A"
            Array(0x01...0xFF),                   // every byte but NUL
        ]
        // A deterministic spread of random byte strings.
        var state: UInt64 = 0x9E3779B97F4A7C15
        for _ in 0..<500 {
            var bytes: [UInt8] = []
            for _ in 0..<(Int(state % 12) + 1) {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                bytes.append(UInt8(truncatingIfNeeded: state >> 56) | 1)
            }
            cases.append(bytes)
        }
        for bytes in cases {
            #expect(PathBytes.bytes(PathBytes.string(bytes)) == bytes, "\(bytes)")
        }
        #expect(PathBytes.string([0x61, 0xFF]).unicodeScalars.map(\.value) == [0x61, 0x10FFFF])
    }

    @Test("withCString hands C the exact bytes")
    func cString() {
        let name = PathBytes.string([0x2F, 0x74, 0xFE])
        let bytes = PathBytes.withCString(name) { pointer in
            (0..<3).map { UInt8(bitPattern: pointer[$0]) } + [UInt8(bitPattern: pointer[3])]
        }
        #expect(bytes == [0x2F, 0x74, 0xFE, 0])
    }
}
