// ListenTracker: the player's frontend that keeps the play history
// — specs/listens.md §History
//
// Shown every playback event on the main loop, it feeds them to a
// ListenCounter with the wall clock, records each listen the moment it
// counts (committed before any network attempt) and hands it, and each
// "playing now", to the outbox, whose thread does the network.
import Foundation
import HarmoniaCore

/// Records counted listens in a store and tells an outbox.
///
/// Threads: the main loop (a `PlayerFrontend`). Recording is one short
/// SQLite commit; tags are read for local files only (no network on the loop).
public final class ListenTracker: PlayerFrontend {
    private let store: any ListenStorePort
    private let outbox: ListenOutbox?
    private let readTags: (String) -> TagBundle?
    private let report: (String) -> Void
    private let wallClock: () -> Double
    private var counter = ListenCounter()
    /// The tags of the last track looked up (its URL, its tags).
    private var tagCache: (url: String, tags: TagBundle?)?
    /// Listens recorded by this tracker.
    public private(set) var recordedCount = 0
    /// Told each listen once it is recorded (main loop): the control
    /// protocol's `listen` event. Set before the run starts.
    public var onListen: ((ListenRecord) -> Void)?

    /// - Parameters: `readTags` reads a local file's tags (nil when it cannot);
    ///   `report` prints one line for the user; `wallClock` Unix seconds.
    public init(store: any ListenStorePort, outbox: ListenOutbox?, readTags: @escaping (String) -> TagBundle?,
                report: @escaping (String) -> Void, wallClock: @escaping () -> Double = { Date().timeIntervalSince1970 }) {
        self.store = store
        self.outbox = outbox
        self.readTags = readTags
        self.report = report
        self.wallClock = wallClock
    }

    public func show(_ event: PlaybackEvent) {
        for notice in counter.observe(event, now: wallClock()) {
            switch notice {
            case .playingNow(let track, _):
                outbox?.playingNow(metadata(track))
            case .counted(let track, let listenedAt, let heard, let duration):
                var metadata = metadata(track)
                if duration > 0 { metadata.duration = duration }
                do {
                    let (id, dropped) = try store.record(metadata, listenedAt: listenedAt, secondsHeard: heard)
                    recordedCount += 1
                    if dropped > 0 {
                        report("harmonia-play: listens: the outbox is full; dropped the \(dropped) oldest undelivered listen\(dropped == 1 ? "" : "s")")
                    }
                    outbox?.recorded(id: id)
                    onListen?(ListenRecord(id: id, metadata: metadata, listenedAt: listenedAt, secondsHeard: heard))
                } catch {
                    report("harmonia-play: listens: \(error.message)")
                }
            }
        }
    }

    private func metadata(_ track: Track) -> ListenMetadata {
        if tagCache?.url != track.url {
            tagCache = (track.url, Self.isLocal(track.url) ? readTags(track.url) : nil)
        }
        return ListenMetadata(track: track, tags: tagCache?.tags)
    }

    /// A path or a `file:` URL: its tags are read without the network.
    static func isLocal(_ url: String) -> Bool {
        let lower = url.lowercased()
        return lower.hasPrefix("file:") || !lower.contains("://")
    }
}
