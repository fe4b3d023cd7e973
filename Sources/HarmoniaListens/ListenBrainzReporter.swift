// ListenBrainzReporter: the reporting port on ListenBrainz's API
// — specs/listens.md §Reporting
//
// POST /1/submit-listens with `Authorization: Token …`, one request per
// submission, through HarmoniaHTTP's libcurl POST. The answer becomes a
// ListenReportOutcome; the retry policy is the outbox's.
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaHTTP

/// ListenBrainz (or a self-hosted server with its API).
///
/// Threads: any; `submit` blocks for one request. The token is sent in the
/// header only: never in a URL, an error or a log line.
public final class ListenBrainzReporter: ListenReporterPort, @unchecked Sendable {
    /// The public API's root.
    public static let defaultURL = "https://api.listenbrainz.org"

    private let endpoint: String
    private let token: @Sendable () -> String?
    private let userAgent = "harmonia-play/\(HarmoniaVersion.string)"
    private let lock = NSLock()
    /// The token the server last refused. Guarded by `lock`.
    private var refusedToken: String?

    /// `root` the API root (we post to root + `/1/submit-listens`); `token`
    /// gives the user's token, trimmed and checked (`ListenBrainzToken`),
    /// read again for each request (so a new token file is used at once);
    /// nil when there is none any more.
    public init(root: String, token: @escaping @Sendable () -> String?) {
        var root = root
        while root.hasSuffix("/") { root.removeLast() }
        endpoint = root + "/1/submit-listens"
        self.token = token
    }

    public func credentialsChanged() -> Bool {
        let current = token()
        return lock.withLock { current != nil && current != refusedToken }
    }

    public func submit(_ submission: ListenSubmission, timeout: Double) -> ListenReportOutcome {
        guard let token = token() else { return .unauthorized("no token: the token file is gone or empty") }
        let body: [UInt8]
        switch ListenBrainzPayload.body(for: submission) {
        case .success(let bytes): body = bytes
        case .failure(let refusal): return .rejected(refusal.reason)
        }
        let result = httpPost(url: endpoint, headers: ["Authorization: Token \(token)", "Content-Type: application/json"],
                              body: body, timeout: timeout, userAgent: userAgent)
        switch result {
        case .failed(let detail):
            return .failed(detail)
        case .response(let status, let headers, let answer):
            let outcome = Self.outcome(status: status, headers: headers, body: answer)
            if case .unauthorized = outcome { lock.withLock { refusedToken = token } }
            return outcome
        }
    }

    /// What an answer means (ListenBrainz's statuses; the error text from its JSON).
    static func outcome(status: Int, headers: [String: String], body: [UInt8]) -> ListenReportOutcome {
        switch status {
        case 200: return .accepted
        case 400: return .rejected(message(body) ?? "HTTP 400")
        case 401, 403: return .unauthorized("HTTP \(status)" + (message(body).map { ": " + $0 } ?? ""))
        case 429:
            let wait = [headers["x-ratelimit-reset-in"], headers["retry-after"]]
                .compactMap { $0.flatMap(Double.init) }.first { $0.isFinite && $0 >= 0 }
            return .rateLimited(retryAfter: wait ?? 10)
        default:
            return .failed("HTTP \(status)" + (message(body).map { ": " + $0 } ?? ""))
        }
    }

    /// The `error` field of a JSON answer, on one line, at most 300 characters.
    static func message(_ body: [UInt8]) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
              let text = object["error"] as? String else { return nil }
        let line = text.split(whereSeparator: \.isNewline).joined(separator: " ")
        return line.count > 300 ? String(line.prefix(300)) + "…" : line
    }
}

/// The user's token: from a file (trimmed) or the environment, never the command line.
public enum ListenBrainzToken {
    /// The environment variable that may hold the token.
    public static let environmentName = "HARMONIA_LISTENBRAINZ_TOKEN"

    /// The token in `file`, else in the environment; nil when neither gives one.
    /// - Throws: `notFound`/`ioError` when `file` cannot be read,
    ///   `invalidArgument` when it holds no token or more than one line.
    public static func read(file: String?, environment: [String: String] = ProcessInfo.processInfo.environment) throws(CoreError) -> String? {
        if let file {
            guard FileManager.default.fileExists(atPath: file) else { throw .notFound("--listenbrainz-token-file '\(file)': no such file") }
            guard let data = FileManager.default.contents(atPath: file), data.count <= 4096 else {
                throw .ioError("--listenbrainz-token-file '\(file)': cannot be read (or is over 4 KiB)")
            }
            return try checked(String(decoding: data, as: UTF8.self), source: "--listenbrainz-token-file '\(file)'")
        }
        guard let value = environment[environmentName] else { return nil }
        return try checked(value, source: environmentName)
    }

    private static func checked(_ text: String, source: String) throws(CoreError) -> String {
        let token = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !token.isEmpty else { throw .invalidArgument("\(source) holds no token") }
        guard token.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw .invalidArgument("\(source): the token must be one word of printable ASCII (copy it from your ListenBrainz settings page)")
        }
        return token
    }
}
