// CoreFactory — specs/services.md §CoreFactory
//
// The one place that knows which adapters exist: FFmpeg for decoding and
// tags, libcurl for http(s) sources, PulseAudio for output, the monotonic
// clock and swift-log. An
// embedding application imports HarmoniaLinux, asks the factory for its
// services, and never names an adapter unless it wants to replace one.
import HarmoniaCore
import HarmoniaFFmpeg
import HarmoniaHTTP
import HarmoniaPulseAudio

/// Wires the default adapters into services. Every port can be replaced
/// before `makePlaybackService` (tests, other outputs, another logger).
///
/// ```swift
/// let factory = CoreFactory()
/// let player = factory.makePlaybackService()
/// try player.load(url: "song.flac")
/// try player.play()
/// ```
public struct CoreFactory: Sendable {
    /// Where the sound goes.
    public enum Output: Sendable {
        /// A PulseAudio (or PipeWire-Pulse) server.
        case pulseAudio(PulseAudioOutputAdapter.Options)
        /// Nowhere, consumed in real time as a device would.
        case null
        /// An IEEE-float WAV (or raw f32le for a `.f32`/`.raw` path or a
        /// device such as /dev/null), written as fast as decoding goes.
        case file(path: String)
        /// An output the caller built.
        case custom(any AudioOutputPort)
    }

    public var decoder: any DecoderPort
    public var tagReader: any TagReaderPort
    public var clock: any ClockPort
    public var logger: any LoggerPort
    public var output: Output
    public var configuration: PlaybackConfiguration

    /// - Parameter network: the network policy for http(s) sources
    ///   (timeouts, headers, certificate verification: specs/network.md).
    public init(output: Output = .pulseAudio(PulseAudioOutputAdapter.Options()),
                configuration: PlaybackConfiguration = PlaybackConfiguration(),
                logger: any LoggerPort = SwiftLogLoggerAdapter(label: "harmonia"),
                network: HTTPSourceConfiguration = HTTPSourceConfiguration()) {
        self.decoder = FFmpegDecoderAdapter(logger: logger, networkTimeout: network.networkTimeout,
                                            networkSource: HTTPSourcePort(configuration: network),
                                            verifyTLS: network.verifyTLS, httpHeaders: network.headers)
        self.tagReader = FFmpegTagReaderAdapter()
        self.clock = MonotonicClockAdapter()
        self.logger = logger
        self.output = output
        self.configuration = configuration
    }

    /// The output port for `output`. A PulseAudio ring holds at least the
    /// configured decode-ahead at 96 kHz.
    public func makeOutput() -> any AudioOutputPort {
        switch output {
        case .pulseAudio(var options):
            options.ringFrames = max(options.ringFrames, Int(configuration.decodeAhead * 96_000))
            options.clock = clock
            return PulseAudioOutputAdapter(options: options)
        case .null:
            return NullAudioOutput(pace: .realTime(clock), periodFrames: 1024,
                                   ringFrames: Int(configuration.decodeAhead * 96_000))
        case .file(let path):
            return FileAudioOutput(path: path)
        case .custom(let port):
            return port
        }
    }

    /// A playback service on the configured ports.
    public func makePlaybackService() -> DefaultPlaybackService {
        DefaultPlaybackService(decoder: decoder, output: makeOutput(), clock: clock, logger: logger,
                               tagReader: tagReader, configuration: configuration)
    }

    /// Tracks for a playlist, from the configured tag reader.
    public func makeTagReaderService() -> TagReaderService {
        TagReaderService(tagReader: tagReader)
    }
}
