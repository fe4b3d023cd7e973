// HeardTimeline — specs/services.md §Threads
// What the listener hears. `OutputTimeline` is the output's timeline since
// its last configure or flush (which track's frames went where); the
// extension follows the listener along it: track boundaries, the end of a
// format, the range or the queue, and position ticks, each sent when the
// output's heard-frames clock reaches it; specs/services.md §Events has them.
// All of it is engine state: guarded by `engine`, touched by control calls
// and the decode thread.
import Foundation
import Synchronization

/// The output's write index and rate, mirrored for readers that do not take
/// the engine (`DefaultPlaybackService.outputBuffer()`). Written with the
/// engine held; read from any thread.
final class OutputFill: Sendable {
    let written = Atomic<Int64>(0)
    /// The output's sample rate in Hz; 0 before it is configured.
    let rate = Atomic<Int64>(0)
}

/// The output's timeline since its last configure or flush, oldest first.
/// A value owned by the service's engine (guarded by `engine`); readers
/// see its `points`, published.
struct OutputTimeline {
    /// Oldest first: `segments[0]` is the track the listener hears.
    var segments: [Segment] = []
    /// Output frame index just after the last frame written (mirrored in `fill`).
    var written: Int64 = 0 {
        didSet { fill.written.store(written, ordering: .relaxed) }
    }
    /// `written` and the output's rate for readers off the engine.
    let fill: OutputFill

    init(fill: OutputFill) { self.fill = fill }
    /// Titles placed on the output timeline: each is published when the
    /// listener reaches `frame`; specs/network.md §Events has the timing.
    var queuedTitles: [(frame: Int64, url: String, title: String, byte: Int64)] = []

    /// A new timeline after the output was configured or flushed: output
    /// frame `writeStart` is `open`'s file frame `sourceStart`.
    mutating func restart(at writeStart: Int64, with open: OpenTrack, from sourceStart: Int64) {
        written = writeStart
        queuedTitles.removeAll()  // a new timeline: titles of audio never heard go
        segments = [Segment(open: open, writeStart: written, sourceStart: sourceStart)]
    }

    /// The heard position as a frame of the heard track's file, for `heard`
    /// output frames played.
    func sourceFrame(heard: Int64) -> Int64 {
        guard let first = segments.first else { return 0 }
        let limit = segments.count > 1 ? segments[1].writeStart : Int64.max
        return first.sourceFrame(after: max(0, min(heard, limit) - first.writeStart))
    }

    /// What readers need to turn heard frames into seconds.
    var points: [TimelinePoint] {
        segments.map {
            TimelinePoint(writeStart: $0.writeStart, sourceStart: $0.sourceStart,
                          trackStart: $0.open.startFrame, sampleRate: $0.open.info.sampleRate, step: $0.step)
        }
    }
}

/// Frames of one track in the output's timeline: output frame `writeStart`
/// is the track's file frame `sourceStart`.
struct Segment {
    let open: OpenTrack
    let writeStart: Int64
    let sourceStart: Int64
    /// File frames per output frame: 1, or the rates' ratio where the track
    /// is converted to another rate (the outgoing side of a fade across a
    /// rate change, specs/services.md §Crossfade).
    var step: Double = 1

    /// The file frame `frames` output frames after `writeStart`.
    func sourceFrame(after frames: Int64) -> Int64 {
        step == 1 ? sourceStart + frames : sourceStart + Int64(clampingFrames: Double(frames) * step)
    }
}

/// What readers need of a segment to turn heard frames into seconds.
struct TimelinePoint: Sendable {
    let writeStart: Int64
    let sourceStart: Int64
    let trackStart: Int64
    let sampleRate: Double
    /// File frames per output frame (`Segment.step`).
    let step: Double
}

/// Frames `[start, end]` of the heard track's file.
struct FrameRange {
    let start: Int64
    let end: Int64?

    func description(for open: OpenTrack) -> String {
        "\(open.seconds(atFrame: start))…\(end.map { "\(open.seconds(atFrame: $0))" } ?? "end") s"
    }
}

// MARK: - Following the listener

extension DefaultPlaybackService {
    /// Sends the events for what the listener has reached since the last
    /// call: track boundaries, the end of a format, the range or the queue,
    /// and position ticks.
    func followListener(heard: Int64) {
        // Paused exactly on a boundary (a seek to a track's end), the
        // listener is still at the end of the earlier track.
        while timeline.segments.count > 1,
              heard > timeline.segments[1].writeStart || (heard == timeline.segments[1].writeStart && intent == .playing) {
            let ended = timeline.segments.removeFirst()
            if timeline.segments[0].open === ended.open {
                // The same track on at another rate (a fade across a rate change): no boundary.
                publishTimeline()
                continue
            }
            emitEnded(ended.open, reason: ended.open.failure != nil ? .failed : .finished)
            if ended.open !== decoding && ended.open !== fadeOut?.open { closeTrack(ended.open) }
            range = nil
            rangeEndReached = false
            becomeCurrent(timeline.segments[0].open)
            publishTimeline()
        }
        // Indexing, not `segments.last`: unspecialised (a debug build), that
        // generic getter allocates, and this runs on every pass of the decode loop.
        if !timeline.segments.isEmpty, heard >= timeline.written, pending == nil, readInFlight == nil {
            let last = timeline.segments[timeline.segments.count - 1]
            if let next = awaitingFormat {
                emitEnded(last.open, reason: last.open.failure != nil ? .failed : .finished)
                closeTrack(last.open)
                awaitingFormat = nil
                let playing = intent == .playing
                do {
                    outputFormat = nil
                    outputStarted = false
                    try output.configure(sampleRate: next.info.sampleRate, channels: next.info.channels)
                    outputFormat = AudioFormat(next.info)
                    timeline.restart(at: output.framesPlayed, with: next, from: next.nextFrame)
                    range = nil
                    becomeCurrent(next)
                    publishTimeline()
                    intent = playing ? .playing : .paused
                    wakeDecodeThread()
                } catch {
                    closeAllTracks(publish: false)
                    fail(with: error, url: nil)
                }
            } else if rangeEndReached, let range, intent == .playing {
                output.pause()
                intent = .paused
                try? seekLocked(last.open, toFrame: range.start)
                setState(.paused)
            } else if endOfData, intent == .playing, decoding?.exhausted ?? true {
                // The end of the queue: stopped, or error when the last
                // track died (the reference's "any → error").
                emitEnded(last.open, reason: last.open.failure != nil ? .failed : .finished)
                let failure = last.open.failure
                invalidateDecodedAudio()
                closeAllTracks(publish: false)
                stopOutputAndTimeline()
                hub.emit(.queueEnded)
                if let failure {
                    setState(.error(failure))
                } else {
                    publishedCurrent(nil)
                    setState(.stopped)
                }
            }
        }
        if intent == .playing, configuration.positionInterval > 0, currentState == .playing,
           clock.now() >= nextPositionTick, published.hasTimelineEngineHeld {
            nextPositionTick = clock.now() &+ UInt64(configuration.positionInterval * 1e9)
            let (seconds, duration) = published.position(heard: heard)
            hub.emit(.position(seconds: min(max(seconds, 0), duration), duration: duration))
        }
    }

    /// The heard position as a frame of the heard track's file.
    func heardFrame() -> Int64 {
        timeline.sourceFrame(heard: output.framesPlayed)
    }

    private func emitEnded(_ open: OpenTrack, reason: TrackEndReason) {
        hub.emit(.trackEnded(index: playbackQueue.index(of: open.track.id), track: open.track, reason: reason))
    }

    /// Sends `trackEnded` for the track the listener hears, if any, after
    /// its heard position at this instant.
    func endHeardTrack(reason: TrackEndReason) {
        followListener(heard: output.framesPlayed)
        emitHeardPosition()
        if let heard = timeline.segments.first?.open { emitEnded(heard, reason: reason) }
    }

    /// Sends the heard position at this instant (a `position` event) before
    /// a skip, a seek, a pause or a stop: what was heard since the last tick
    /// is then counted to the frame (specs/listens.md §The rule).
    func emitHeardPosition() {
        guard published.hasTimelineEngineHeld, !timeline.segments.isEmpty else { return }
        let (seconds, duration) = published.position(heard: output.framesPlayed)
        hub.emit(.position(seconds: min(max(seconds, 0), duration), duration: duration))
    }

    func becomeCurrent(_ open: OpenTrack) {
        let track = playbackQueue.index(of: open.track.id).map { playbackQueue.tracks[$0] } ?? open.track
        publishedCurrent(open.track.id)
        published.setDuration(track.duration ?? open.info.duration)
        hub.emit(.trackStarted(index: playbackQueue.index(of: open.track.id) ?? -1, track: track))
    }
}
