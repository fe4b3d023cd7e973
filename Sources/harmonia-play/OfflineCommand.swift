// harmonia-play offline add|list|remove|verify — specs/offline.md §Commands
//
// Argument parsing and printing only: the store, the downloads and the
// checks are HarmoniaOfflineStore's.
import ArgumentParser
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaHTTP
import HarmoniaOfflineStore

struct OfflineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "offline",
        abstract: "Offline copies: download, list, remove and verify.",
        discussion: """
            Copies live in one folder (--store DIR; default $XDG_DATA_HOME/harmonia-play/offline),
            indexed by SQLite. A download that is interrupted (even by kill -9) resumes where it
            stopped when run again; if the server's file changed, it starts over.
            Errors are one line each, 'harmonia-play: URL: CATEGORY: message'.
            Exit status: 0 all done, 1 some failed (or damage found by verify), 2 usage error.
            """,
        subcommands: [OfflineAddCommand.self, OfflineListCommand.self, OfflineRemoveCommand.self, OfflineVerifyCommand.self]
    )
}

/// `--store DIR`, shared by every offline subcommand.
struct OfflineStoreOption: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The store folder (default: $XDG_DATA_HOME/harmonia-play/offline).", valueName: "DIR"))
    var store: String?

    /// Opens the store, or reports why not and exits 1.
    func open() throws -> OfflineStore {
        let directory = store ?? OfflineStore.defaultDirectory()
        do {
            return try OfflineStore(directory: directory)
        } catch {
            Console.report(directory, error)
            throw ExitCode(1)
        }
    }
}

struct OfflineAddCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Download URLs into the store (resuming what an earlier run left).",
        discussion: """
            On a terminal a progress bar (bytes, rate, time left) on stderr; otherwise one line per
            file on stdout when it is complete. A 404, a page that is not audio, a radio stream,
            a file: URL or a non-URL fails with one line and stores nothing complete.
            """
    )

    @OptionGroup var storeOption: OfflineStoreOption

    @Option(name: .long, help: ArgumentHelp("The entry's key (default: the URL); one URL only.", valueName: "KEY"))
    var key: String?

    @Option(name: .long, help: ArgumentHelp("Give up after this many seconds without a new byte (default 15).", valueName: "SECONDS"))
    var networkTimeout: Double?

    @Argument(help: "http(s) URLs.")
    var urls: [String]

    func validate() throws {
        guard !urls.isEmpty else { throw ValidationError("offline add needs at least one URL") }
        if key != nil, urls.count != 1 { throw ValidationError("--key names one entry: give exactly one URL with it") }
        if let key, key.isEmpty { throw ValidationError("--key must not be empty") }
        if let networkTimeout, !(networkTimeout.isFinite && networkTimeout > 0 && networkTimeout <= 3600) {
            throw ValidationError("--network-timeout must be a number of seconds above 0 (at most 3600)")
        }
    }

    func run() throws {
        var options = OfflineDownloadOptions()
        options.probe = probeAudio
        if let networkTimeout {
            options.giveUpAfter = networkTimeout
            options.http.stallTimeout = min(options.http.stallTimeout, networkTimeout)
        }
        // Checked before the store opens: a bad argument touches nothing.
        var failed = false
        var good: [String] = []
        for url in urls {
            do throws(CoreError) { try OfflineDownloader.checkURL(url); good.append(url) } catch {
                Console.report(url, error)
                failed = true
            }
        }
        if !good.isEmpty {
            let downloader = OfflineDownloader(store: try storeOption.open(), options: options)
            let bar = isatty(2) == 1 ? OfflineProgressBar() : nil
            for url in good {
                do throws(CoreError) {
                    let entry = try downloader.add(url: url, key: key, progress: { bar?.show($0) })
                    bar?.finish()
                    Console.out("offline: \(Console.oneLine(entry.key)): \(entry.size ?? 0) bytes, complete")
                } catch {
                    bar?.finish()
                    Console.report(url, error)
                    failed = true
                }
            }
        }
        if failed { throw ExitCode(1) }
    }
}

struct OfflineListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the store's entries.",
        discussion: """
            With --json, one JSON array of entries: key, url (as given), size (the whole length
            in bytes, null while unknown), held (bytes on disk), complete, pinned, added (UTC,
            ISO 8601), last_played, etag, last_modified, sha256 and file (inside the store folder).
            """
    )

    @OptionGroup var storeOption: OfflineStoreOption

    @Flag(name: .long, help: "A JSON array.")
    var json = false

    func run() throws {
        let store = try storeOption.open()
        let entries: [OfflineEntry]
        do { entries = try store.entries() } catch {
            Console.report(store.directory, error)
            throw ExitCode(1)
        }
        if json {
            Console.out(JSONValue.array(entries.map(Self.json)).serialized)
            return
        }
        for entry in entries {
            let state = entry.complete ? "complete"
                : (entry.damaged ? "damaged " : "partial ") + "\(entry.held)/\(entry.size.map(String.init) ?? "?")"
            Console.out("\(Console.oneLine(entry.key))\t\(entry.size.map(String.init) ?? "-")\t\(state)\t\(Console.oneLine(entry.url))")
        }
    }

    static func json(_ entry: OfflineEntry) -> JSONValue { ControlOffline.copy(OfflineStoreCopies.copy(entry)) }
}

struct OfflineRemoveCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove entries by key or URL; their space is freed at once.")

    @OptionGroup var storeOption: OfflineStoreOption

    @Argument(help: "Keys or URLs.")
    var names: [String]

    func validate() throws {
        guard !names.isEmpty else { throw ValidationError("offline remove needs a key or a URL") }
    }

    func run() throws {
        let store = try storeOption.open()
        var failed = false
        for name in names {
            do throws(CoreError) {
                _ = try store.remove(named: name)
            } catch {
                Console.report(name, error)
                failed = true
            }
        }
        if failed { throw ExitCode(1) }
    }
}

struct OfflineVerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Re-read every complete or damaged entry block by block; fetch changed blocks again, or remove and name the copies that cannot be (exit 1).")

    @OptionGroup var storeOption: OfflineStoreOption

    func run() throws {
        let store = try storeOption.open()
        do {
            let damaged = try store.verify(repairingWith: HTTPSourceConfiguration())
            for damage in damaged where damage.repaired {
                Console.out("offline: \(Console.oneLine(damage.entry.key)): repaired (\(damage.problem))")
            }
            for damage in damaged where !damage.repaired {
                Console.report(damage.entry.key, .decodeError("damaged copy removed (file \(damage.entry.fileName)): \(damage.problem)"))
            }
            let count = try store.entries().count { $0.complete }
            Console.out("offline verify: \(count) complete, \(damaged.count) damaged")
            if damaged.contains(where: { !$0.repaired }) { throw ExitCode(1) }
        } catch let error as CoreError {
            Console.report(store.directory, error)
            throw ExitCode(1)
        }
    }
}

/// The progress bar on a terminal (stderr): bytes, rate, time left. One thread.
final class OfflineProgressBar {
    private var meter = TransferMeter()
    private var drawn = false

    func show(_ progress: OfflineProgress) {
        switch progress {
        case .started(_, _, let have, _):
            meter = TransferMeter(bytes: have)
        case .bytes(let key, let have, let total):
            let rate = meter.rate(bytes: have)
            let left = rate > 0 ? Double(max(0, total - have)) / rate : 0
            let percent = total > 0 ? Int(Double(have) * 100 / Double(total)) : 0
            let name = String(Console.oneLine(key).suffix(30))
            let line = "\(name) \(percent)% \(Self.bytes(Double(have)))/\(Self.bytes(Double(total))) \(Self.bytes(rate))/s ETA \(Int(min(left, 99_999_999).rounded()))s"
            Console.writeAll(2, "\r\u{1B}[K" + line)
            drawn = true
        case .retrying(let key, let have, let reason):
            finish()
            Console.err("harmonia-play: \(Console.oneLine(key)): connection lost at byte \(have) (\(Console.oneLine(reason))); retrying")
        }
    }

    func finish() {
        if drawn { Console.writeAll(2, "\r\u{1B}[K") }
        drawn = false
    }

    static func bytes(_ count: Double) -> String {
        if count >= 1_048_576 { return "\((count / 1048576 * 10).rounded() / 10) MB" }
        if count >= 1024 { return "\((count / 1024 * 10).rounded() / 10) KB" }
        return "\(Int(count)) B"
    }
}
