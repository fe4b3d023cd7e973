// The boundary to the player — specs/mpd-protocol.md §Handler
//
// The server owns the wire (framing, tokenizing, command lists, idle,
// permissions, tagtypes); a handler owns the player's commands, one file
// per command group, against the application layer.

/// How many arguments a command takes, checked before it runs with MPD's
/// messages (`wrong number of arguments for "x"` when `min == max`, else
/// `too few …` / `too many …`).
public struct MPDArity: Sendable, Hashable {
    public var min: Int
    /// nil: any number from `min` on.
    public var max: Int?
    /// false: not checked at all (MPD's −1, −1: `close`, `kill`).
    public var checked: Bool

    public init(_ min: Int, _ max: Int?) {
        self.min = min
        self.max = max
        self.checked = true
    }

    public static let none = MPDArity(0, 0)
    public static let unchecked: MPDArity = { var a = MPDArity(0, nil); a.checked = false; return a }()
    public static func exactly(_ n: Int) -> MPDArity { MPDArity(n, n) }
    public static func range(_ min: Int, _ max: Int?) -> MPDArity { MPDArity(min, max) }

    /// The ACK for `count` arguments to `name`, or nil when they fit.
    func violation(count: Int, name: String) -> MPDError? {
        guard checked else { return nil }
        if let max, min == max, count != max {
            return MPDError(.arg, "wrong number of arguments for \"\(name)\"")
        }
        if count < min { return MPDError(.arg, "too few arguments for \"\(name)\"") }
        if let max, count > max { return MPDError(.arg, "too many arguments for \"\(name)\"") }
        return nil
    }
}

/// One row of MPD's command table: the name, the permission it needs, its arity.
public struct MPDCommandInfo: Sendable, Hashable {
    public var name: String
    public var permission: MPDPermissions
    public var arity: MPDArity

    public init(_ name: String, _ permission: MPDPermissions, _ arity: MPDArity) {
        self.name = name
        self.permission = permission
        self.arity = arity
    }
}

/// What a handler knows of the connection it serves. A snapshot taken
/// before each command; immutable.
public struct MPDContext: Sendable {
    /// The connection's number (from 0, in order of acceptance).
    public var clientID: Int
    /// The peer's address ("127.0.0.1:50312", "[::1]:50312").
    public var peer: String
    public var permissions: MPDPermissions
    /// The command's position in a command list (0 outside a list).
    public var listIndex: Int
    /// The tags the client wants (server tags ∩ its `tagtypes`); the writer has it too.
    public var tagMask: MPDTagMask

    public init(clientID: Int, peer: String, permissions: MPDPermissions, listIndex: Int, tagMask: MPDTagMask) {
        self.clientID = clientID
        self.peer = peer
        self.permissions = permissions
        self.listIndex = listIndex
        self.tagMask = tagMask
    }
}

/// The player's side of the protocol: the commands beyond the connection's
/// own (ping, close, password, commands, notcommands, tagtypes, binarylimit,
/// idle, which the server answers itself).
///
/// Threads: `handle` is called on the calling connection's reader thread,
/// one command at a time per connection, several connections at once; it
/// may block (only that client waits). It must be thread-safe.
public protocol MPDCommandHandler: Sendable {
    /// The handler's rows of the command table. The server checks the
    /// permission and the arity before `handle`, and lists these in
    /// `commands` / `notcommands` (merged with its own, sorted by name).
    /// Read once, when the server is created.
    var commands: [MPDCommandInfo] { get }

    /// Runs one command whose name is in `commands`, permitted and with a
    /// fitting number of arguments. Writes its answer (without `OK`) into
    /// `writer`; throws to answer with an ACK instead (what was written
    /// before the throw is sent first, as MPD does).
    func handle(_ request: MPDRequest, context: MPDContext, into writer: inout MPDResponseWriter) throws(MPDError)

    /// The connection ended (closed, dropped, or the server shut down): per-client
    /// state (subscriptions, …) can go. Called once, on that connection's
    /// reader thread. Default: nothing.
    func connectionClosed(clientID: Int)
}

extension MPDCommandHandler {
    public func connectionClosed(clientID: Int) {}
}

/// How the server listens and what it allows. Immutable once the server is made.
public struct MPDServerConfiguration: Sendable {
    /// A numeric address to bind: "127.0.0.1", "::1", "0.0.0.0", "::" (the caller decides; no default exposure).
    public var host: String
    /// 0: an ephemeral port (see `MPDServer.port`).
    public var port: UInt16
    public var maxClients = MPDProtocol.defaultMaxClients
    public var maxLineBytes = MPDProtocol.defaultMaxLineBytes
    public var maxCommandListBytes = MPDProtocol.defaultMaxCommandListBytes
    public var maxOutputBytes = MPDProtocol.defaultMaxOutputBytes
    /// A streamed answer whose client reads nothing for this long (seconds)
    /// drops the client; a client that reads, however slowly, is only
    /// throttled. MPD drops a client that reads nothing as soon as its
    /// unsent answers pass 8 MiB; 10 s here (a client flooding commands it
    /// never reads is gone within that, as the serve test expects).
    public var stalledClientSeconds: Double = 10
    /// Passwords and what each gives (MPD's `password "SECRET@read,add"`).
    public var passwords: [String: MPDPermissions] = [:]
    /// A new connection's permissions; nil: everything without passwords,
    /// nothing with them (MPD's `default_permissions`).
    public var defaultPermissions: MPDPermissions?
    /// How long a wrong `password` waits before its ACK (only that connection waits).
    public var wrongPasswordDelay: Double = 1
    /// The tags the server has (what `tagtypes` lists; MPD's `metadata_to_use`).
    public var tagTypes = MPDTagMask.library
    /// The version in the greeting.
    public var version = MPDProtocol.version

    public init(host: String = "127.0.0.1", port: UInt16 = 6600) {
        self.host = host
        self.port = port
    }

    /// The permissions a new connection has.
    public var initialPermissions: MPDPermissions {
        defaultPermissions ?? (passwords.isEmpty ? .all : [])
    }
}
