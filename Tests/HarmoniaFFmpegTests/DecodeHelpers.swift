import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaTestSupport

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
