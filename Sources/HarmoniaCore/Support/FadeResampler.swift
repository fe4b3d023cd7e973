// FadeResampler — specs/services.md §Crossfade
// A windowed-sinc resampler (Blackman window, 16 zero crossings a side, cut
// off below the lower Nyquist frequency), used where a crossfade crosses a
// change of sample rate: by the playback service for a fade's outgoing side
// (pulled, inside a fade's read on the decode thread), and by the outputs
// whose stream keeps one rate for what is written after such a fade
// (`RateContinuation`, pushed, on the producer thread). Allocates (its input
// buffer grows), so never on a real-time thread.
import Foundation

/// Converts one stream of interleaved frames from one rate to another.
/// Output frame k is centred on input frame k·step (step = input rate /
/// output rate), counted from the first frame after `history`. The weights
/// are normalised over the taps that fall on real input: before the first
/// frame pulled (short of `history`) and after the input's end there is
/// none, so the converted stream starts and ends with no dip (pushed input
/// starts on a reflection, `push`). Not thread-safe: one owner.
package final class FadeResampler {
    /// Input frames each side of an output frame's centre.
    package static let halfTaps = 16
    /// Input frames per output frame.
    package let step: Double
    package let channels: Int
    /// The kernel sampled every 1/`phases` of an input frame from −halfTaps
    /// to +halfTaps (made once, in init), read with linear interpolation:
    /// no trigonometry per tap.
    private let table: [Float]
    private static let phases = 1024
    /// Buffered input, interleaved; frame 0 is the oldest kept.
    private var input: [Float]
    /// Where, in `input`'s frames, output frame 0 falls, and the output
    /// frames made so far: the next falls at origin + produced·step
    /// (computed, not summed, so it does not drift).
    private var origin: Double
    private var produced = 0
    private var position: Double { origin + Double(produced) * step }
    /// The first frame of `input` that is real input (zeros pad before it).
    private var realStart: Int
    /// Once the input has ended: the frame after its last (zeros follow).
    private var realEnd: Int?

    /// - Parameters:
    ///   - history: input frames before the first output frame that the
    ///     first pulls deliver (0 … `halfTaps`): they keep the kernel's left
    ///     half on real audio. Pushed input has none (0).
    package init(from inputRate: Double, to outputRate: Double, channels: Int, history: Int) {
        step = inputRate / outputRate
        self.channels = channels
        let cutoff = min(1, outputRate / inputRate) * 0.95
        let count = 2 * Self.halfTaps * Self.phases + 2
        table = (0..<count).map { Float(Self.kernel(Double($0) / Double(Self.phases) - Double(Self.halfTaps), cutoff: cutoff)) }
        let padding = max(0, Self.halfTaps - min(max(history, 0), Self.halfTaps))
        input = [Float](repeating: 0, count: padding * channels)
        realStart = padding
        origin = Double(Self.halfTaps)
    }

    /// Writes `count` output frames to `output`, pulling input through
    /// `pull(buffer, frames)` (which returns the frames it wrote, 0 at the
    /// end: silence follows).
    package func produce(_ count: Int, into output: UnsafeMutablePointer<Float>,
                         pull: (UnsafeMutablePointer<Float>, Int) -> Int) {
        for frame in 0..<count {
            fill(frames: Int(position) + Self.halfTaps + 1, pull: pull)
            convertOne(into: output + frame * channels)
        }
    }

    /// Adds `count` input frames after those pushed before. Push only.
    /// Before the first frame pushed, the kernel reads the first frames
    /// reflected through it (2·x₀ − xₖ): a converted stream that starts in
    /// the middle of a sound (a fade's first frame) starts on it, with no
    /// step and no lean, a straight line passing exactly.
    package func push(_ frames: UnsafePointer<Float>, count: Int) {
        guard count > 0, realEnd == nil else { return }
        if realStart > 0 {
            for k in 1...realStart {
                let mirrored = min(k, count - 1) * channels
                for channel in 0..<channels {
                    input[(realStart - k) * channels + channel] = 2 * frames[channel] - frames[mirrored + channel]
                }
            }
            realStart = 0
        }
        input.append(contentsOf: UnsafeBufferPointer(start: frames, count: count * channels))
    }

    /// No more input: the frames still held can all be converted (`convert`).
    package func endInput() {
        if realEnd == nil { realEnd = inputFrames }
    }

    /// Writes up to `maxFrames` output frames to `output`: those whose
    /// kernel's input has all been pushed, or, after `endInput`, every one
    /// centred before the input's end. Returns how many. Push only.
    package func convert(into output: UnsafeMutablePointer<Float>, maxFrames: Int) -> Int {
        var done = 0
        while done < maxFrames {
            let centre = Int(position)
            if let realEnd {
                // (Less a rounding's worth: frame k of N·step input frames is the last at k = N.)
                guard position < Double(realEnd) - 1e-6 else { break }
                let needed = centre + Self.halfTaps + 1
                if inputFrames < needed { input.append(contentsOf: repeatElement(0, count: (needed - inputFrames) * channels)) }
            } else if centre + Self.halfTaps + 1 > inputFrames {
                break
            }
            convertOne(into: output + done * channels)
            done += 1
        }
        return done
    }

    /// Output frames `convert` can write now (an upper bound, for sizing a buffer).
    package var convertibleFrames: Int {
        let limit = realEnd.map(Double.init) ?? Double(inputFrames - Self.halfTaps - 1)
        return max(0, Int(((limit - position) / step).rounded(.up)) + 1)
    }

    private var inputFrames: Int { input.count / channels }

    /// One output frame at `position` (its input present), then the next position.
    private func convertOne(into out: UnsafeMutablePointer<Float>) {
        let half = Self.halfTaps
        let centre = Int(position)
        let fraction = position - Double(centre)
        for channel in 0..<channels { out[channel] = 0 }
        // Normalised over the taps on real input: a constant passes
        // unchanged, and so does one at the input's first or last frame.
        let first = max(1 - half, realStart - centre), last = min(half, (realEnd ?? Int.max / 2) - 1 - centre)
        var total: Float = 0
        if first <= last {
            input.withUnsafeBufferPointer { samples in
                table.withUnsafeBufferPointer { kernel in
                    let channels = self.channels
                    // The kernel at tap − fraction, interpolated between its two table entries.
                    var at = (Double(first) - fraction + Double(half)) * Double(Self.phases)
                    for tap in first...last {
                        let index = Int(at)
                        let weight = kernel[index] + (kernel[index + 1] - kernel[index]) * Float(at - Double(index))
                        total += weight
                        let base = (centre + tap) * channels
                        for channel in 0..<channels { out[channel] += samples[base + channel] * weight }
                        at += Double(Self.phases)
                    }
                }
            }
        }
        if total != 0 { for channel in 0..<channels { out[channel] /= total } }
        produced += 1
        // Drop what no later frame reaches, now and then.
        let unused = Int(position) - half
        if unused > 8192 {
            input.removeFirst(unused * channels)
            origin -= Double(unused)
            realStart = max(0, realStart - unused)
            realEnd = realEnd.map { $0 - unused }
        }
    }

    /// Makes `input` hold at least `frames` frames (silence after the end).
    private func fill(frames: Int, pull: (UnsafeMutablePointer<Float>, Int) -> Int) {
        while inputFrames < frames {
            let have = inputFrames
            let want = max(4096, frames - have)
            input.append(contentsOf: repeatElement(0, count: want * channels))
            if realEnd != nil { continue }
            let got = input.withUnsafeMutableBufferPointer { pull($0.baseAddress! + have * channels, want) }
            if got <= 0 {
                realEnd = have
            } else if got < want {
                input.removeLast((want - got) * channels)
            }
        }
    }

    /// The windowed sinc at `x` input frames from the output frame's centre.
    private static func kernel(_ x: Double, cutoff: Double) -> Double {
        let half = Double(Self.halfTaps)
        guard abs(x) < half else { return 0 }
        let window = 0.42 + 0.5 * cos(Double.pi * x / half) + 0.08 * cos(2 * Double.pi * x / half)
        let t = Double.pi * cutoff * x
        let sinc = abs(t) < 1e-9 ? 1 : sin(t) / t
        return cutoff * sinc * window
    }
}
