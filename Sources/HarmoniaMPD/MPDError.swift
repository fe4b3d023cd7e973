// ACK errors — specs/mpd-protocol.md §Errors
//
// MPD's ack codes (src/protocol/Ack.hxx) and the error line
// `ACK [code@index] {command} message`.
import HarmoniaCore

/// MPD's ack codes, with MPD's numbers.
public enum MPDAck: Int, Sendable, Equatable, Hashable, CaseIterable {
    case notList = 1
    case arg = 2
    case password = 3
    case permission = 4
    case unknown = 5
    case noExist = 50
    case playlistMax = 51
    case system = 52
    case playlistLoad = 53
    case updateAlready = 54
    case playerSync = 55
    case exist = 56
}

/// A command's failure as the client sees it: an ack code and MPD's message.
/// The connection adds the command name and the position in a command list.
public struct MPDError: Error, Sendable, Equatable, Hashable {
    public var ack: MPDAck
    public var message: String
    /// The name between braces; nil: the command being run (the connection
    /// knows it). Set to "" for errors MPD reports before it knows the
    /// command (tokenizer errors, unknown command).
    public var command: String?

    public init(_ ack: MPDAck, _ message: String, command: String? = nil) {
        self.ack = ack
        self.message = message
        self.command = command
    }

    /// `ACK [code@index] {command} message`, without the newline.
    public func line(command running: String, listIndex: Int) -> String {
        "ACK [\(ack.rawValue)@\(listIndex)] {\(command ?? running)} \(message)"
    }

    /// `unknown command "x"` (ACK 5, no command name between the braces).
    public static func unknownCommand(_ name: String) -> MPDError {
        MPDError(.unknown, "unknown command \"\(name)\"", command: "")
    }

    /// `you don't have permission for "x"` (ACK 4).
    public static func permissionDenied(_ name: String) -> MPDError {
        MPDError(.permission, "you don't have permission for \"\(name)\"")
    }

    /// A `CoreError` from the application layer, as MPD would class it:
    /// bad argument → ARG, not found → NO_EXIST, I/O → SYSTEM, else UNKNOWN.
    public init(_ error: CoreError) {
        let ack: MPDAck = switch error.category {
        case .invalidArgument: .arg
        case .notFound: .noExist
        case .ioError: .system
        case .invalidState, .decodeError, .unsupported: .unknown
        }
        self.init(ack, error.message)
    }
}

/// What a client may do (MPD's permission bits, src/Permission.hxx). A
/// command needs all the bits of its permission.
public struct MPDPermissions: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    public static let read = MPDPermissions(rawValue: 1)
    public static let add = MPDPermissions(rawValue: 2)
    public static let control = MPDPermissions(rawValue: 4)
    public static let admin = MPDPermissions(rawValue: 8)
    public static let player = MPDPermissions(rawValue: 16)
    /// What MPD gives everyone when no password is configured.
    public static let all: MPDPermissions = [.read, .add, .control, .admin, .player]

    /// Parses MPD's `password "SECRET@read,add,control"` permission list;
    /// nil on an unknown name. As MPD ≥ 0.23, "control" implies "player".
    public init?(names: String) {
        var result: MPDPermissions = []
        for name in names.split(separator: ",") {
            switch name {
            case "read": result.insert(.read)
            case "add": result.insert(.add)
            case "player": result.insert(.player)
            case "control": result.insert(.control)
            case "admin": result.insert(.admin)
            default: return nil
            }
        }
        if result.contains(.control) { result.insert(.player) }
        self = result
    }
}
