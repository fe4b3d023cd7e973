import HarmoniaCore

/// Reads `handle` to its end in chunks of `chunk` frames: every sample, interleaved.
public func decodeToEnd(_ decoder: any DecoderPort, _ handle: DecodeHandle, chunk: Int = 4096) throws -> [Float] {
    let channels = try decoder.info(handle).channels
    var out: [Float] = []
    let buffer = UnsafeMutablePointer<Float>.allocate(capacity: chunk * channels)
    defer { buffer.deallocate() }
    while true {
        let frames = try decoder.read(handle, into: buffer, maxFrames: chunk)
        if frames == 0 { break }
        out.append(contentsOf: UnsafeBufferPointer(start: buffer, count: frames * channels))
    }
    return out
}
