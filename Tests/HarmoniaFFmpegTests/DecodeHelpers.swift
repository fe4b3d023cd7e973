import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaTestSupport

/// Reads a handle to the end in chunks of `chunk` frames.
func decodeToEnd(_ decoder: FFmpegDecoderAdapter, _ handle: DecodeHandle, chunk: Int = 4096) throws -> [Float] {
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

/// Opens, decodes everything, closes.
func decodeFile(_ path: String, chunk: Int = 4096) throws -> [Float] {
    let decoder = FFmpegDecoderAdapter()
    let handle = try decoder.open(url: path)
    defer { decoder.close(handle) }
    return try decodeToEnd(decoder, handle, chunk: chunk)
}

/// Largest absolute difference between two equally long sample arrays.
func maxDifference(_ a: ArraySlice<Float>, _ b: ArraySlice<Float>) -> Float {
    precondition(a.count == b.count)
    var worst: Float = 0
    for (x, y) in zip(a, b) { worst = max(worst, abs(x - y)) }
    return worst
}

/// Runs `body` and returns the CoreError it throws (nil if none).
func coreError(_ body: () throws -> Void) -> CoreError? {
    do { try body() } catch let error as CoreError { return error } catch { return .ioError("not a CoreError: \(error)") }
    return nil
}
