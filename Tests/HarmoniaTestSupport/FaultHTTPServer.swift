// The fault-injecting HTTP(S) server (Tests/Network/fault_server.py) as a
// test fixture: a real server on loopback whose URL query chooses the fault
// (stall, reset, refuse, never, rate, norange, lietotal, status, redirect,
// icy, chunked, cutat, type; ETag, Last-Modified and If-Range). See the script's header for the list.
import Foundation

public final class FaultHTTPServer: @unchecked Sendable {
    public let port: Int
    public let scheme: String
    private let process: LineProcess
    private let logPath: String

    /// Starts the server on a free loopback port (or `port`: a stopped
    /// server's, to bring it back), serving `root`; with `tls`, https with a
    /// self-signed certificate made for the occasion.
    public init(root: String = Fixtures.root + "/audio", tls: Bool = false, port: Int = 0) throws {
        let directory = NSTemporaryDirectory() + "harmonia-fault-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        logPath = directory + "/requests.jsonl"
        var arguments = [Fixtures.repositoryRoot + "/Tests/Network/fault_server.py", "--root", root, "--log", logPath, "--port", String(port)]
        if tls {
            let certificate = directory + "/cert.pem", key = directory + "/key.pem"
            let made = try ProcessRunner.run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                                                                  "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", certificate])
            guard made.status == 0 else { throw FixtureError("openssl could not make a certificate: \(made.stderrText)") }
            arguments += ["--tls", certificate, key]
        }
        process = try LineProcess("/usr/bin/python3", arguments)
        guard let line = process.stdout.lines(after: 0, timeout: 20).first, let port = Int(line) else {
            throw FixtureError("the fault server did not start: \(process.stderr.all.joined(separator: "\n"))")
        }
        self.port = port
        scheme = tls ? "https" : "http"
    }

    /// The URL of `file` with the faults in `query` (e.g. `"stall=40000"`).
    public func url(_ file: String, _ query: String = "") -> String {
        "\(scheme)://127.0.0.1:\(port)/\(file)" + (query.isEmpty ? "" : "?" + query)
    }

    /// The requests served so far, in order.
    public var requests: [Request] {
        guard let data = FileManager.default.contents(atPath: logPath) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONDecoder().decode(Request.self, from: Data($0.utf8))
        }
    }

    public struct Request: Decodable, Sendable {
        public let method: String
        public let path: String
        public let range: String?
        public let authorization: String?
        public let ifrange: String?
    }

    public func stop() {
        if process.process.isRunning { process.process.terminate() }
        process.waitForExit()
    }

    deinit { stop() }
}
