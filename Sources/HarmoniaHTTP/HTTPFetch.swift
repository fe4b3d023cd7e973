// HTTPFetch: one plain transfer for a download — specs/offline.md §Downloads
//
// Where HTTPStream reads a resource like a file for a decoder (a window, its
// own reconnects), a download wants each response as it is: its status and
// validators, a Range with If-Range, the body handed on as it comes. The
// retry policy is the caller's (the offline store decides what a 200 after
// a Range means). Same libcurl calls (CurlCalls.swift), same header parsing
// (ContentRange).
import CCurl
import Foundation
import HarmoniaCore

/// What a response said about its body.
public struct HTTPFetchHead: Sendable, Equatable {
    public var status = 0
    /// `Content-Length`, when a number ≥ 0.
    public var contentLength: Int64?
    /// `Content-Range` of a 206: first byte, and the total when declared and not contradicted.
    public var rangeFirst: Int64?
    public var rangeTotal: Int64?
    /// True when the Content-Range was present but unreadable or contradicted itself.
    public var rangeInvalid = false
    public var etag: String?
    public var lastModified: String?
    /// `Content-Type` without its parameters, lower-cased.
    public var contentType: String?
    /// Any `icy-*` header, or an `ICY 200` status line: a radio stream.
    public var icy = false

    public init() {}
}

/// How a fetch ended.
public enum HTTPFetchEnd: Sendable, Equatable {
    /// The body arrived as the transport framed it (maybe fewer bytes than declared).
    case finished
    /// The caller's `body` or `head` returned false.
    case stoppedByCaller
    /// An HTTP error status (≥ 400) came.
    case status(Int)
    /// No byte for the stall timeout, a reset, a refused connection: worth another attempt.
    case transient(String)
    /// Will not get better by asking again: a bad URL, a certificate refused, a redirect loop.
    case permanent(CoreError)
}

/// One GET of `url` from byte `start` (with `If-Range: ifRange` when given),
/// blocking the calling thread until the response ends.
///
/// `head` is called once per response (after redirects) with its headers;
/// returning false stops the transfer. `body` gets the body's bytes in order;
/// returning false stops it. `shouldStop` is polled about once a second.
/// A connection (or attempt) that brings no byte for `stallTimeout` seconds
/// ends as `transient`.
///
/// Threads: any; the callbacks run on the calling thread.
public func httpFetch(url: String, start: Int64, ifRange: String?, configuration: HTTPSourceConfiguration,
                      head: (HTTPFetchHead) -> Bool, body: (UnsafeRawBufferPointer) -> Bool,
                      shouldStop: () -> Bool = { false }) -> HTTPFetchEnd {
    withoutActuallyEscaping(head) { head in
        withoutActuallyEscaping(body) { body in
            withoutActuallyEscaping(shouldStop) { shouldStop in
                let fetch = HTTPFetchTransfer(stallTimeout: configuration.stallTimeout, head: head, body: body, shouldStop: shouldStop)
                var headers = configuration.headers + (configuration.headersForURL?(url) ?? [])
                if let ifRange, start > 0 { headers.append("If-Range: \(ifRange)") }
                let request = CurlRequest(url: url, start: start, headers: headers, userAgent: configuration.userAgent,
                                          verifyTLS: configuration.verifyTLS, maxRedirects: configuration.maxRedirects,
                                          connectTimeout: min(configuration.stallTimeout, configuration.networkTimeout))
                let outcome = performCurlTransfer(request, delegate: fetch)
                return fetch.end(outcome, url: url)
            }
        }
    }
}

/// The delegate of one `httpFetch`. Transfer (calling) thread only.
private final class HTTPFetchTransfer: CurlTransferDelegate {
    private let stallTimeout: Double
    private let head: (HTTPFetchHead) -> Bool
    private let body: (UnsafeRawBufferPointer) -> Bool
    private let shouldStop: () -> Bool
    private var response = HTTPFetchHead()
    private var stoppedByCaller = false
    private var lastData = monotonicSeconds()

    init(stallTimeout: Double, head: @escaping (HTTPFetchHead) -> Bool, body: @escaping (UnsafeRawBufferPointer) -> Bool,
         shouldStop: @escaping () -> Bool) {
        self.stallTimeout = stallTimeout
        self.head = head
        self.body = body
        self.shouldStop = shouldStop
    }

    func curlHeader(_ line: String) {
        if line.hasPrefix("HTTP/") || line.hasPrefix("ICY ") {
            response = HTTPFetchHead()
            response.status = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            response.icy = line.hasPrefix("ICY ")
            return
        }
        guard !line.isEmpty else {
            // The end of one response's headers: a redirect's are not the caller's business.
            if (200..<300).contains(response.status), !head(response) { stoppedByCaller = true }
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        if name.hasPrefix("icy-") { response.icy = true }
        switch name {
        case "content-length": response.contentLength = Int64(value).flatMap { $0 >= 0 ? $0 : nil }
        case "content-range":
            if let range = ContentRange(value) {
                response.rangeFirst = range.first
                switch range.total {
                case .known(let total): response.rangeTotal = total
                case .contradictory: response.rangeInvalid = true
                case .unknown: break
                }
            } else {
                response.rangeInvalid = true
            }
        case "etag": response.etag = value.isEmpty ? nil : value
        case "last-modified": response.lastModified = value.isEmpty ? nil : value
        case "content-type":
            response.contentType = value.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        default: break
        }
    }

    func curlBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if stoppedByCaller { return false }
        lastData = monotonicSeconds()
        if !body(bytes) { stoppedByCaller = true; return false }
        return true
    }

    func curlProgress() -> Bool {
        if stoppedByCaller || shouldStop() { stoppedByCaller = true; return false }
        return monotonicSeconds() - lastData < stallTimeout
    }

    func end(_ outcome: CurlOutcome, url: String) -> HTTPFetchEnd {
        if stoppedByCaller { return .stoppedByCaller }
        if outcome.succeeded { return .finished }
        if outcome.httpError { return .status(outcome.status) }
        if outcome.tooManyRedirects {
            return .permanent(HTTPFailure.tooManyRedirects(url, count: outcome.redirects, lastTarget: outcome.effectiveURL))
        }
        if outcome.certificateProblem { return .permanent(HTTPFailure.untrustedCertificate(url, detail: outcome.detail)) }
        if outcome.badURL { return .permanent(HTTPFailure.badURL(url, detail: outcome.detail)) }
        if outcome.abortedByUs { return .transient("no data for \(formatSeconds(stallTimeout))") }
        return .transient(outcome.detail)
    }
}
