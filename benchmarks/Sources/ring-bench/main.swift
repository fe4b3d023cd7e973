// ring-bench [--pairs N] [--frames N] [--capacity N] [--block N] [--channels N]
//
// Frames per second through SPSCRingBuffer and through MutexRing (same
// capacity), producer and consumer on two threads, alternating
// SPSC, mutex, SPSC, mutex… in one process. Prints one JSON object.
import BenchSupport

var pairs = 7, frames = 1 << 27, capacity = 8192, block = 256, channels = 2
var arguments = CommandLine.arguments.dropFirst().makeIterator()
while let argument = arguments.next() {
    guard let value = arguments.next().flatMap({ Int($0) }) else { fatalError("usage: ring-bench [--pairs N] [--frames N] [--capacity N] [--block N] [--channels N]") }
    switch argument {
    case "--pairs": pairs = value
    case "--frames": frames = value
    case "--capacity": capacity = value
    case "--block": block = value
    case "--channels": channels = value
    default: fatalError("unknown option \(argument)")
    }
}

// Warm-up: one short pass of each (page faults, CPU frequency).
_ = pumpSPSC(capacity: capacity, channels: channels, block: block, totalFrames: frames / 8)
_ = pumpMutex(capacity: capacity, channels: channels, block: block, totalFrames: frames / 8)

let expected = expectedChecksum(block: block, totalFrames: frames)
var spsc: [Double] = [], mutex: [Double] = []
for _ in 0..<pairs {
    let a = pumpSPSC(capacity: capacity, channels: channels, block: block, totalFrames: frames)
    let b = pumpMutex(capacity: capacity, channels: channels, block: block, totalFrames: frames)
    precondition(a.checksum == expected && b.checksum == expected, "a ring lost or reordered frames")
    spsc.append(a.framesPerSecond)
    mutex.append(b.framesPerSecond)
}

func list(_ values: [Double]) -> String { "[" + values.map { String(Int($0.rounded())) }.joined(separator: ", ") + "]" }
print("""
{"capacity": \(capacity), "channels": \(channels), "block": \(block), "frames_per_run": \(frames), "pairs": \(pairs), \
"spsc_fps": \(list(spsc)), "mutex_fps": \(list(mutex))}
""")
