// Every libcurl call goes through here: one easy handle per transfer
// attempt, its options, and the mapping of CURLcode to what the policy
// needs (HTTPStream decides retry or fail). Callbacks receive the owner
// through an opaque pointer.
import CCrypto
import CCurl
import HarmoniaCore

/// libcurl is initialised once per process, before the first handle; its
/// TLS library first, with no cleanup at exit (CShims/CCrypto/shim.h: a
/// transfer still running on another thread while the process exits).
private let curlGlobal: Void = {
    _ = harmonia_openssl_init_without_atexit()
    curl_global_init(Int(CURL_GLOBAL_DEFAULT))
}()

/// Receives what one transfer delivers. Called on the transfer's thread.
protocol CurlTransferDelegate: AnyObject {
    /// A header line (status lines included), without its CRLF.
    func curlHeader(_ line: String)
    /// Body bytes; returns false to abort the transfer.
    func curlBody(_ bytes: UnsafeRawBufferPointer) -> Bool
    /// Called about once a second and on every progress; returns false to abort.
    func curlProgress() -> Bool
}

/// What one transfer needs to know.
struct CurlRequest {
    let url: String
    /// First byte wanted; 0 sends no Range header.
    let start: Int64
    /// "Name: value" lines, sent on every request and redirect (libcurl
    /// keeps a custom `Authorization` to the original host).
    let headers: [String]
    let userAgent: String
    let verifyTLS: Bool
    let maxRedirects: Int
    let connectTimeout: Double
    /// A POST's body (nil: a GET).
    var postBody: [UInt8]? = nil
    /// True: a status ≥ 400 ends the transfer as an error, its body unread.
    var failOnError = true
    /// The whole transfer's limit in seconds (nil: none).
    var totalTimeout: Double? = nil
    /// Ask for ICY metadata (a stream); a POST does not.
    var icy = true
}

/// How a transfer ended.
struct CurlOutcome {
    let code: CURLcode
    /// The last response's HTTP status (0 when none came).
    let status: Int
    let redirects: Int
    let effectiveURL: String?
    /// libcurl's own words for the failure ("" on success).
    let detail: String

    var succeeded: Bool { code == CURLE_OK }
    var abortedByUs: Bool { code == CURLE_ABORTED_BY_CALLBACK || code == CURLE_WRITE_ERROR }
    var tooManyRedirects: Bool { code == CURLE_TOO_MANY_REDIRECTS }
    var httpError: Bool { code == CURLE_HTTP_RETURNED_ERROR }
    /// The server's certificate was not trusted, or TLS could not start.
    var certificateProblem: Bool {
        code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CACERT_BADFILE
            || code == CURLE_SSL_CONNECT_ERROR || code == CURLE_SSL_CERTPROBLEM || code == CURLE_SSL_ISSUER_ERROR
    }
    var badURL: Bool { code == CURLE_URL_MALFORMAT || code == CURLE_UNSUPPORTED_PROTOCOL }
}

/// Runs one blocking transfer of `request`, feeding `delegate`.
func performCurlTransfer(_ request: CurlRequest, delegate: CurlTransferDelegate) -> CurlOutcome {
    _ = curlGlobal
    guard let easy = curl_easy_init() else {
        return CurlOutcome(code: CURLE_OUT_OF_MEMORY, status: 0, redirects: 0, effectiveURL: nil, detail: "out of memory")
    }
    defer { curl_easy_cleanup(easy) }
    var headerList: UnsafeMutablePointer<curl_slist>? = nil
    defer { curl_slist_free_all(headerList) }
    for header in request.headers + (request.icy ? ["Icy-MetaData: 1"] : []) {
        headerList = curl_slist_append(headerList, header)
    }
    // A Shoutcast server answers `ICY 200 OK`: libcurl takes it for HTTP/1.0 200.
    let aliases = curl_slist_append(nil, "ICY 200 OK")
    defer { curl_slist_free_all(aliases) }
    let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    defer { errorBuffer.deallocate() }
    errorBuffer[0] = 0
    let holder = CurlDelegateBox(delegate)
    let box = Unmanaged.passUnretained(holder).toOpaque()

    _ = hc_curl_setopt_pointer(easy, CURLOPT_URL, request.url)
    _ = hc_curl_setopt_long(easy, CURLOPT_NOSIGNAL, 1)
    _ = hc_curl_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 1)
    _ = hc_curl_setopt_long(easy, CURLOPT_MAXREDIRS, max(0, request.maxRedirects))
    _ = hc_curl_setopt_pointer(easy, CURLOPT_PROTOCOLS_STR, "http,https")
    _ = hc_curl_setopt_pointer(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
    _ = hc_curl_setopt_long(easy, CURLOPT_FAILONERROR, request.failOnError ? 1 : 0)
    if let timeout = request.totalTimeout { _ = hc_curl_setopt_long(easy, CURLOPT_TIMEOUT_MS, max(1, Int(min(timeout, 86_400) * 1000))) }
    _ = hc_curl_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, max(1, Int(request.connectTimeout * 1000)))
    _ = hc_curl_setopt_long(easy, CURLOPT_SSL_VERIFYPEER, request.verifyTLS ? 1 : 0)
    _ = hc_curl_setopt_long(easy, CURLOPT_SSL_VERIFYHOST, request.verifyTLS ? 2 : 0)
    _ = hc_curl_setopt_pointer(easy, CURLOPT_USERAGENT, request.userAgent)
    _ = hc_curl_setopt_pointer(easy, CURLOPT_HTTPHEADER, headerList)
    _ = hc_curl_setopt_pointer(easy, CURLOPT_HTTP200ALIASES, aliases)
    _ = hc_curl_setopt_pointer(easy, CURLOPT_ERRORBUFFER, errorBuffer)
    if request.start > 0 { _ = hc_curl_setopt_pointer(easy, CURLOPT_RANGE, "\(request.start)-") }
    _ = hc_curl_setopt_data_callback(easy, CURLOPT_WRITEFUNCTION, curlWriteCallback)
    _ = hc_curl_setopt_pointer(easy, CURLOPT_WRITEDATA, box)
    _ = hc_curl_setopt_data_callback(easy, CURLOPT_HEADERFUNCTION, curlHeaderCallback)
    _ = hc_curl_setopt_pointer(easy, CURLOPT_HEADERDATA, box)
    _ = hc_curl_setopt_long(easy, CURLOPT_NOPROGRESS, 0)
    _ = hc_curl_setopt_progress_callback(easy, curlProgressCallback)
    _ = hc_curl_setopt_pointer(easy, CURLOPT_XFERINFODATA, box)

    let code = withExtendedLifetime(holder) {
        guard let body = request.postBody else { return curl_easy_perform(easy) }
        // libcurl reads the body from our buffer during perform (not copied).
        return body.withUnsafeBytes { bytes in
            _ = hc_curl_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(bytes.count))
            _ = hc_curl_setopt_pointer(easy, CURLOPT_POSTFIELDS, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1))
            return curl_easy_perform(easy)
        }
    }
    var status = 0, redirects = 0
    _ = hc_curl_getinfo_long(easy, CURLINFO_RESPONSE_CODE, &status)
    _ = hc_curl_getinfo_long(easy, CURLINFO_REDIRECT_COUNT, &redirects)
    var effective: UnsafePointer<CChar>? = nil
    _ = hc_curl_getinfo_string(easy, CURLINFO_EFFECTIVE_URL, &effective)
    let detail = errorBuffer[0] != 0 ? String(cString: errorBuffer) : String(cString: curl_easy_strerror(code))
    return CurlOutcome(code: code, status: status, redirects: redirects,
                       effectiveURL: effective.map { String(cString: $0) }, detail: code == CURLE_OK ? "" : detail)
}

/// Holds the delegate for the C callbacks (a class, so its address is stable).
private final class CurlDelegateBox {
    unowned let delegate: CurlTransferDelegate
    init(_ delegate: CurlTransferDelegate) { self.delegate = delegate }
}

private func delegate(_ user: UnsafeMutableRawPointer?) -> CurlTransferDelegate? {
    user.map { Unmanaged<CurlDelegateBox>.fromOpaque($0).takeUnretainedValue().delegate }
}

private func curlWriteCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?) -> Int {
    let total = size * count
    guard let data, let delegate = delegate(user) else { return 0 }
    return delegate.curlBody(UnsafeRawBufferPointer(start: data, count: total)) ? total : 0
}

private func curlHeaderCallback(_ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int, _ user: UnsafeMutableRawPointer?) -> Int {
    let total = size * count
    guard let data, let delegate = delegate(user) else { return 0 }
    // The CRLF goes as bytes: in a String, "\r\n" is one Character.
    var bytes = UnsafeRawBufferPointer(start: data, count: total)
    while let last = bytes.last, last == 0x0A || last == 0x0D { bytes = UnsafeRawBufferPointer(rebasing: bytes.dropLast()) }
    delegate.curlHeader(String(decoding: bytes, as: UTF8.self))
    return total
}

private func curlProgressCallback(_ user: UnsafeMutableRawPointer?, _ downloadTotal: curl_off_t, _ downloaded: curl_off_t,
                                  _ uploadTotal: curl_off_t, _ uploaded: curl_off_t) -> Int32 {
    guard let delegate = delegate(user) else { return 1 }
    return delegate.curlProgress() ? 0 : 1
}
