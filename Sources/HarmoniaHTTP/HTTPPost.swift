// HTTPPost: one POST of a small body, its answer read whole
// — specs/listens.md §Reporting
//
// For an API call (ListenBrainz's submit-listens): one attempt, no retries
// (the caller's policy decides), the status, the headers and the body of
// any answer, error statuses included. Same libcurl calls (CurlCalls.swift).
import CCurl
import HarmoniaCore

/// The answer to one `httpPost`.
public enum HTTPPostResult: Sendable, Equatable {
    /// A response came: its status, headers (names lower-cased) and body (at most 64 KiB kept).
    case response(status: Int, headers: [String: String], body: [UInt8])
    /// No response: refused, reset, timed out, a bad URL or certificate (libcurl's words).
    case failed(String)
}

/// POSTs `body` to `url` with `headers` ("Name: value"), blocking the calling
/// thread at most `timeout` seconds. Redirects are not followed for a POST.
///
/// Threads: any.
public func httpPost(url: String, headers: [String], body: [UInt8], timeout: Double,
                     userAgent: String, verifyTLS: Bool = true) -> HTTPPostResult {
    let limit = timeout.isFinite ? max(0.1, timeout) : 30
    let answer = HTTPPostAnswer()
    var request = CurlRequest(url: url, start: 0, headers: headers, userAgent: userAgent, verifyTLS: verifyTLS,
                              maxRedirects: 0, connectTimeout: limit)
    request.postBody = body
    request.failOnError = false
    request.totalTimeout = limit
    request.icy = false
    let outcome = performCurlTransfer(request, delegate: answer)
    guard outcome.succeeded, outcome.status > 0 else {
        return .failed(outcome.succeeded ? "no HTTP status" : outcome.detail)
    }
    return .response(status: outcome.status, headers: answer.headers, body: answer.body)
}

/// Collects one response. Transfer (calling) thread only.
private final class HTTPPostAnswer: CurlTransferDelegate {
    static let bodyLimit = 64 * 1024
    var headers: [String: String] = [:]
    var body: [UInt8] = []

    func curlHeader(_ line: String) {
        if line.hasPrefix("HTTP/") { headers = [:]; return }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        headers[name] = String(line[line.index(after: colon)...]).trimmingSpaces
    }

    func curlBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let room = max(0, Self.bodyLimit - body.count)
        body.append(contentsOf: bytes.prefix(room))
        return true
    }

    func curlProgress() -> Bool { true }
}

private extension String {
    var trimmingSpaces: String {
        var text = Substring(self)
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return String(text)
    }
}
