// MPD protocol, 0.23 dialect — specs/mpd-protocol.md
//
// The wire layer of the MPD driving adapter: request lines, ACK errors,
// responses, filters, and the TCP server with its connections. It holds no
// player logic: the commands of the player (playback, queue, database, …) are
// an `MPDCommandHandler` the composition gives to `MPDServer`.
import HarmoniaLibrary

/// Protocol-wide constants and the defaults of the limits (specs/mpd-protocol.md §Limits).
public enum MPDProtocol {
    /// The version in the greeting (`OK MPD 0.23.5`): the 0.23 dialect we speak.
    public static let version = "0.23.5"

    /// A request line longer than this (without its newline) closes the
    /// connection. Real MPD's input buffer is 8 KiB; ours is larger.
    public static let defaultMaxLineBytes = 1 << 20
    /// The bytes of a command list (each line plus one), as MPD's
    /// `max_command_list_size` default (2048 KiB); more closes the connection.
    public static let defaultMaxCommandListBytes = 2048 * 1024
    /// Unsent output per client, as MPD's `max_output_buffer_size` default
    /// (8192 KiB); a client past it is dropped.
    public static let defaultMaxOutputBytes = 8192 * 1024
    /// Connections at once, as MPD's `max_connections` default.
    public static let defaultMaxClients = 100
    /// Arguments after the command name: MPD's COMMAND_ARGV_MAX (2 + 2 × 31
    /// tag types). A line with this many arguments is refused.
    public static let maxArguments = 64
    /// The largest binary chunk by default (MPD's `binary_limit`), and the least `binarylimit` accepts.
    public static let defaultBinaryLimit = 8192
    public static let minBinaryLimit = 64
    /// Filter expressions nest at most this deep (MPD has no limit; its recursion is unbounded).
    public static let maxFilterDepth = 32
}
