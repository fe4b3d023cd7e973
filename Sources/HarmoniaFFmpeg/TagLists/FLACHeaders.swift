// A FLAC file's headers without FFmpeg, for the library scan — specs/library.md §Scanner
//
// A plain FLAC file is "fLaC", metadata blocks (STREAMINFO first), then
// frames. STREAMINFO gives the rate, channels, sample size and exact length;
// VORBIS_COMMENT the tags; PICTURE the cover. That is everything the scan's
// header read (`FFmpegTagReaderAdapter.readHeaders`) gives, read here with a
// few `pread`s instead of FFmpeg's probe, demuxer and parser setup, which
// were most of a FLAC file's cost in a scan.
import Foundation
import HarmoniaCore

/// Pure functions over a byte source; any thread.
enum FLACHeaders {
    /// The tags and stream facts of the FLAC file at `path`, as FFmpeg's
    /// header read gives them; nil when the file is not a plain, sound FLAC
    /// file (an ID3 tag before "fLaC", an unknown length, a malformed or
    /// unusual block, no frame after the blocks): FFmpeg then reads it and
    /// gives any error.
    static func read(path: String) -> (tags: TagBundle, stream: StreamInfo)? {
        guard let file = TagFileSource(path: path) else { return nil }
        return read(from: file)
    }

    static func read(from source: any TagByteSource) -> (tags: TagBundle, stream: StreamInfo)? {
        guard source.bytes(at: 0, count: 4) == Array("fLaC".utf8) else { return nil }
        var offset: Int64 = 4
        var streamInfo: [UInt8]?, comments: [UInt8]?, picture: [UInt8]?
        var last = false
        for _ in 0..<VorbisCommentParser.maxBlocks where !last {
            guard let header = source.bytes(at: offset, count: 4) else { return nil }
            last = header[0] & 0x80 != 0
            let type = header[0] & 0x7F
            let length = Int(header[1...3].bigEndianValue)
            offset += 4
            switch type {
            case 0:
                guard streamInfo == nil, offset == 8, length == 34 else { return nil }
                streamInfo = source.bytes(at: offset, count: length)
            case 4:
                guard comments == nil, let block = source.bytes(at: offset, count: length) else { return nil }
                comments = block
            case 6 where picture == nil:
                guard let block = source.bytes(at: offset, count: length) else { return nil }
                picture = block
            case 127:
                return nil
            default:
                guard streamInfo != nil else { return nil }  // STREAMINFO comes first
            }
            offset += Int64(length)
        }
        // A frame follows the last block: its sync code (14 bits, then a 0 bit).
        guard last, let streamInfo, let sync = source.bytes(at: offset, count: 2),
              sync[0] == 0xFF, sync[1] & 0xFE == 0xF8 else { return nil }

        let rate = Int32(streamInfo[10]) << 12 | Int32(streamInfo[11]) << 4 | Int32(streamInfo[12] >> 4)
        let channels = Int(streamInfo[12] >> 1 & 0x07) + 1
        let bits = Int((streamInfo[12] & 0x01) << 4 | streamInfo[13] >> 4) + 1
        let frames = Int64(streamInfo[13] & 0x0F) << 32 | Int64(streamInfo[14...17].bigEndianValue)
        guard rate > 0, rate <= FFmpegInput.maxSampleRate,
              let length = FFmpegDecodeSession.plausibleLength(frames, sampleRate: rate) else { return nil }

        var entries: [(key: String, value: String)] = []
        if let comments {
            guard let read = Self.metadataEntries(comments) else { return nil }
            entries = read
        }
        var tags = FFmpegTagReaderAdapter.tags(from: MetadataLookup(entries))
        if let comments { VorbisCommentParser.parse(comments)?.apply(to: &tags) }
        if let picture {
            guard let data = Self.pictureData(picture) else { return nil }
            tags.artworkData = data
        }
        let size = source.size
        let bitrate = FFmpegDecodeSession.bitrate(fileBytes: size, frames: length, sampleRate: rate)
        let info = StreamInfo(totalFrames: length, sampleRate: Double(rate), channels: channels, bitDepth: bits,
                              codec: "flac", bitrate: bitrate.flatMap(FFmpegDecodeSession.kilobits))
        FFmpegTagReaderAdapter.describe(&tags, stream: info, encoding: "lossless", fileSize: size > 0 ? Int(size) : nil)
        return (tags, info)
    }

    /// The comments as FFmpeg's metadata holds them: keys in capitals, a
    /// repeated key's values joined with ";", empty keys and values left
    /// out. nil for a malformed block, or one holding what FFmpeg turns into
    /// something else than metadata (a picture, chapters): FFmpeg reads those.
    static func metadataEntries(_ block: [UInt8]) -> [(key: String, value: String)]? {
        var cursor = ByteCursor(block)
        guard let vendorLength = cursor.u32le(), cursor.skip(Int(vendorLength)), let count = cursor.u32le(),
              Int(count) <= NativeTagLists.maxEntries else { return nil }
        var entries: [(key: String, value: String)] = []
        var place: [String: Int] = [:]
        for _ in 0..<Int(count) {
            guard let length = cursor.u32le(), let comment = cursor.take(Int(length)) else { return nil }
            guard let equals = comment.firstIndex(of: UInt8(ascii: "=")) else { continue }
            guard let name = comment[comment.startIndex..<equals].asciiText else { return nil }
            let key = name.uppercased()
            guard key != "METADATA_BLOCK_PICTURE", !key.hasPrefix("CHAPTER") else { return nil }
            let value = utf8Text(comment[(equals + 1)...])
            guard !key.isEmpty, !value.isEmpty else { continue }
            if let at = place[key] {
                entries[at].value += ";" + value
            } else {
                place[key] = entries.count
                entries.append((key, value))
            }
        }
        return entries
    }

    /// The image bytes of a PICTURE block (type, MIME type, description,
    /// dimensions, then the data); nil when malformed or empty.
    static func pictureData(_ block: [UInt8]) -> Data? {
        var cursor = ByteCursor(block)
        guard cursor.skip(4), let mimeLength = cursor.u32be(), cursor.skip(Int(mimeLength)),
              let descriptionLength = cursor.u32be(), cursor.skip(Int(descriptionLength)), cursor.skip(16),
              let dataLength = cursor.u32be(), dataLength > 0, let data = cursor.take(Int(dataLength)) else { return nil }
        return Data(data)
    }
}
