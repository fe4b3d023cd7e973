// harmonia-play history, harmonia-play listens submit — specs/listens.md §History, §Reporting
//
// Argument parsing and printing only: the store and the outbox are
// HarmoniaListens' and HarmoniaControl's.
import ArgumentParser
import Foundation
import HarmoniaControl
import HarmoniaCore
import HarmoniaListens

struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "The play history: the listens that counted, newest first.",
        discussion: """
            One line per listen: when it was first heard (UTC), artist — title, album, seconds
            heard and its delivery state (pending, sending, delivered, rejected). --json prints
            one array of objects. Exit status: 0, or 1 when the history cannot be read.
            """
    )

    @Option(name: .customLong("listens-db"), help: ArgumentHelp("The play history (default: $XDG_DATA_HOME/harmonia-play/listens.sqlite).", valueName: "FILE"))
    var listensDB: String?

    @Flag(help: "One JSON array of objects.")
    var json = false

    @Option(help: ArgumentHelp("At most N listens (default 50).", valueName: "N"))
    var limit: Int = 50

    func validate() throws {
        guard limit > 0, limit <= 1_000_000 else { throw ValidationError("--limit must be from 1 to 1000000") }
    }

    func run() throws {
        let file = listensDB ?? SQLiteListenStore.defaultFile()
        let listens: [ListenRecord]
        do {
            listens = try SQLiteListenStore(file: file).history(limit: limit)
        } catch {
            Console.report(file, error)
            throw ExitCode(1)
        }
        if json {
            Console.out(ListenJSON.array(listens))
            return
        }
        for listen in listens {
            let metadata = listen.metadata
            let names = [metadata.artists.joined(separator: ", "), metadata.title ?? metadata.source].filter { !$0.isEmpty }
            let album = metadata.album.map { " (\($0))" } ?? ""
            let reason = listen.state == .rejected ? ": " + (listen.lastError ?? "") : ""
            Console.out("\(ListenJSON.iso8601(listen.listenedAt))  \(names.joined(separator: " — "))\(album)  \(Int(listen.secondsHeard.rounded())) s  \(listen.state.rawValue)\(reason)")
        }
    }
}

struct ListensCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "listens",
        abstract: "Listens: deliver the history's backlog to ListenBrainz.",
        subcommands: [ListensSubmitCommand.self]
    )
}

struct ListensSubmitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Deliver every undelivered listen once, then exit (for a timer).",
        discussion: """
            Sends the backlog as imports of at most 1000 listens, waiting out the server's rate
            limit. Exit status: 0 when nothing is left to deliver (run again, it sends nothing),
            1 when a failure or a refused token left listens for later, 2 usage error (no token).
            """
    )

    @Option(name: .customLong("listens-db"), help: ArgumentHelp("The play history (default: $XDG_DATA_HOME/harmonia-play/listens.sqlite).", valueName: "FILE"))
    var listensDB: String?

    @Option(name: .customLong("listenbrainz-url"), help: ArgumentHelp("The ListenBrainz API root (default https://api.listenbrainz.org).", valueName: "URL"))
    var listenBrainzURL: String?

    @Option(name: .customLong("listenbrainz-token-file"), help: ArgumentHelp("A file holding your ListenBrainz token (or set HARMONIA_LISTENBRAINZ_TOKEN).", valueName: "FILE"))
    var tokenFile: String?

    func validate() throws {
        try ListenOptions.validate(listensDB: listensDB, listenBrainzURL: listenBrainzURL)
    }

    func run() throws {
        guard let store = ListenOptions.openStore(file: listensDB) else { throw ExitCode(1) }
        guard let outbox = try ListenOptions.outbox(store: store, url: listenBrainzURL, tokenFile: tokenFile) else {
            Console.err("harmonia-play: listens submit: no token: give --listenbrainz-token-file FILE or set \(ListenBrainzToken.environmentName)")
            throw ExitCode(2)
        }
        let (delivered, stopped) = outbox.deliverBacklog(timeout: 30) { seconds in
            usleep(UInt32(min(max(seconds, 0), 300) * 1_000_000))
        }
        let left = (try? store.undelivered(limit: Int.max).count) ?? 0
        Console.out("listens submit: \(delivered) delivered, \(left) left")
        if case .waiting? = stopped {
            Console.err("harmonia-play: listens submit: ListenBrainz could not be reached (\(lastError(store) ?? "no answer")); \(left) left for the next run")
        }
        if left > 0 || stopped != nil { throw ExitCode(1) }
    }

    private func lastError(_ store: SQLiteListenStore) -> String? {
        (try? store.undelivered(limit: 1))?.first?.lastError
    }
}

/// The history as JSON (`history --json`).
enum ListenJSON {
    static func array(_ listens: [ListenRecord]) -> String {
        let objects: [[String: Any]] = listens.map { listen in
            let metadata = listen.metadata
            return [
                "id": listen.id, "title": orNull(metadata.title), "artist": metadata.artists.joined(separator: ", "),
                "artists": metadata.artists, "album": orNull(metadata.album), "album_artist": orNull(metadata.albumArtist),
                "track_number": orNull(metadata.trackNumber), "duration": orNull(metadata.duration),
                "recording_mbid": orNull(metadata.recordingMBID), "release_mbid": orNull(metadata.releaseMBID),
                "artist_mbids": metadata.artistMBIDs, "source": metadata.source,
                "listened_at": listen.listenedAt, "listened_at_iso": iso8601(listen.listenedAt),
                "seconds_heard": (listen.secondsHeard * 1000).rounded() / 1000,
                "state": listen.state.rawValue, "attempts": listen.attempts, "error": orNull(listen.lastError),
            ]
        }
        let data = (try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data("[]".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    private static func orNull(_ value: Any?) -> Any { value ?? NSNull() }

    /// Unix seconds as `2026-11-27T22:46:07Z`.
    static func iso8601(_ seconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: Double(seconds)))
    }
}
