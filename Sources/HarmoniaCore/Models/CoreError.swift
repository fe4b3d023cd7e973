// CoreError — specs/models.md §CoreError
//
// The one error type that crosses a port. Every message names the file or
// argument concerned and, where there is one, what the user can do about it.

/// A categorised, recoverable error. Adapters map every platform failure to
/// one of these categories at their boundary; nothing else crosses a port.
///
/// Stricter than the reference: `ioError` carries a message instead of an
/// opaque underlying `Error`, so the type is `Codable` and `Equatable` by
/// value and an application can show or log it as it is.
public enum CoreError: Error, Sendable, Equatable, Hashable, Codable {
    /// A parameter has a value the callee cannot accept (negative seek, …).
    case invalidArgument(String)
    /// The call is valid, but not in the current state (read after close, …).
    case invalidState(String)
    /// The resource does not exist (missing file, unknown sink).
    case notFound(String)
    /// Reading or writing failed: permission denied, network, lost server.
    case ioError(String)
    /// The data is corrupt or truncated, or a sheet is malformed.
    case decodeError(String)
    /// Not a format, codec or feature this build can handle.
    case unsupported(String)

    /// Every category, in declaration order.
    public enum Category: String, Sendable, Codable, CaseIterable {
        /// A bad argument from the caller.
        case invalidArgument
        /// A call that the current state does not allow.
        case invalidState
        /// No such file, or a 404.
        case notFound
        /// Reading, writing or the network failed, or access was refused.
        case ioError
        /// The data is corrupt or truncated.
        case decodeError
        /// Something we will not play (not audio, a codec or layout we refuse).
        case unsupported
    }

    /// The category: the case name, as used in CLI output and test vectors.
    public var category: Category {
        switch self {
        case .invalidArgument: .invalidArgument
        case .invalidState: .invalidState
        case .notFound: .notFound
        case .ioError: .ioError
        case .decodeError: .decodeError
        case .unsupported: .unsupported
        }
    }

    /// The human message, without the category.
    public var message: String {
        switch self {
        case .invalidArgument(let m), .invalidState(let m), .notFound(let m),
             .ioError(let m), .decodeError(let m), .unsupported(let m):
            m
        }
    }

    /// Builds an error of `category` with `message`.
    public init(_ category: Category, _ message: String) {
        switch category {
        case .invalidArgument: self = .invalidArgument(message)
        case .invalidState: self = .invalidState(message)
        case .notFound: self = .notFound(message)
        case .ioError: self = .ioError(message)
        case .decodeError: self = .decodeError(message)
        case .unsupported: self = .unsupported(message)
        }
    }

    // Codable as {"category": "...", "message": "..."}: stable and readable.
    private enum CodingKeys: String, CodingKey { case category, message }

    /// Decodes the `{"category": …, "message": …}` form `encode(to:)` writes.
    /// - Throws: `DecodingError` when a key is missing or the category is not
    ///   a `Category` raw value.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(try c.decode(Category.self, forKey: .category), try c.decode(String.self, forKey: .message))
    }

    /// Encodes as `{"category": …, "message": …}`: the category's raw value
    /// (`"notFound"`, …) and the message.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(category, forKey: .category)
        try c.encode(message, forKey: .message)
    }
}

extension CoreError: CustomStringConvertible {
    /// `category: message`, the form harmonia-play prints after the path.
    public var description: String { "\(category.rawValue): \(message)" }
}
