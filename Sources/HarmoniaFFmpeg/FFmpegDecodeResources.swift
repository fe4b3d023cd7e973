// The FFmpeg objects and buffers of one FFmpegDecodeSession
import CFFmpeg

/// The FFmpeg objects and buffers one session owns. `free()` releases the
/// FFmpeg objects (idempotent); deinit releases everything, so an object
/// dropped by a throwing init leaks nothing. Not thread-safe: used by its session only.
final class FFmpegDecodeResources {
    var codec: UnsafeMutablePointer<AVCodecContext>?
    var packet: UnsafeMutablePointer<AVPacket>? = av_packet_alloc()
    var frame: UnsafeMutablePointer<AVFrame>? = av_frame_alloc()
    var resampler: OpaquePointer?
    var resamplerInput = (format: Int32(-1), rate: Int32(0), layout: AVChannelLayout())
    var outputLayout = AVChannelLayout()
    let outputPlane = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 1)
    /// Converted interleaved frames of the last decoded AVFrame.
    var converted: UnsafeMutablePointer<Float>
    var convertedCapacity = 4096
    private let channels: Int

    init(channels: Int) {
        self.channels = channels
        converted = .allocate(capacity: convertedCapacity * channels)
    }

    var isFreed: Bool { codec == nil && packet == nil && frame == nil && resampler == nil }

    func free() {
        if codec != nil { avcodec_free_context(&codec) }
        if packet != nil { av_packet_free(&packet) }
        if frame != nil { av_frame_free(&frame) }
        if resampler != nil { swr_free(&resampler) }
        av_channel_layout_uninit(&resamplerInput.layout)
        av_channel_layout_uninit(&outputLayout)
    }

    deinit {
        free()
        outputPlane.deallocate()
        converted.deallocate()
    }
}
