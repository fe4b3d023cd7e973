// FadeResampler — specs/services.md §Crossfade
// The outgoing side of a fade across a change of sample rate, converted to
// the incoming track's rate: a windowed-sinc resampler (Blackman window, 16
// zero crossings a side, cut off below the lower Nyquist frequency). Decode
// thread only (it runs inside a fade's read, with the engine released, and
// touches nothing of the engine); allocates, so never on the real-time thread.
import Foundation

/// Converts one stream of interleaved frames from one rate to another,
/// pulling input as it needs it. Not thread-safe: one owner (a `FadeOut`).
final class FadeResampler {
    /// Input frames each side of an output frame's centre.
    static let halfTaps = 16
    /// Input frames per output frame.
    let step: Double
    let channels: Int
    /// The kernel's cut-off as a fraction of the input's Nyquist frequency.
    private let cutoff: Double
    /// Buffered input, interleaved; frame 0 is the oldest kept.
    private var input: [Float]
    /// Where, in `input`'s frames, the next output frame falls.
    private var position: Double
    private var inputEnded = false

    /// - Parameters:
    ///   - history: input frames before the first output frame that the
    ///     first pulls deliver (0 … `halfTaps`): they keep the kernel's left
    ///     half on real audio, so the converted stream starts with no step.
    init(from inputRate: Double, to outputRate: Double, channels: Int, history: Int) {
        step = inputRate / outputRate
        self.channels = channels
        cutoff = min(1, outputRate / inputRate) * 0.95
        let padding = max(0, Self.halfTaps - history)
        input = [Float](repeating: 0, count: padding * channels)
        position = Double(Self.halfTaps)
    }

    /// Writes `count` output frames to `output`, pulling input through
    /// `pull(buffer, frames)` (which returns the frames it wrote, 0 at the
    /// end: silence follows).
    func produce(_ count: Int, into output: UnsafeMutablePointer<Float>,
                 pull: (UnsafeMutablePointer<Float>, Int) -> Int) {
        let half = Self.halfTaps
        for frame in 0..<count {
            let centre = Int(position)
            fill(frames: centre + half + 1, pull: pull)
            let fraction = position - Double(centre)
            let out = output + frame * channels
            for channel in 0..<channels { out[channel] = 0 }
            // The weights are normalised: a constant passes unchanged.
            var total: Float = 0
            for tap in (1 - half)...half {
                let weight = Float(kernel(Double(tap) - fraction))
                total += weight
                let base = (centre + tap) * channels
                for channel in 0..<channels { out[channel] += input[base + channel] * weight }
            }
            if total != 0 { for channel in 0..<channels { out[channel] /= total } }
            position += step
            // Drop what no later frame reaches, now and then.
            let unused = Int(position) - half
            if unused > 8192 {
                input.removeFirst(unused * channels)
                position -= Double(unused)
            }
        }
    }

    /// Makes `input` hold at least `frames` frames (silence after the end).
    private func fill(frames: Int, pull: (UnsafeMutablePointer<Float>, Int) -> Int) {
        while input.count / channels < frames {
            let have = input.count / channels
            let want = max(4096, frames - have)
            input.append(contentsOf: repeatElement(0, count: want * channels))
            if inputEnded { continue }
            let got = input.withUnsafeMutableBufferPointer { pull($0.baseAddress! + have * channels, want) }
            if got <= 0 {
                inputEnded = true
            } else if got < want {
                input.removeLast((want - got) * channels)
            }
        }
    }

    /// The windowed sinc at `x` input frames from the output frame's centre.
    private func kernel(_ x: Double) -> Double {
        let half = Double(Self.halfTaps)
        guard abs(x) < half else { return 0 }
        let window = 0.42 + 0.5 * cos(Double.pi * x / half) + 0.08 * cos(2 * Double.pi * x / half)
        let t = Double.pi * cutoff * x
        let sinc = abs(t) < 1e-9 ? 1 : sin(t) / t
        return cutoff * sinc * window
    }
}
