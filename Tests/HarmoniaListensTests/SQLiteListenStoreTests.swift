// SQLiteListenStore and ListenBrainz's payload — specs/listens.md §History,
// §Outbox, §What is sent
import Foundation
@testable import HarmoniaControl
import HarmoniaCore
@testable import HarmoniaListens
import Testing

@Suite("Listens store and payload") struct SQLiteListenStoreTests {
    static func file() -> String {
        NSTemporaryDirectory() + "hp-listens-\(getpid())-\(UInt32.random(in: 0...UInt32.max))/listens.sqlite"
    }

    static let metadata = ListenMetadata(title: "Song", artists: ["A", "B"], album: "Album", albumArtist: "AA", trackNumber: 3,
                                         duration: 200, recordingMBID: "8f3471b5-7e6a-48da-86a9-c1c07a0f47ae",
                                         releaseMBID: "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d",
                                         artistMBIDs: ["11111111-2222-4333-8444-555555555555"], source: "/music/song.flac")

    @Test("no file until the first listen; then every field back, newest first; states and errors")
    func roundTrip() throws {
        let file = Self.file()
        let store = try SQLiteListenStore(file: file)
        #expect(try store.history(limit: 10).isEmpty && !FileManager.default.fileExists(atPath: file))
        let first = try store.record(Self.metadata, listenedAt: 1_700_000_000, secondsHeard: 100.5)
        let second = try store.record(ListenMetadata(title: "Other", source: "http://x/y.mp3"), listenedAt: 1_700_000_300, secondsHeard: 31)
        #expect(first.dropped == 0 && second.id > first.id)
        let history = try store.history(limit: 10)
        #expect(history.map(\.id) == [second.id, first.id])
        let row = try #require(history.last)
        #expect(row.metadata == Self.metadata && row.listenedAt == 1_700_000_000 && row.secondsHeard == 100.5 && row.state == .pending)
        try store.mark([first.id], .sending, error: nil)
        try store.mark([first.id], .pending, error: "HTTP 503")
        try store.mark([second.id], .rejected, error: "bad")
        // A second process sees the same rows.
        let again = try SQLiteListenStore(file: file)
        let undelivered = try again.undelivered(limit: 10)
        #expect(undelivered.map(\.id) == [first.id] && undelivered[0].attempts == 1 && undelivered[0].lastError == "HTTP 503")
        try again.mark([first.id], .delivered, error: nil)
        #expect(try again.undelivered(limit: 10).isEmpty)
        // Delivered stays delivered.
        try again.mark([first.id], .pending, error: "late")
        #expect(try again.history(limit: 10).last?.state == .delivered)
    }

    @Test("the outbox bound drops the oldest undelivered, and says how many")
    func bound() throws {
        let store = try SQLiteListenStore(file: Self.file(), outboxBound: 3)
        var ids: [Int64] = []
        for n in 0..<3 { ids.append(try store.record(Self.metadata, listenedAt: 1_700_000_000 + Int64(n), secondsHeard: 40).id) }
        try store.mark([ids[0]], .delivered, error: nil)
        #expect(try store.record(Self.metadata, listenedAt: 1_700_000_010, secondsHeard: 40).dropped == 0)
        let over = try store.record(Self.metadata, listenedAt: 1_700_000_011, secondsHeard: 40)
        #expect(over.dropped == 1)
        #expect(try store.undelivered(limit: 10).map(\.id).contains(ids[1]) == false)
        #expect(try store.history(limit: 10).contains { $0.id == ids[0] })  // delivered ones are history, not outbox
    }

    @Test("payload: single, import, playing_now; MBIDs; no source; limits refused before sending")
    func payload() throws {
        let record = ListenRecord(id: 1, metadata: Self.metadata, listenedAt: 1_700_000_000, secondsHeard: 100)
        let single = try JSONSerialization.jsonObject(with: Data(ListenBrainzPayload.body(for: .listens([record], single: true)).get())) as? [String: Any]
        #expect(single?["listen_type"] as? String == "single")
        let listen = try #require((single?["payload"] as? [[String: Any]])?.first)
        #expect(listen["listened_at"] as? Int == 1_700_000_000)
        let track = try #require(listen["track_metadata"] as? [String: Any])
        #expect(track["artist_name"] as? String == "A, B" && track["track_name"] as? String == "Song" && track["release_name"] as? String == "Album")
        let info = try #require(track["additional_info"] as? [String: Any])
        #expect(info["duration_ms"] as? Int == 200_000 && info["tracknumber"] as? Int == 3)
        #expect(info["recording_mbid"] as? String == Self.metadata.recordingMBID && info["artist_mbids"] as? [String] == Self.metadata.artistMBIDs)
        #expect(info["media_player"] as? String == "harmonia-play" && info["submission_client_version"] as? String == HarmoniaVersion.string)
        let text = String(decoding: try ListenBrainzPayload.body(for: .listens([record, record], single: true)).get(), as: UTF8.self)
        #expect(text.contains("\"import\"") && !text.contains("/music/song.flac"))
        let now = String(decoding: try ListenBrainzPayload.body(for: .playingNow(Self.metadata)).get(), as: UTF8.self)
        #expect(now.contains("\"playing_now\"") && !now.contains("listened_at"))
        var huge = Self.metadata
        huge.title = String(repeating: "x", count: 11_000)
        #expect(throws: ListenBrainzPayload.Refusal.self) { try ListenBrainzPayload.body(for: .listens([ListenRecord(id: 2, metadata: huge, listenedAt: 1_700_000_000, secondsHeard: 1)], single: false)).get() }
        #expect(throws: ListenBrainzPayload.Refusal.self) { try ListenBrainzPayload.body(for: .playingNow(ListenMetadata(title: "t", source: "s"))).get() }
    }

    @Test("answers: 200, 400 with the server's reason, 401, 429 with X-RateLimit-Reset-In or Retry-After, 5xx")
    func outcomes() {
        #expect(ListenBrainzReporter.outcome(status: 200, headers: [:], body: []) == .accepted)
        #expect(ListenBrainzReporter.outcome(status: 400, headers: [:], body: Array(#"{"code":400,"error":"bad\nthing"}"#.utf8)) == .rejected("bad thing"))
        if case .unauthorized = ListenBrainzReporter.outcome(status: 401, headers: [:], body: []) {} else { Issue.record("401") }
        #expect(ListenBrainzReporter.outcome(status: 429, headers: ["x-ratelimit-reset-in": "7"], body: []) == .rateLimited(retryAfter: 7))
        #expect(ListenBrainzReporter.outcome(status: 429, headers: ["retry-after": "3"], body: []) == .rateLimited(retryAfter: 3))
        #expect(ListenBrainzReporter.outcome(status: 503, headers: [:], body: []) == .failed("HTTP 503"))
    }

    @Test("the token: trimmed from a file or the environment; a file wins; bad ones refused without echoing them")
    func token() throws {
        let path = NSTemporaryDirectory() + "hp-token-\(getpid())"
        try "  abc-123\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try ListenBrainzToken.read(file: path, environment: [ListenBrainzToken.environmentName: "env"]) == "abc-123")
        #expect(try ListenBrainzToken.read(file: nil, environment: [ListenBrainzToken.environmentName: " env "]) == "env")
        #expect(try ListenBrainzToken.read(file: nil, environment: [:]) == nil)
        try "two words".write(toFile: path, atomically: true, encoding: .utf8)
        do { _ = try ListenBrainzToken.read(file: path); Issue.record("accepted") } catch { #expect(!error.message.contains("two words")) }
    }
}
