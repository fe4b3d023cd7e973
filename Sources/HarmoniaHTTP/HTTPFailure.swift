// The words of an http(s) failure — specs/network.md §Policy
//
// A player's stream (HTTPStream) and a download (httpFetch's callers: the
// offline copies and the stream cache) meet the same servers. The same
// failure reads the same from both, so a listener gets one line whether the
// stream cache is on (the default) or off.
import HarmoniaCore

/// The errors of an http(s) resource, one function per failure. Pure.
public enum HTTPFailure {
    /// The server answered 404.
    public static func notFound(_ url: String) -> CoreError {
        .notFound("\(url): the server answered 404 Not Found; check the URL")
    }

    /// The server refused the link (401, 403, 410). `askedForFreshLink`:
    /// the application was asked for a fresh one and gave none.
    public static func refused(_ url: String, status: Int, askedForFreshLink: Bool) -> CoreError {
        askedForFreshLink
            ? .ioError("\(url): the server refused access (HTTP \(status)) and no fresh link came; fetch a fresh URL")
            : .ioError("\(url): the server refused access (HTTP \(status)); the link may have expired, fetch a fresh URL")
    }

    /// An error status that asking again does not change (not 404, the refusals, 408, 429 or 5xx).
    public static func status(_ url: String, _ status: Int) -> CoreError {
        .ioError("\(url): the server answered HTTP \(status)")
    }

    /// `timedOut`'s `last` for an attempt that ended with a status worth asking again for (408, 429, 5xx).
    public static func statusReason(_ status: Int) -> String { "the server answered HTTP \(status)" }

    /// No byte of data came for the whole network timeout, across `attempts`
    /// attempts to read at byte `byte` (of `size`, when known); `last` says
    /// what ended the last attempt.
    public static func timedOut(_ url: String, after seconds: Double, attempts: Int, at byte: Int64, of size: Int64?,
                                last: String) -> CoreError {
        let at = size.map { "byte \(byte) of \($0)" } ?? "byte \(byte)"
        return .ioError("\(url): no data for \(formatSeconds(seconds)), the network timeout (\(attempts) attempt(s) to read at \(at); "
            + "last: \(last)); check the network or the server")
    }

    /// More redirects than the limit.
    public static func tooManyRedirects(_ url: String, count: Int, lastTarget: String?) -> CoreError {
        .ioError("\(url): too many redirects (\(count))" + (lastTarget.map { "; the last went to \($0)" } ?? ""))
    }

    /// The TLS certificate was refused (`detail`: libcurl's words).
    public static func untrustedCertificate(_ url: String, detail: String) -> CoreError {
        .ioError("\(url): the server's TLS certificate cannot be trusted (\(detail)); "
            + "check the server's certificate, or pass --insecure to skip verification")
    }

    /// Not a URL libcurl can fetch (`detail`: libcurl's words).
    public static func badURL(_ url: String, detail: String) -> CoreError {
        .invalidArgument("\(url): not a URL libcurl can fetch (\(detail))")
    }
}

/// Seconds as the messages give them: one decimal, "2.0 s".
func formatSeconds(_ seconds: Double) -> String {
    "\((seconds * 10).rounded() / 10) s"
}
