// `harmonia-play serve` started for a test, and waited for.
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One `serve` process on a private folder, its MPD port on 127.0.0.1.
public final class ServeProcess {
    public let process: LineProcess
    public let port: Int
    public let folder: String

    /// Starts `serve` on `music` with its database, state, stored playlists and offline store in `folder`
    /// and waits until its MPD port listens.
    /// - Parameters:
    ///   - extra: more arguments (they may repeat an option: the last wins).
    ///   - environment: the child's whole environment (nil: this process's).
    public init(music: String, folder: String, extra: [String] = [], environment: [String: String]? = nil) throws {
        self.folder = folder
        process = try LineProcess.harmoniaPlay(["serve", "--music-dir", music, "--database", folder + "/library.sqlite",
                                                "--state", folder + "/state.json", "--playlist-dir", folder + "/playlists",
                                                "--store", folder + "/offline", "--output", "null",
                                                "--mpd-listen", "127.0.0.1:0", "--listen", Self.webListen, "--quiet"] + extra,
                                               environment: environment)
        guard let line = process.stderr.take(timeout: 20, where: { $0.contains("MPD protocol on 127.0.0.1:") })?.line,
              let port = line.split(separator: ":").last.flatMap({ Int($0) }) else {
            throw ServeTestError.didNotStart(process.stderr.all.joined(separator: "\n"))
        }
        self.port = port
    }

    /// The web remote as users run it (on by default, on loopback), on a
    /// free port so tests can run side by side; off only in the sanitizer
    /// builds, which are made without it (HARMONIA_WITHOUT_WEB, Makefile).
    static var webListen: String {
        ProcessInfo.processInfo.environment["HARMONIA_WITHOUT_WEB"] == nil ? "127.0.0.1:0" : "off"
    }

    /// The password `--password` set, given by every new client.
    public var password: String?

    /// A new connection (which gives the password when one is set).
    public func client() throws -> MPDTestClient {
        let client = try MPDTestClient(port: port)
        if let password { _ = try client.command("password \(password)") }
        return client
    }

    /// Waits (MPD's `idle update`, bounded) until no update runs and the library has `songs` songs.
    public func waitForLibrary(songs: Int) throws {
        let client = try client()
        for _ in 0..<50 {
            let status = try client.fields("status"), stats = try client.fields("stats")
            if status["updating_db"] == nil && stats["songs"] == String(songs) { return }
            _ = try client.command("idle update database")
        }
        throw ServeTestError.libraryNotReady
    }

    @discardableResult
    public func stop(_ signo: Int32 = SIGTERM) -> Int32? {
        kill(process.process.processIdentifier, signo)
        return process.waitForExit(timeout: 10)
    }
}

public enum ServeTestError: Error {
    case didNotStart(String)
    case libraryNotReady
}

