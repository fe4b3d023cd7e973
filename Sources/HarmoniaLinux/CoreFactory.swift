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
import HarmoniaSnapcast

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
        /// The same file, written in real time as a device plays (a server's
        /// output: positions are heard positions; a flush drops what was not played).
        case pacedFile(path: String)
        /// Every room of a Snapcast server, through its TCP source in server
        /// mode (specs/snapcast.md), paced by the factory's clock.
        case snapcast(SnapcastEndpoint)
        /// An output the caller built.
        case custom(any AudioOutputPort)
    }

    /// Decodes every track of the services made from now on. By default
    /// FFmpeg, reading http(s) sources through libcurl with `init`'s `network`
    /// policy.
    public var decoder: any DecoderPort
    /// Reads tags for `makeTagReaderService()`, and for the playback service
    /// (local files) when its decoder gives none. By default FFmpeg.
    public var tagReader: any TagReaderPort
    /// The playback service's time source, also given to the PulseAudio and
    /// null outputs `makeOutput()` builds (their waits; the null output's
    /// pace). By default `CLOCK_MONOTONIC` (`MonotonicClockAdapter`).
    public var clock: any ClockPort
    /// Receives the playback service's messages. The default decoder keeps
    /// the logger given to `init`; replacing this one does not change it.
    public var logger: any LoggerPort
    /// Where `makeOutput()` sends the sound. By default PulseAudio with
    /// default options.
    public var output: Output
    /// The tuning of every playback service made from now on. Its
    /// `decodeAhead` also sizes the output rings `makeOutput()` builds:
    /// that many seconds at 96 kHz (for PulseAudio, at least that many).
    public var configuration: PlaybackConfiguration

    /// Builds the default ports: FFmpeg decoder and tag reader, libcurl for
    /// http(s), the monotonic clock. Makes no output and contacts no server:
    /// `makeOutput()` (called by `makePlaybackService()`) builds the output.
    /// - Parameters:
    ///   - output: where the sound goes; PulseAudio by default.
    ///   - configuration: the playback services' tuning.
    ///   - logger: receives the decoder's and the playback service's
    ///     messages; swift-log with the label `harmonia` by default.
    ///   - network: the network policy for http(s) sources
    ///     (timeouts, headers, certificate verification: specs/network.md).
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

    /// The output port for `output`. A PulseAudio ring holds the configured
    /// decode-ahead at the stream's own rate; the others at 96 kHz.
    public func makeOutput() -> any AudioOutputPort {
        switch output {
        case .pulseAudio(var options):
            options.aheadSeconds = max(options.aheadSeconds, configuration.decodeAhead)
            options.clock = clock
            return PulseAudioOutputAdapter(options: options)
        case .null:
            return NullAudioOutput(pace: .realTime(clock), periodFrames: 1024,
                                   ringFrames: Int(configuration.decodeAhead * 96_000))
        case .file(let path):
            return FileAudioOutput(path: path)
        case .pacedFile(let path):
            return FileAudioOutput(path: path, pacedBy: clock, ringFrames: Int(configuration.decodeAhead * 96_000))
        case .snapcast(let endpoint):
            return SnapcastOutputAdapter(options: SnapcastOutputAdapter.Options(
                endpoint: endpoint, clock: clock, ringFrames: Int(configuration.decodeAhead * 96_000)))
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
