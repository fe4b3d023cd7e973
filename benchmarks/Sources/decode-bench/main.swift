// decode-bench [--buffer FRAMES] FILE…
//
// Opens each FILE with FFmpegDecoderAdapter and reads it to the end through
// DecoderPort.read with one reused buffer — the loop the playback service's
// decode thread runs. With several files, each is decoded on a thread of its
// own, all at once (the scaling measurement). Prints one JSON line per file
// and, with several, a total line.
#if canImport(Glibc)
import Glibc
#endif
import BenchSupport
import HarmoniaCore
import HarmoniaFFmpeg

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

var bufferFrames = 4096
var files: [String] = []
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    if argument == "--buffer", let value = arguments.next().flatMap({ Int($0) }) { bufferFrames = value } else { files.append(argument) }
}
guard !files.isEmpty else {
    print("usage: decode-bench [--buffer FRAMES] FILE…")
    exit(2)
}

final class Outcome: @unchecked Sendable {
    var frames = 0
    var seconds = 0.0
    var rate = 0.0
    var channels = 0
    var error: String?
}

let decoder = FFmpegDecoderAdapter()

func decode(_ path: String, bufferFrames: Int, into outcome: Outcome) {
    let t0 = now()
    do {
        let handle = try decoder.open(url: path)
        defer { decoder.close(handle) }
        let info = try decoder.info(handle)
        let buffer = UnsafeMutablePointer<Float>.allocate(capacity: bufferFrames * info.channels)
        defer { buffer.deallocate() }
        var frames = 0
        while true {
            let n = try decoder.read(handle, into: buffer, maxFrames: bufferFrames)
            if n == 0 { break }
            frames += n
        }
        outcome.frames = frames
        outcome.rate = info.sampleRate
        outcome.channels = info.channels
    } catch {
        outcome.error = "\(error)"
    }
    outcome.seconds = now() - t0
}

let outcomes = files.map { _ in Outcome() }
let t0 = now()
if files.count == 1 {
    decode(files[0], bufferFrames: bufferFrames, into: outcomes[0])
} else {
    let threads = zip(files, outcomes).map { file, outcome in spawnThread { [bufferFrames] in decode(file, bufferFrames: bufferFrames, into: outcome) } }
    for thread in threads { pthread_join(thread, nil) }
}
let wall = now() - t0

func quoted(_ s: String) -> String {
    "\"" + s.replacingAll("\\", "\\\\").replacingAll("\"", "\\\"") + "\""
}
extension String {
    func replacingAll(_ a: Character, _ b: String) -> String { reduce(into: "") { $0 += $1 == a ? b : String($1) } }
}

var failed = false
for (file, outcome) in zip(files, outcomes) {
    if let error = outcome.error {
        failed = true
        print("{\"file\": \(quoted(file)), \"error\": \(quoted(error))}")
    } else {
        print("{\"file\": \(quoted(file)), \"frames\": \(outcome.frames), \"sample_rate\": \(outcome.rate), \"channels\": \(outcome.channels), \"seconds\": \(outcome.seconds)}")
    }
}
if files.count > 1 {
    let frames = outcomes.reduce(0) { $0 + $1.frames }
    print("{\"total_frames\": \(frames), \"wall_seconds\": \(wall)}")
}
exit(failed ? 1 : 0)
