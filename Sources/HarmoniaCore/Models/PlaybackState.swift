// PlaybackState — specs/models.md §PlaybackState

/// Where a playback service is. `buffering` means playing but waiting for
/// data (a stalled network source); `error` carries what went wrong and is
/// left by a successful `load`.
public enum PlaybackState: Sendable, Equatable, Hashable {
    /// Nothing plays and there is no position.
    case stopped
    /// Sound is playing.
    case playing
    /// Paused at a position; `play` resumes from the exact next frame.
    case paused
    /// Playing, but waiting for data (a slow or stalled network source).
    case buffering
    /// Playback failed; `load` or `jump` recovers.
    case error(CoreError)

    /// The state's name as used in events, the control protocol and vectors.
    public var name: String {
        switch self {
        case .stopped: "stopped"
        case .playing: "playing"
        case .paused: "paused"
        case .buffering: "buffering"
        case .error: "error"
        }
    }
}

extension PlaybackState: CustomStringConvertible {
    /// The `name`, or `error(category: message)` for the error state.
    public var description: String {
        if case .error(let error) = self { return "error(\(error))" }
        return name
    }
}

extension PlaybackState: Codable {
    // {"state": "error", "error": {...}} or {"state": "playing"}.
    private enum CodingKeys: String, CodingKey { case state, error }

    /// Decodes the form `encode(to:)` writes.
    /// - Throws: `DecodingError` for an unknown state name, a missing key, or
    ///   an `error` state without its error.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let name = try c.decode(String.self, forKey: .state)
        switch name {
        case "stopped": self = .stopped
        case "playing": self = .playing
        case "paused": self = .paused
        case "buffering": self = .buffering
        case "error": self = .error(try c.decode(CoreError.self, forKey: .error))
        default:
            throw DecodingError.dataCorruptedError(forKey: .state, in: c,
                debugDescription: "unknown playback state '\(name)'")
        }
    }

    /// Encodes as `{"state": name}`, plus `"error"` (a `CoreError`) for the
    /// error state.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(name, forKey: .state)
        if case .error(let error) = self { try c.encode(error, forKey: .error) }
    }
}
