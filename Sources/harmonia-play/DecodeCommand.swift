// harmonia-play decode: one input to raw float32 for scripts and tests.
import ArgumentParser
import HarmoniaControl
import HarmoniaCore
import HarmoniaFFmpeg
#if canImport(Glibc)
import Glibc
#endif

struct DecodeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "decode",
        abstract: "Decode one input to raw interleaved float32 little-endian PCM.",
        discussion: "The PCM is exact: encoder delay and padding removed, at the native rate and channels."
    )

    @Option(name: .shortAndLong, help: "Output file ('-' for stdout).")
    var output: String

    @Option(help: "Start at this frame (sample-accurate seek).")
    var startFrame: Int64?

    @OptionGroup(title: "Network")
    var network: NetworkOptions

    @Argument(help: "Audio file or URL.")
    var input: String

    func run() throws {
        let decoder = network.decoder()  // the store when it exists; decode never caches
        do {
            let handle = try decoder.open(url: input)
            defer { decoder.close(handle) }
            let channels = try decoder.info(handle).channels
            if let startFrame { try decoder.seek(handle, toFrame: startFrame) }
            let fd = output == "-" ? 1 : open(output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            guard fd >= 0 else {
                throw CoreError.ioError("\(output): cannot open for writing (\(String(cString: strerror(errno))))")
            }
            defer { if fd != 1 { close(fd) } }
            let capacity = 4096
            let buffer = UnsafeMutablePointer<Float>.allocate(capacity: capacity * channels)
            defer { buffer.deallocate() }
            while true {
                let frames = try decoder.read(handle, into: buffer, maxFrames: capacity)
                if frames == 0 { break }
                let bytes = UnsafeRawBufferPointer(start: buffer, count: frames * channels * MemoryLayout<Float>.size)
                guard Console.writeAll(fd, bytes) else {
                    throw CoreError.ioError("\(output): write failed (\(String(cString: strerror(errno))))")
                }
            }
        } catch let error as CoreError {
            Console.report(input, error)
            throw ExitCode(1)
        }
    }
}
