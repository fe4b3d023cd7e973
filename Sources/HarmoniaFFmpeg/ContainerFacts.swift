// ContainerFacts: what a container's own headers declare that FFmpeg does not
// pass on, read from the raw bytes. Used to tell a complete file from a
// truncated one, and for an MP4 track's exact length (its edit list's
// duration is only as fine as the movie timescale).

enum ContainerFacts {
    /// Frames a RIFF/WAVE file's `data` chunk declares (size / block align),
    /// or nil when it has none or a placeholder size (0 or 0xFFFFFFFF, as
    /// streaming writers leave it).
    static func wavDeclaredFrames(header bytes: [UInt8]) -> Int64? {
        guard bytes.count >= 12, bytes[0..<4].elementsEqual("RIFF".utf8), bytes[8..<12].elementsEqual("WAVE".utf8) else {
            return nil
        }
        var offset = 12
        var blockAlign: UInt32 = 0
        while offset + 8 <= bytes.count {
            let id = bytes[offset..<offset + 4]
            let size = littleEndian(bytes, offset + 4)
            if id.elementsEqual("fmt ".utf8), offset + 8 + 14 <= bytes.count {
                blockAlign = UInt32(bytes[offset + 8 + 12]) | UInt32(bytes[offset + 8 + 13]) << 8
            } else if id.elementsEqual("data".utf8) {
                guard blockAlign > 0, size != 0, size != 0xFFFF_FFFF else { return nil }
                return Int64(size / blockAlign)
            }
            offset += 8 + Int(size) + Int(size & 1)
        }
        return nil
    }

    /// Whether the last complete Ogg page in `tail` (the file's last bytes)
    /// carries the end-of-stream flag. nil when no page header is found.
    static func oggEndsWithEndOfStream(tail bytes: [UInt8]) -> Bool? {
        var index = bytes.count - 27
        while index >= 0 {
            if bytes[index] == 0x4F, bytes[index + 1] == 0x67, bytes[index + 2] == 0x67, bytes[index + 3] == 0x53,
               bytes[index + 4] == 0 {
                let segments = Int(bytes[index + 26])
                let tableEnd = index + 27 + segments
                if tableEnd <= bytes.count {
                    let bodySize = bytes[(index + 27)..<tableEnd].reduce(0) { $0 + Int($1) }
                    if tableEnd + bodySize <= bytes.count {  // a complete page
                        return bytes[index + 5] & 0x04 != 0
                    }
                }
            }
            index -= 1
        }
        return nil
    }

    /// The frames an MP4 track plays: its one edit's length, made exact.
    ///
    /// An edit's duration is in the movie timescale (FFmpeg writes 1000: whole
    /// milliseconds), so it can miss the media's end by up to one tick (44
    /// frames at 44.1 kHz): a 57331-frame AAC file declares 1300 ms, 57330
    /// frames. The media's own end (the sum of its sample durations, which
    /// encoders like FFmpeg's end at the last real sample) is exact. When the
    /// edit ends within one movie tick of the media's end, it means "to the
    /// end", and the length is the media's from the edit's start; otherwise
    /// (an edit that cuts the media short on purpose, or that is not a single
    /// plain edit) nil: the container's duration stands.
    static func mp4EditedFrames(_ track: MP4TrackTiming, sampleRate: Int64) -> Int64? {
        guard track.edits.count == 1, let edit = track.edits.first, edit.mediaTime >= 0, edit.rate == 1,
              track.movieTimescale > 0, track.mediaTimescale == sampleRate, sampleRate > 0 else { return nil }
        let remaining = track.mediaDuration - edit.mediaTime
        guard remaining > 0, edit.segmentDuration > 0 else { return nil }
        // |remaining / rate − segment / movieTimescale| < 1 / movieTimescale, in integers.
        let (a, overflowA) = remaining.multipliedReportingOverflow(by: track.movieTimescale)
        let (b, overflowB) = edit.segmentDuration.multipliedReportingOverflow(by: sampleRate)
        guard !overflowA, !overflowB, abs(a - b) < sampleRate else { return nil }
        return remaining
    }

    /// The timing boxes of track `trackID` in the `moov` box among the
    /// top-level boxes in `moov` (the whole box, header included, or a file
    /// from its start). nil when the box tree is malformed or the track is missing.
    static func mp4TrackTiming(moov: [UInt8], trackID: Int) -> MP4TrackTiming? {
        guard let movie = MP4Box.children(moov, 0..<moov.count).first(where: { $0.type == "moov" }) else { return nil }
        let top = MP4Box.children(moov, movie.body)
        guard let mvhd = top.first(where: { $0.type == "mvhd" }),
              let movieTimescale = MP4Box.timescale(moov, fullBox: mvhd.body) else { return nil }
        for trak in top where trak.type == "trak" {
            let boxes = MP4Box.children(moov, trak.body)
            guard let tkhd = boxes.first(where: { $0.type == "tkhd" }) else { continue }
            let idOffset = tkhd.body.lowerBound + (moov[safe: tkhd.body.lowerBound] == 1 ? 20 : 12)
            guard let id = MP4Box.uint32(moov, idOffset, within: tkhd.body), Int(id) == trackID else { continue }
            guard let mdia = boxes.first(where: { $0.type == "mdia" }) else { return nil }
            let media = MP4Box.children(moov, mdia.body)
            guard let mdhd = media.first(where: { $0.type == "mdhd" }),
                  let mediaTimescale = MP4Box.timescale(moov, fullBox: mdhd.body),
                  let minf = media.first(where: { $0.type == "minf" }),
                  let stbl = MP4Box.children(moov, minf.body).first(where: { $0.type == "stbl" }),
                  let stts = MP4Box.children(moov, stbl.body).first(where: { $0.type == "stts" }),
                  let mediaDuration = MP4Box.sampleDurationSum(moov, stts: stts.body) else { return nil }
            var edits: [MP4TrackTiming.Edit] = []
            if let edts = boxes.first(where: { $0.type == "edts" }),
               let elst = MP4Box.children(moov, edts.body).first(where: { $0.type == "elst" }) {
                guard let list = MP4Box.edits(moov, elst: elst.body) else { return nil }
                edits = list
            }
            return MP4TrackTiming(movieTimescale: movieTimescale, mediaTimescale: mediaTimescale,
                                  mediaDuration: mediaDuration, edits: edits)
        }
        return nil
    }

    private static func littleEndian(_ bytes: [UInt8], _ offset: Int) -> UInt32 {
        UInt32(bytes[offset]) | UInt32(bytes[offset + 1]) << 8 | UInt32(bytes[offset + 2]) << 16 | UInt32(bytes[offset + 3]) << 24
    }
}

/// An MP4 track's timing as its boxes declare it.
struct MP4TrackTiming: Equatable {
    struct Edit: Equatable {
        /// In the movie timescale.
        let segmentDuration: Int64
        /// In the media timescale; −1 for an empty edit.
        let mediaTime: Int64
        /// The integer part of the 16.16 media rate.
        let rate: Int
    }
    /// `mvhd`'s timescale (ticks per second of edit durations).
    let movieTimescale: Int64
    /// `mdhd`'s timescale (ticks per second of the media's timestamps).
    let mediaTimescale: Int64
    /// The sum of the `stts` sample durations, in the media timescale.
    let mediaDuration: Int64
    /// `elst`'s entries; empty without an edit list.
    let edits: [Edit]
}

/// A minimal, bounds-checked reader of ISO BMFF boxes.
private enum MP4Box {
    /// The boxes laid out in `range` of `bytes`: type and body (after the header).
    /// Stops at the first malformed header.
    static func children(_ bytes: [UInt8], _ range: Range<Int>) -> [(type: String, body: Range<Int>)] {
        var boxes: [(String, Range<Int>)] = []
        var offset = range.lowerBound
        while offset + 8 <= range.upperBound {
            guard let size32 = uint32(bytes, offset, within: range) else { break }
            let type = String(decoding: bytes[(offset + 4)..<(offset + 8)], as: UTF8.self)
            var header = 8
            var size = Int(size32)
            if size32 == 1 {
                guard let high = uint32(bytes, offset + 8, within: range), let low = uint32(bytes, offset + 12, within: range),
                      high < 0x8000 else { break }
                size = Int(high) << 32 | Int(low)
                header = 16
            } else if size32 == 0 {
                size = range.upperBound - offset
            }
            guard size >= header, offset + size <= range.upperBound else { break }
            boxes.append((type, (offset + header)..<(offset + size)))
            offset += size
        }
        return boxes
    }

    static func uint32(_ bytes: [UInt8], _ offset: Int, within range: Range<Int>) -> UInt32? {
        guard offset >= range.lowerBound, offset + 4 <= range.upperBound else { return nil }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    static func uint64(_ bytes: [UInt8], _ offset: Int, within range: Range<Int>) -> UInt64? {
        guard let high = uint32(bytes, offset, within: range), let low = uint32(bytes, offset + 4, within: range) else { return nil }
        return UInt64(high) << 32 | UInt64(low)
    }

    /// The timescale of an `mvhd` or `mdhd` body (version 0: 32-bit times, 1: 64-bit).
    static func timescale(_ bytes: [UInt8], fullBox body: Range<Int>) -> Int64? {
        guard let version = bytes[safe: body.lowerBound], version <= 1 else { return nil }
        let offset = body.lowerBound + (version == 1 ? 20 : 12)
        guard let scale = uint32(bytes, offset, within: body), scale > 0 else { return nil }
        return Int64(scale)
    }

    /// The sum of an `stts` body's sample counts × durations; nil when the
    /// table is cut short or the sum overflows Int64 (a forged table).
    static func sampleDurationSum(_ bytes: [UInt8], stts body: Range<Int>) -> Int64? {
        guard let count = uint32(bytes, body.lowerBound + 4, within: body),
              body.lowerBound + 8 + Int(count) * 8 <= body.upperBound else { return nil }
        var sum: Int64 = 0
        for i in 0..<Int(count) {
            let entry = body.lowerBound + 8 + i * 8
            guard let samples = uint32(bytes, entry, within: body), let delta = uint32(bytes, entry + 4, within: body) else { return nil }
            let (product, productOverflow) = Int64(samples).multipliedReportingOverflow(by: Int64(delta))
            let (next, sumOverflow) = sum.addingReportingOverflow(product)
            guard !productOverflow, !sumOverflow else { return nil }
            sum = next
        }
        return sum
    }

    /// The entries of an `elst` body.
    static func edits(_ bytes: [UInt8], elst body: Range<Int>) -> [MP4TrackTiming.Edit]? {
        guard let version = bytes[safe: body.lowerBound], version <= 1,
              let count = uint32(bytes, body.lowerBound + 4, within: body) else { return nil }
        let entrySize = version == 1 ? 20 : 12
        guard body.lowerBound + 8 + Int(count) * entrySize <= body.upperBound else { return nil }
        var edits: [MP4TrackTiming.Edit] = []
        for i in 0..<Int(count) {
            let entry = body.lowerBound + 8 + i * entrySize
            let duration: Int64, mediaTime: Int64, rateOffset: Int
            if version == 1 {
                guard let d = uint64(bytes, entry, within: body), let t = uint64(bytes, entry + 8, within: body),
                      d <= UInt64(Int64.max) else { return nil }
                duration = Int64(d)
                mediaTime = Int64(bitPattern: t)
                rateOffset = entry + 16
            } else {
                guard let d = uint32(bytes, entry, within: body), let t = uint32(bytes, entry + 4, within: body) else { return nil }
                duration = Int64(d)
                mediaTime = Int64(Int32(bitPattern: t))
                rateOffset = entry + 8
            }
            guard let rate = uint32(bytes, rateOffset, within: body) else { return nil }
            edits.append(.init(segmentDuration: duration, mediaTime: mediaTime, rate: Int(Int16(bitPattern: UInt16(rate >> 16)))))
        }
        return edits
    }
}

private extension Array where Element == UInt8 {
    subscript(safe index: Int) -> UInt8? { indices.contains(index) ? self[index] : nil }
}
