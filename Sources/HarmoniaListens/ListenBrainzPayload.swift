// ListenBrainzPayload: the JSON of a submit-listens request
// — specs/listens.md §What is sent
//
// Only what the spec lists leaves the machine: never the source path or URL.
// Checked against ListenBrainz's documented limits before sending, so a
// listen the service would refuse is refused here, with the reason.
import Foundation
import HarmoniaControl
import HarmoniaCore

enum ListenBrainzPayload {
    /// MAX_LISTEN_SIZE: one listen's JSON, in bytes.
    static let maxListenBytes = 10_240
    /// MAX_DURATION_MS_LIMIT: 24 days.
    static let maxDurationMilliseconds = 24 * 24 * 3600 * 1000
    /// LISTEN_MINIMUM_TS: nothing heard before October 2002.
    static let earliestListen: Int64 = 1_033_430_400

    struct Refusal: Error, Equatable { let reason: String }

    struct Request: Encodable {
        let listen_type: String
        let payload: [Listen]
    }

    struct Listen: Encodable {
        let listened_at: Int64?
        let track_metadata: TrackMetadata
    }

    struct TrackMetadata: Encodable {
        let artist_name: String
        let track_name: String
        let release_name: String?
        let additional_info: AdditionalInfo
    }

    struct AdditionalInfo: Encodable {
        let duration_ms: Int?
        let tracknumber: Int?
        let recording_mbid: String?
        let release_mbid: String?
        let artist_mbids: [String]?
        let media_player = "harmonia-play"
        let submission_client = "harmonia-play"
        let submission_client_version = HarmoniaVersion.string
    }

    /// The request body for `submission`, or why it cannot be sent.
    static func body(for submission: ListenSubmission) -> Result<[UInt8], Refusal> {
        let request: Request
        do {
            switch submission {
            case .playingNow(let metadata):
                request = Request(listen_type: "playing_now", payload: [try listen(metadata, at: nil)])
            case .listens(let records, let single):
                let listens = try records.map { record throws(Refusal) in
                    guard record.listenedAt >= earliestListen else {
                        throw Refusal(reason: "listened_at \(record.listenedAt) is before 2002-10-01, which ListenBrainz refuses")
                    }
                    return try listen(record.metadata, at: record.listenedAt)
                }
                request = Request(listen_type: single && listens.count == 1 ? "single" : "import", payload: listens)
            }
        } catch {
            return .failure(error)
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(request) else { return .failure(Refusal(reason: "cannot encode the listen as JSON")) }
        for listen in request.payload {
            if let one = try? encoder.encode(listen), one.count > maxListenBytes {
                return .failure(Refusal(reason: "the listen is \(one.count) bytes of JSON; ListenBrainz takes at most \(maxListenBytes)"))
            }
        }
        return .success([UInt8](data))
    }

    private static func listen(_ metadata: ListenMetadata, at listenedAt: Int64?) throws(Refusal) -> Listen {
        let artist = metadata.artists.filter { !$0.isEmpty }.joined(separator: ", ")
        guard let title = metadata.title, !title.isEmpty, !artist.isEmpty else {
            throw Refusal(reason: "no \(metadata.title?.isEmpty == false ? "artist" : "title") tag; ListenBrainz needs a title and an artist")
        }
        let milliseconds = metadata.duration.flatMap { seconds -> Int? in
            guard seconds.isFinite, seconds > 0, seconds * 1000 <= Double(maxDurationMilliseconds) else { return nil }
            return Int((seconds * 1000).rounded())
        }
        let artistIDs = metadata.artistMBIDs.filter(isUUID)
        let info = AdditionalInfo(
            duration_ms: milliseconds, tracknumber: metadata.trackNumber.flatMap { $0 > 0 ? $0 : nil },
            recording_mbid: metadata.recordingMBID.flatMap { isUUID($0) ? $0.lowercased() : nil },
            release_mbid: metadata.releaseMBID.flatMap { isUUID($0) ? $0.lowercased() : nil },
            artist_mbids: artistIDs.isEmpty ? nil : artistIDs.map { $0.lowercased() })
        return Listen(listened_at: listenedAt,
                      track_metadata: TrackMetadata(artist_name: artist, track_name: title,
                                                    release_name: metadata.album.flatMap { $0.isEmpty ? nil : $0 },
                                                    additional_info: info))
    }

    /// A MusicBrainz ID as ListenBrainz checks it: a UUID.
    static func isUUID(_ text: String) -> Bool { UUID(uuidString: text) != nil }
}
