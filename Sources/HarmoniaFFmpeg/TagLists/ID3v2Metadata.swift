// An ID3v2 tag's metadata as FFmpeg 5.1 reads it, for the library scan — specs/library.md §Scanner
//
// The scan reads a plain MP3 file's headers itself (MP3Headers); its tags
// must be exactly what FFmpeg's metadata dictionary would hold, since the
// same file played is described by FFmpeg. This follows libavformat/id3v2.c
// and libavutil/dict.c of the FFmpeg Debian 12 ships: text frames under
// their frame id (the first string only), TXXX under its description, COMM
// under its description or "comment", USLT as "lyrics-[DESC-]LANG", the
// first of a key kept (the dictionary ignores ASCII case), then the renames
// to FFmpeg's common keys and the ID3v2.3 date merge. Anything FFmpeg reads
// in another way — unsynchronisation, an extended header, a footer, frame
// flags, a numeric genre, a second tag — is refused (nil) and FFmpeg reads
// the file.

/// Pure functions; any thread.
enum ID3v2Metadata {
    /// What one ID3v2.3/2.4 tag gives FFmpeg's reader.
    struct Read {
        /// The metadata entries in FFmpeg's dictionary order.
        var entries: [(key: String, value: String)]
        /// The first attached picture FFmpeg would keep, if any.
        var picture: [UInt8]?
    }

    /// The tag whose 10-byte header is `header` and whose body (the bytes
    /// after the header, `header`'s size of them) is `body`; `file` reads
    /// the bytes after the tag where FFmpeg peeks past a frame (its check of
    /// a v2.4 frame's size), `bodyOffset` is where `body` starts in it.
    /// nil when FFmpeg would read the tag differently than modelled here.
    static func read(header: [UInt8], body: [UInt8], bodyOffset: Int64, file: any TagByteSource) -> Read? {
        guard header.count == 10, matchesHeader(header) else { return nil }
        let version = header[3], flags = header[5]
        // Unsynchronisation, an extended header or a footer: FFmpeg's to read.
        guard version == 3 || version == 4, flags & 0xD0 == 0 else { return nil }
        var dictionary = Dictionary()
        var picture: [UInt8]?
        var position = 0
        var left = body.count
        while left >= 10 {
            let id = Array(body[position..<position + 4])
            let raw = Int(body[position + 4..<position + 8].bigEndianValue)
            var length = raw
            if version == 4, raw > 0x7F {
                // FFmpeg takes a v2.4 size that is not syncsafe when the next frame says so.
                let next = bodyOffset + Int64(position + 10)
                if raw < left {
                    if checkTag(file, at: next + Int64(syncsafe(raw))) == 1 {
                        length = syncsafe(raw)
                    } else if checkTag(file, at: next + Int64(raw)) != 1 {
                        break
                    }
                } else {
                    length = syncsafe(raw)
                }
            }
            let frameFlags = body[position + 9]
            guard length <= 1 << 28 else { break }
            left -= 10 + length
            guard left >= 0 else { break }
            position += 10
            let data = body[position..<position + length]
            position += length
            if length == 0 { continue }
            if id[0] == 0 { break }  // padding
            let name = String(decoding: id, as: UTF8.self)
            let parsed = id[0] == UInt8(ascii: "T") || name == "USLT" || name == "COMM" || name == "APIC"
            guard parsed else { continue }
            // An id FFmpeg would read under another name, or a frame that is
            // unsynchronised, compressed, encrypted, grouped or with a data
            // length: FFmpeg reads each of these its own way.
            guard id.allSatisfy(isTagCharacter), frameFlags == 0 else { return nil }
            let frame = Array(data)
            if id[0] == UInt8(ascii: "T") {
                guard textFrame(name, frame, into: &dictionary) else { return nil }
            } else if name == "USLT" {
                lyricsFrame(frame, into: &dictionary)
            } else if name == "COMM" {
                commentFrame(frame, into: &dictionary)
            } else if picture == nil {
                picture = pictureFrame(frame)
            }
        }
        dictionary.rename(commonKeys)
        dictionary.mergeDate()
        return Read(entries: dictionary.entries.map { (String(decoding: $0.key, as: UTF8.self), String(decoding: $0.value, as: UTF8.self)) },
                    picture: picture)
    }

    /// FFmpeg's test for an ID3v2 header (`ff_id3v2_match`).
    static func matchesHeader(_ header: [UInt8]) -> Bool {
        header.count >= 10 && header.starts(with: Array("ID3".utf8)) && header[3] != 0xFF && header[4] != 0xFF
            && header[6..<10].allSatisfy { $0 < 0x80 }
    }

    /// The size a syncsafe header field gives: 7 bits a byte.
    static func syncsafe(_ raw: Int) -> Int {
        (raw & 0x7F) | (raw & 0x7F00) >> 1 | (raw & 0x7F_0000) >> 2 | (raw & 0x7F00_0000) >> 3
    }

    // MARK: - Frames

    /// A text frame: its first string under the frame id; TXXX under its description.
    /// False when FFmpeg would turn it into something else (an ID3v1 genre number).
    private static func textFrame(_ id: String, _ data: [UInt8], into dictionary: inout Dictionary) -> Bool {
        var reader = StringReader(data: data, position: 1, left: data.count - 1)
        let encoding = data[0]
        guard let first = reader.decode(encoding) else { return true }
        if id == "TCON" {
            // "(17)", "17", " +17": FFmpeg may replace it by a genre name.
            let text = first.drop { $0 == 0x20 || (0x09...0x0D).contains($0) }
            if let lead = text.first, lead == UInt8(ascii: "(") || lead == UInt8(ascii: "+")
                || lead == UInt8(ascii: "-") || (0x30...0x39).contains(lead) { return false }
        }
        if id == "TXXX" {
            guard let value = reader.decode(encoding) else { return true }
            dictionary.set(first, value, overwrite: false)
        } else if !first.isEmpty {
            dictionary.set(Array(id.utf8), first, overwrite: false)
        }
        return true
    }

    /// USLT: "lyrics-LANG" or "lyrics-DESC-LANG" (a later frame of the same key replaces it).
    private static func lyricsFrame(_ data: [UInt8], into dictionary: inout Dictionary) {
        guard data.count >= 4 else { return }
        let language = data[1..<4].prefix { $0 != 0 }
        var reader = StringReader(data: data, position: 4, left: data.count - 4)
        guard let description = reader.decode(data[0]), let text = reader.decode(data[0]) else { return }
        let key = Array("lyrics-".utf8) + (description.isEmpty ? [] : description + [UInt8(ascii: "-")]) + language
        dictionary.set(key, text, overwrite: true)
    }

    /// COMM: under its description, or "comment" without one.
    private static func commentFrame(_ data: [UInt8], into dictionary: inout Dictionary) {
        guard data.count >= 4 else { return }
        var reader = StringReader(data: data, position: 4, left: data.count - 4)
        guard let description = reader.decode(data[0]), let text = reader.decode(data[0]) else { return }
        dictionary.set(description.isEmpty ? Array("comment".utf8) : description, text, overwrite: false)
    }

    /// APIC: the picture's bytes when FFmpeg keeps it (a known image type).
    private static func pictureFrame(_ data: [UInt8]) -> [UInt8]? {
        guard data.count > 4 else { return nil }
        var left = data.count - 1
        // The MIME type, up to its NUL, which must come before the frame's end.
        guard let nul = data[1...].firstIndex(of: 0), nul - 1 + 1 < left else { return nil }
        let mime = Array(data[1..<nul])
        left -= nul  // the type and its NUL
        guard imageTypes.contains(where: { equalIgnoringASCIICase($0, mime) }) else { return nil }
        left -= 1  // picture type
        var reader = StringReader(data: data, position: data.count - left, left: left)
        guard reader.decode(data[0]) != nil, reader.left > 0 else { return nil }
        return Array(data[(data.count - reader.left)...])
    }

    /// The MIME types FFmpeg's ID3v2 reader accepts for a picture (`ff_id3v2_mime_tags`).
    private static let imageTypes = ["image/gif", "image/jpeg", "image/jpg", "image/png", "image/tiff", "image/bmp", "JPG", "PNG"]
        .map { Array($0.utf8) }

    /// FFmpeg's renames of ID3v2.3/2.4 frame ids, in the order it applies its three tables.
    private static let commonKeys: [[(String, String)]] = [
        [("TALB", "album"), ("TCOM", "composer"), ("TCON", "genre"), ("TCOP", "copyright"), ("TENC", "encoded_by"),
         ("TIT2", "title"), ("TLAN", "language"), ("TPE1", "artist"), ("TPE2", "album_artist"), ("TPE3", "performer"),
         ("TPOS", "disc"), ("TPUB", "publisher"), ("TRCK", "track"), ("TSSE", "encoder"), ("USLT", "lyrics")],
        [("TAL", "album"), ("TCO", "genre"), ("TCP", "compilation"), ("TT2", "title"), ("TEN", "encoded_by"),
         ("TP1", "artist"), ("TP2", "album_artist"), ("TP3", "performer"), ("TRK", "track")],
        [("TCMP", "compilation"), ("TDRC", "date"), ("TDRL", "date"), ("TDEN", "creation_time"), ("TSOA", "album-sort"),
         ("TSOP", "artist-sort"), ("TSOT", "title-sort"), ("TIT1", "grouping")],
    ]

    private static func isTagCharacter(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x30...0x39).contains(byte)
    }

    /// FFmpeg's `check_tag`: 1 when the 4 bytes at `offset` are zero or a frame id, 0 when not, -1 past the end.
    private static func checkTag(_ file: any TagByteSource, at offset: Int64) -> Int {
        guard let bytes = file.bytes(at: offset, count: 4) else { return -1 }
        return bytes.allSatisfy({ $0 == 0 }) || bytes.allSatisfy(isTagCharacter) ? 1 : 0
    }

    static func equalIgnoringASCIICase(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { asciiUpper($0) == asciiUpper($1) }
    }

    private static func asciiUpper(_ byte: UInt8) -> UInt8 {
        (0x61...0x7A).contains(byte) ? byte - 0x20 : byte
    }

    // MARK: - FFmpeg's string reading and dictionary

    /// FFmpeg's `decode_str`: one string of a frame in its encoding, to
    /// UTF-8, up to a NUL or `left` bytes; nil for a bad byte-order mark.
    private struct StringReader {
        let data: [UInt8]
        var position: Int
        var left: Int

        mutating func decode(_ encoding: UInt8) -> [UInt8]? {
            var out: [UInt8] = []
            switch encoding {
            case 0, 3:  // ISO-8859-1, UTF-8
                while left > 0 {
                    let byte = next()
                    left -= 1
                    if byte == 0 { break }
                    if encoding == 0, byte >= 0x80 {
                        out += [0xC0 | byte >> 6, 0x80 | byte & 0x3F]
                    } else {
                        out.append(byte)
                    }
                }
            case 1, 2:  // UTF-16 with a byte-order mark, UTF-16BE
                var littleEndian = false
                if encoding == 1 {
                    left -= 2
                    guard left >= 0 else { return nil }
                    let mark = UInt16(next()) << 8 | UInt16(next())
                    guard mark == 0xFFFE || mark == 0xFEFF else { return nil }
                    littleEndian = mark == 0xFFFE
                }
                func unit() -> UInt32 {
                    left -= 2
                    guard left >= 0 else { return 0 }
                    let a = UInt32(next()), b = UInt32(next())
                    return littleEndian ? b << 8 | a : a << 8 | b
                }
                var character: UInt32 = 1
                while left > 1 && character != 0 {
                    character = unit()
                    let high = character &- 0xD800
                    if high < 0x800 {
                        let low = unit() &- 0xDC00
                        if low > 0x3FF || high > 0x3FF { break }
                        character = low + (high << 10) + 0x10000
                    }
                    if character != 0, let scalar = Unicode.Scalar(character) {
                        UTF8.encode(scalar) { out.append($0) }
                    }
                }
                if left < 0 { left += 2 }
            default:
                break  // FFmpeg: an unknown encoding reads as an empty string
            }
            return out
        }

        private mutating func next() -> UInt8 {
            defer { position += 1 }
            return position < data.count ? data[position] : 0
        }
    }

    /// FFmpeg's AVDictionary as these calls fill it: keys unique without
    /// ASCII case; a replaced entry's slot takes the last entry and the new
    /// one is appended (`av_dict_set`).
    private struct Dictionary {
        var entries: [(key: [UInt8], value: [UInt8])] = []

        func index(of key: [UInt8]) -> Int? {
            entries.firstIndex { equalIgnoringASCIICase($0.key, key) }
        }

        mutating func set(_ key: [UInt8], _ value: [UInt8]?, overwrite: Bool) {
            if let at = index(of: key) {
                guard overwrite else { return }
                entries[at] = entries[entries.count - 1]
                entries.removeLast()
            }
            if let value { entries.append((key, value)) }
        }

        /// `ff_metadata_conv` with each table in turn: every entry re-set under its common key.
        mutating func rename(_ tables: [[(String, String)]]) {
            for table in tables {
                let renames = table.map { (Array($0.0.utf8), Array($0.1.utf8)) }
                var renamed = Dictionary()
                for entry in entries {
                    let key = renames.first { equalIgnoringASCIICase($0.0, entry.key) }?.1 ?? entry.key
                    renamed.set(key, entry.value, overwrite: true)
                }
                self = renamed
            }
        }

        /// ID3v2.3's TYER, TDAT and TIME joined into "date" (`merge_date`).
        mutating func mergeDate() {
            func dateField(_ name: String) -> [UInt8]? {
                guard let at = entries.firstIndex(where: { $0.key == Array(name.utf8) }) else { return nil }
                let value = entries[at].value
                return value.count == 4 && value.allSatisfy { (0x30...0x39).contains($0) } ? value : nil
            }
            guard let year = dateField("TYER") ?? dateField("TYE") else { return }
            var date = year
            set(Array("TYER".utf8), nil, overwrite: true)
            set(Array("TYE".utf8), nil, overwrite: true)
            if let day = dateField("TDAT") ?? dateField("TDA") {
                date += [UInt8(ascii: "-")] + day[2..<4] + [UInt8(ascii: "-")] + day[0..<2]
                set(Array("TDAT".utf8), nil, overwrite: true)
                set(Array("TDA".utf8), nil, overwrite: true)
                if let time = dateField("TIME") ?? dateField("TIM") {
                    date += [UInt8(ascii: " ")] + time[0..<2] + [UInt8(ascii: ":")] + time[2..<4]
                    set(Array("TIME".utf8), nil, overwrite: true)
                    set(Array("TIM".utf8), nil, overwrite: true)
                }
            }
            set(Array("date".utf8), date, overwrite: true)
        }
    }
}
