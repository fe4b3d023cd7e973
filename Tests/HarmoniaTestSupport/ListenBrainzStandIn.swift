// The tests' ListenBrainz (Tests/Network/listenbrainz_standin.py) on a
// loopback port: its requests and the listens it accepted.
import Foundation

public final class ListenBrainzStandIn: @unchecked Sendable {
    public let port: Int
    public let token: String
    private var process: LineProcess
    private let requestsLog: String
    private let acceptedLog: String
    private var acknowledged = 0

    /// Starts the stand-in accepting `token`; on `port` when given (a restart
    /// after an outage), else a free one. The logs live in `folder` and
    /// outlive a restart.
    public init(token: String, folder: String, port: Int? = nil) throws {
        self.token = token
        requestsLog = folder + "/lb-requests.jsonl"
        acceptedLog = folder + "/lb-accepted.jsonl"
        process = try LineProcess("/usr/bin/python3", [Fixtures.repositoryRoot + "/Tests/Network/listenbrainz_standin.py",
                                                       "--token", token, "--port", String(port ?? 0),
                                                       "--requests", requestsLog, "--accepted", acceptedLog])
        guard let line = process.stdout.lines(after: 0, timeout: 20).first, let bound = Int(line) else {
            throw FixtureError("the ListenBrainz stand-in did not start: \(process.stderr.all.joined(separator: "\n"))")
        }
        self.port = bound
        acknowledged = 1
    }

    /// The API root to give `--listenbrainz-url`.
    public var url: String { "http://127.0.0.1:\(port)" }

    /// Sends a fault command (`status 429 1 X-RateLimit-Reset-In=2`, `hang 1`, `drop 1`) and waits for its "ok".
    public func command(_ line: String) {
        process.write(line + "\n")
        acknowledged += 1
        _ = process.stdout.lines(after: acknowledged - 1, timeout: 10)
    }

    /// Every submit request so far: `status` (an Int, or "hang"/"drop"), `listen_type`, `count`, `time`, `body`.
    public var requests: [[String: Any]] { Self.read(requestsLog) }

    /// Every listen accepted (200, or recorded before a dropped answer), raw: repeats stay repeats.
    public var accepted: [[String: Any]] { Self.read(acceptedLog) }

    /// The accepted listens as ListenBrainz keeps them: one per (listened_at, track, artist).
    public var stored: [[String: Any]] {
        var seen = Set<String>()
        return accepted.filter { entry in
            let listen = entry["listen"] as? [String: Any] ?? [:]
            let meta = listen["track_metadata"] as? [String: Any] ?? [:]
            let key = "\(listen["listened_at"] ?? "")|\(meta["track_name"] ?? "")|\(meta["artist_name"] ?? "")"
            return seen.insert(key).inserted
        }
    }

    /// Stops it (connections refused from now on).
    public func stop() {
        if process.process.isRunning { process.process.terminate() }
        process.waitForExit()
    }

    private static func read(_ path: String) -> [[String: Any]] {
        guard let data = FileManager.default.contents(atPath: path) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    deinit { stop() }
}
