// SnapcastResampler — specs/snapcast.md §Conversion
// Every libswresample (swr_*, av_opt_*, av_channel_layout_*) call of the
// module lives in this file.
import CFFmpeg
import HarmoniaCore

/// Converts interleaved Float32 at the queue's rate and channels into the
/// Snapcast source's interleaved signed integers (s16 or s32) at its rate
/// and channels. Same rate: a pure sample-format conversion (exact for
/// 16-bit sources at unity gain); another rate: libsoxr through
/// libswresample at very high quality (precision 28 bits).
///
/// Not thread-safe: owned by the writer thread once made (`convert`,
/// `flush`, `reset`); made and freed by the control side with the writer
/// locked out.
final class SnapcastResampler {
    let inputRate: Int
    let inputChannels: Int
    let outputRate: Int
    let outputChannels: Int
    /// Whether the rates differ (then the converter holds a delay).
    let resamples: Bool
    private var context: OpaquePointer?

    /// - Throws: `invalidArgument` when libswresample refuses the formats.
    init(inputRate: Int, inputChannels: Int, outputRate: Int, outputChannels: Int, outputBits: Int) throws(CoreError) {
        self.inputRate = inputRate
        self.inputChannels = inputChannels
        self.outputRate = outputRate
        self.outputChannels = outputChannels
        resamples = inputRate != outputRate
        var inLayout = AVChannelLayout(), outLayout = AVChannelLayout()
        av_channel_layout_default(&inLayout, Int32(inputChannels))
        av_channel_layout_default(&outLayout, Int32(outputChannels))
        defer {
            av_channel_layout_uninit(&inLayout)
            av_channel_layout_uninit(&outLayout)
        }
        let outFormat = outputBits == 32 ? AV_SAMPLE_FMT_S32 : AV_SAMPLE_FMT_S16
        var context: OpaquePointer?
        let made = swr_alloc_set_opts2(&context, &outLayout, outFormat, Int32(outputRate),
                                       &inLayout, AV_SAMPLE_FMT_FLT, Int32(inputRate), 0, nil)
        guard made >= 0, let context else {
            throw .invalidArgument("Snapcast output: libswresample cannot convert \(inputRate) Hz \(inputChannels) ch "
                + "to \(outputRate) Hz \(outputChannels) ch (swr_alloc_set_opts2: \(made))")
        }
        self.context = context
        let raw = UnsafeMutableRawPointer(context)
        if resamples {
            // libsoxr when libswresample has it (Debian's does), at its very
            // high quality; swr's own engine with a long filter otherwise.
            if av_opt_set_int(raw, "resampler", Int64(SWR_ENGINE_SOXR.rawValue), 0) >= 0 {
                av_opt_set_double(raw, "precision", 28, 0)
            } else {
                av_opt_set_int(raw, "filter_size", 64, 0)
                av_opt_set_int(raw, "phase_shift", 10, 0)
                av_opt_set_double(raw, "cutoff", 0.97, 0)
            }
        }
        // Mono to stereo at unity on both sides (as PulseAudio upmixes), not
        // libswresample's −3 dB centre.
        if inputChannels == 1 && outputChannels == 2 {
            var matrix: [Double] = [1, 1]
            swr_set_matrix(context, &matrix, 1)
        }
        let initialised = swr_init(context)
        guard initialised >= 0 else {
            var doomed: OpaquePointer? = context
            swr_free(&doomed)
            self.context = nil
            throw .invalidArgument("Snapcast output: libswresample cannot start the conversion \(inputRate) Hz \(inputChannels) ch "
                + "to \(outputRate) Hz \(outputChannels) ch (swr_init: \(initialised))")
        }
    }

    deinit {
        if context != nil { swr_free(&context) }
    }

    /// Output frames that `inputFrames` more input may produce at most.
    func maxOutput(forInput inputFrames: Int) -> Int {
        Int(swr_get_out_samples(context, Int32(inputFrames)))
    }

    /// Converts `frames` input frames into at most `capacity` output frames
    /// at `output`; returns the frames produced (the rest stays buffered
    /// inside). No allocation once warmed up: libswresample keeps its buffers.
    func convert(_ input: UnsafePointer<Float>, frames: Int, into output: UnsafeMutableRawPointer, capacity: Int) -> Int {
        var inPlane: UnsafePointer<UInt8>? = UnsafeRawPointer(input).assumingMemoryBound(to: UInt8.self)
        var outPlane: UnsafeMutablePointer<UInt8>? = output.assumingMemoryBound(to: UInt8.self)
        let produced = swr_convert(context, &outPlane, Int32(capacity), &inPlane, Int32(frames))
        return max(0, Int(produced))
    }

    /// Drains what the resampler still holds (its filter delay) into
    /// `output`, then restarts it empty for the next input (swr_init). For
    /// when real audio stops: a track's end, an underrun.
    func flush(into output: UnsafeMutableRawPointer, capacity: Int) -> Int {
        guard resamples else { return 0 }
        var outPlane: UnsafeMutablePointer<UInt8>? = output.assumingMemoryBound(to: UInt8.self)
        let produced = swr_convert(context, &outPlane, Int32(capacity), nil, 0)
        swr_init(context)
        return max(0, Int(produced))
    }

    /// Drops what the resampler holds (a flush or a seek).
    func reset() {
        if resamples { swr_init(context) }
    }
}
