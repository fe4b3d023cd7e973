// The server's commands on the application layer, and the service's events
// as STAT frames — specs/slimproto.md §Commands, §Status
import Dispatch
import Foundation
import HarmoniaControl
import HarmoniaCore

/// Translates: a `strm`, `audg`, `aude` or `setd` becomes calls on the
/// playback service (through the one queue every frontend shares); each
/// service event that the server must hear of becomes a STAT frame. Elapsed
/// time is the heard position, jiffies the monotonic clock in milliseconds.
///
/// Threads: `handle` and `show` on the main loop; `status` and `jiffies`
/// from any thread (they read the service, which is thread-safe).
final class SlimprotoPlayer: @unchecked Sendable {
    /// What we keep of a stream the server started (main loop only).
    struct Stream {
        let url: String
        /// RESP sent (the stream opened).
        var responded = false
        /// STMs sent: its first frame was heard.
        var heard = false
        /// STMd sent: ready for the next track.
        var decoded = false
        /// STMn sent.
        var failed = false
    }

    /// Heard seconds before the end at which STMd asks for the next track:
    /// more than the decode-ahead, so the next `strm s` is queued before
    /// the decoder reaches the end (specs/slimproto.md §Gapless).
    static let nextTrackLead = 10.0
    /// The longest pause-for, skip-ahead or wait for an unpause time, in ms.
    static let longestAdjustment: UInt32 = 60_000

    let service: DefaultPlaybackService
    /// The streams the decoder opened (their transfers), when the player opens them through it.
    private let streamInput: SlimprotoStreams?
    private let clock = MonotonicClockAdapter()
    private let send: @Sendable ([UInt8]) -> Void
    private let log: @Sendable (String) -> Void
    private let timeline: (@Sendable (String) -> Void)?
    /// The slimproto server's own address (for `strm` with address 0).
    private let serverAddress: @Sendable () -> String?
    /// The stamp of the last event posted (`EventInbox.lastStamp`).
    private let lastStamp: @Sendable () -> EventStamp
    /// Runs a closure on the main loop (posted as a job).
    private let post: @Sendable (@escaping @Sendable () -> Void) -> Void

    // Main loop only.
    private var streams: [UUID: Stream] = [:]
    /// A stream plays or waits to: its end is reported (STMu).
    private var active = false
    private var gain: Float = 1
    private var outputEnabled = true
    private var timer: DispatchSourceTimer?
    /// Ends the alignment after a start at a time (`resume`) when the
    /// server's next command comes: its own corrections are not undone.
    private var alignment: Cancellation?
    /// Watches for the first frame heard after a start (`watchFirstFrame`).
    private var firstFrameWatch: DispatchSourceTimer?
    /// Stops and errors up to this stamp were caused by our own `q`, `f` or
    /// `s`: they are not an end of playback (no STMu).
    private var ownStopsThrough = EventStamp.zero
    /// The player's name (`--name`, or the server's `setd`).
    private(set) var name: String

    init(service: DefaultPlaybackService, streamInput: SlimprotoStreams?, name: String,
         serverAddress: @escaping @Sendable () -> String?,
         lastStamp: @escaping @Sendable () -> EventStamp, post: @escaping @Sendable (@escaping @Sendable () -> Void) -> Void,
         send: @escaping @Sendable ([UInt8]) -> Void, log: @escaping @Sendable (String) -> Void,
         timeline: (@Sendable (String) -> Void)? = nil) {
        self.service = service
        self.streamInput = streamInput
        self.name = name
        self.serverAddress = serverAddress
        self.lastStamp = lastStamp
        self.post = post
        self.send = send
        self.log = log
        self.timeline = timeline
    }

    /// A debug line (`--log-level debug`) saying when a step of a start
    /// happened, in CLOCK_MONOTONIC milliseconds (the clock of jiffies):
    /// `benchmarks/slimproto` takes the first sound after `strm s` apart
    /// with them (specs/slimproto.md §Benchmarks). Any thread.
    func mark(_ step: String) {
        guard let timeline else { return }
        timeline("slimproto: at \(String(format: "%.3f", Double(clock.now()) / 1e6)) ms: \(step)")
    }

    /// Milliseconds of the monotonic clock, wrapping at 2^32: the clock `u` uses. Any thread.
    func jiffies() -> UInt32 { UInt32(truncatingIfNeeded: clock.now() / 1_000_000) }

    /// A STAT frame for `event` with the heard position and the buffers, now. Any thread.
    func status(_ event: String, serverTimestamp: UInt32 = 0) -> [UInt8] {
        var status = SlimprotoFrames.Status()
        status.jiffies = jiffies()
        // The stream buffer: the HTTP input's window ahead of the decoder.
        if let transfer = streamInput?.latestTransfer() {
            status.streamBufferSize = UInt32(clamping: transfer.capacity)
            status.streamBufferFullness = UInt32(clamping: transfer.buffered)
            status.bytesReceived = UInt64(clamping: transfer.received)
        }
        // The output buffer: decoded and not heard, in squeezelite's bytes
        // (8 a frame: two 32-bit samples).
        let output = service.outputBuffer()
        status.outputBufferSize = UInt32(clamping: min(output.capacityFrames, Int64(UInt32.max)) * 8)
        status.outputBufferFullness = UInt32(clamping: min(output.queuedFrames, Int64(UInt32.max)) * 8)
        let seconds = service.currentTime()
        status.elapsedMilliseconds = seconds.isFinite && seconds > 0 ? UInt32(min(seconds * 1000, Double(UInt32.max / 2))) : 0
        status.serverTimestamp = serverTimestamp
        return SlimprotoFrames.stat(event, status)
    }

    private func stat(_ event: String) { send(status(event)) }

    // MARK: Commands (main loop)

    func handle(_ command: SlimprotoCommand) {
        switch command {
        case .stream(let request):
            handleStream(request)
        case .gain(let left, _):
            gain = Float(min(max(left, 0), 1))
            service.setVolume(outputEnabled ? gain : 0)
        case .enableOutput(let enabled):
            outputEnabled = enabled
            service.setVolume(enabled ? gain : 0)
        case .setting(let id, let data):
            guard id == 0 else { return }  // only the name concerns a headless player
            if data.isEmpty {
                send(SlimprotoFrames.setdName(name))
            } else {
                let text = String(decoding: data.prefix { $0 != 0 }.prefix(64), as: UTF8.self)
                    .filter { $0.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F } }  // no control characters in a log line
                if !text.isEmpty && text != name {
                    name = text
                    log("slimproto: the server named this player \"\(text)\"")
                }
            }
        case .switchServer, .ignored, .unknown, .malformed:
            break  // the connection handles these
        }
    }

    private func handleStream(_ request: StreamRequest) {
        switch request.command {
        case UInt8(ascii: "t"):
            send(status("STMt", serverTimestamp: request.replayGain))
        case UInt8(ascii: "s"):
            startStream(request)
        case UInt8(ascii: "q"), UInt8(ascii: "f"):
            // Stop (q) and flush (f) both drop what is queued and decoded.
            cancelTimer()
            active = false
            service.stop()
            service.clearQueue()
            ownStopsThrough = lastStamp()
            streams.removeAll()
            stat("STMf")
        case UInt8(ascii: "p"):
            cancelTimer()
            let milliseconds = request.replayGain
            guard milliseconds > 0 else {
                attempt("pause") { () throws(CoreError) in try service.pause() }
                stat("STMp")
                return
            }
            guard milliseconds <= Self.longestAdjustment, service.isPlaying else {
                log("slimproto: pause for \(milliseconds) ms ignored (playing: \(service.isPlaying), at most \(Self.longestAdjustment) ms)")
                return
            }
            // Exact: that much silence heard, the position held (squeezelite's pause frames).
            if service.shiftPlayback(bySeconds: -Double(milliseconds) / 1000) { return }
            attempt("pause for \(milliseconds) ms") { () throws(CoreError) in try service.pause() }
            resume(atNanoseconds: clock.now() &+ UInt64(milliseconds) * 1_000_000, align: false, outputStarts: false)
        case UInt8(ascii: "u"):
            cancelTimer()
            let at = request.replayGain
            let now = clock.now()
            let wait = Int32(bitPattern: at &- UInt32(truncatingIfNeeded: now / 1_000_000))
            if at == 0 || wait <= 0 || UInt32(wait) > Self.longestAdjustment {
                if at != 0 && wait > 0 { log("slimproto: unpause at \(at) is \(wait) ms away (more than \(Self.longestAdjustment)): unpaused now") }
                attempt("unpause") { () throws(CoreError) in try service.play() }
            } else {
                // Jiffy `at` as a time of the monotonic clock: this millisecond's start plus the wait.
                let deadline = now - now % 1_000_000 + UInt64(wait) * 1_000_000
                // The output starts its first frame at the deadline itself when it can (a
                // track opened paused, on PulseAudio); else a timer plays then.
                let before = service.currentTime()
                var outputStarts = false
                attempt("unpause at \(at)") { () throws(CoreError) in
                    outputStarts = try service.play(atMonotonicNanoseconds: deadline)
                }
                resume(atNanoseconds: deadline, align: true, outputStarts: outputStarts, heardBefore: before)
            }
            stat("STMr")
        case UInt8(ascii: "a"):
            alignment?.cancel()  // the server corrects now
            let milliseconds = request.replayGain
            guard milliseconds <= Self.longestAdjustment else {
                log("slimproto: skip ahead \(milliseconds) ms ignored (at most \(Self.longestAdjustment) ms)")
                return
            }
            // Exact and without a seek (a stream that cannot seek too); else a seek.
            if service.shiftPlayback(bySeconds: Double(milliseconds) / 1000) { return }
            let target = min(service.currentTime() + Double(milliseconds) / 1000, service.duration())
            attempt("skip ahead \(milliseconds) ms") { () throws(CoreError) in try service.seek(to: target) }
        default:
            break
        }
    }

    /// `strm s`: the URL from the request line and the server's address; queued
    /// after the current stream when that one has sent STMd (gapless), else
    /// played at once (autostart 1, 3) or opened paused until `u` (0, 2).
    private func startStream(_ request: StreamRequest) {
        mark("strm s")
        stat("STMc")  // before RESP: a server drops a RESP that comes first
        guard let path = request.requestPath else {
            refuse("the strm request has no 'GET /path' line")
            return
        }
        let format = request.format
        guard "fmouaolpw?".utf8.contains(format) else {
            refuse("format \(SlimprotoFrames.printable(format)) is not supported")
            return
        }
        guard let host = request.serverIP != 0 ? SlimprotoFrames.dotted(request.serverIP) : serverAddress() else {
            refuse("no server address for the stream")
            return
        }
        guard request.serverPort != 0 else {
            refuse("the strm request names port 0")
            return
        }
        var rawPCM: RawPCMFormat? = nil
        if format == UInt8(ascii: "p") {
            switch request.rawPCMFormat {
            case .success(let given): rawPCM = given
            case .failure(let error):
                refuse(error.reason)
                return
            }
        }
        let scheme = request.flags & 0x20 != 0 ? "https" : "http"
        let url = "\(scheme)://\(host):\(request.serverPort)\(path)"
        var track = Track(url: url)
        track.rawPCM = rawPCM  // raw PCM unless the stream starts with a WAV or AIFF header
        let autostart = request.autostart == UInt8(ascii: "1") || request.autostart == UInt8(ascii: "3")

        if active, let current = service.currentTrack, streams[current.id]?.decoded == true, service.queue.count < 8 {
            streams[track.id] = Stream(url: url)
            service.enqueue([track])  // joins the current one sample-exact (the service's queue)
            return
        }
        cancelTimer()
        service.stop()
        service.clearQueue()
        streams = [track.id: Stream(url: url)]
        service.enqueue([track])
        active = true
        defer { ownStopsThrough = lastStamp() }
        do throws(CoreError) {
            try service.jump(to: 0)
            mark("stream opened and its decoder ready")
            if autostart {
                try service.play()
                mark("output started")
            } else {
                stat("STMl")
            }
        } catch {
            streams[track.id]?.failed = true  // its error event is not reported again
            active = false
            refuse("\(url): \(error)")
            stat("STMu")
        }
    }

    /// Runs a service call; a failure is one logged line (the server hears
    /// of the state it leaves through the events).
    private func attempt(_ what: String, _ call: () throws(CoreError) -> Void) {
        do throws(CoreError) {
            try call()
        } catch {
            log("slimproto: \(what): \(error)")
        }
    }

    /// STMn with a logged reason; the player stays connected.
    private func refuse(_ reason: String) {
        log("slimproto: cannot play: \(reason)")
        stat("STMn")
    }

    /// Plays when the monotonic clock reaches `deadline` (a timer with no
    /// leeway), unless `outputStarts` (the output was told to start then).
    /// With `align`, then lines the heard position up with the
    /// clock: once the first frame after it is heard, the difference
    /// between the audio heard since (from `heardBefore`, else the position
    /// at the deadline) and the time passed since `deadline`
    /// (the output's start latency, the timer's lateness) is skipped, or
    /// held as silence when early — to the frame, through the service's
    /// `shiftPlayback` (specs/slimproto.md §Sync). Each correction is logged.
    private func resume(atNanoseconds deadline: UInt64, align: Bool, outputStarts: Bool, heardBefore: Double? = nil) {
        let timer = DispatchSource.makeTimerSource(queue: .global(qos: .userInteractive))
        let service = self.service, clock = self.clock, log = self.log
        let cancellation = Cancellation()
        alignment = cancellation
        let now = clock.now()
        timer.schedule(deadline: .now() + .nanoseconds(Int(deadline > now ? deadline - now : 0)), leeway: .nanoseconds(0))
        timer.setEventHandler {
            let before = outputStarts ? heardBefore ?? service.currentTime() : service.currentTime()
            if !outputStarts {
                do throws(CoreError) {
                    try service.play()
                } catch {
                    log("slimproto: unpause: \(error)")
                    return
                }
            }
            guard align else { return }
            // Poll the heard position every millisecond for at most 5 s: once
            // 50 ms were heard (an output's first position reports are
            // coarse), correct; a correction is heard after what the device
            // holds, so look again 1 s later; at most 3 corrections.
            var corrections = 0
            var lookAgain: UInt64 = 0
            for _ in 0..<5000 where !cancellation.isCancelled {
                let heard = service.currentTime(), now = clock.now()
                if now >= lookAgain && heard - before >= 0.05 {
                    let passed = Double(Int64(bitPattern: now &- deadline)) / 1e6
                    let early = (heard - before) * 1000 - passed  // ms: negative when late
                    guard abs(early) >= 0.5, corrections < 3, service.shiftPlayback(bySeconds: -early / 1000) else { return }
                    corrections += 1
                    log("slimproto: start at a time (\(outputStarts ? "by the output" : "on a timer")): heard "
                        + "\(String(format: "%.2f", -early)) ms late; corrected (\(corrections))")
                    lookAgain = now &+ 1_000_000_000
                }
                guard service.isPlaying else { return }
                clock.sleep(nanoseconds: 1_000_000)
            }
        }
        timer.resume()
        self.timer = timer
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
        alignment?.cancel()
        alignment = nil
    }

    // MARK: The stream's connection (main loop)

    /// RESP with the stream's response headers once it opened, if it is
    /// one the server started and no RESP went for it yet.
    func streamOpened(_ url: String, head: String?) {
        guard let id = streams.first(where: { $0.value.url == url && !$0.value.responded })?.key else { return }
        streams[id]?.responded = true
        mark("RESP (the stream's response headers)")
        send(SlimprotoFrames.resp(head ?? Self.plainResponse))
    }

    /// DSCO with squeezelite's reason when a stream the server started
    /// ended its connection (or never made one).
    func streamEnded(_ url: String, reason: UInt8) {
        guard streams.values.contains(where: { $0.url == url }) else { return }
        send(SlimprotoFrames.dsco(reason: reason))
    }

    /// RESP for a stream whose source does not give its headers.
    static let plainResponse = "HTTP/1.0 200 OK\r\n\r\n"

    // MARK: Events (main loop)

    func show(_ event: PlaybackEvent, stamp: EventStamp) {
        switch event {
        case .trackStarted(let index, let track):
            guard var stream = streams[track.id] else { return }
            if !stream.responded {
                stream.responded = true
                send(SlimprotoFrames.resp(Self.plainResponse))  // opened, by a source that did not say (`streamOpened`)
            }
            streams[track.id] = stream
            // Shown after the job that started it: whether heard yet, the output says.
            if service.isPlaying && stream.heard == false { watchFirstFrame(track.id) }
            // Entries before the one heard are done: the queue stays short.
            for _ in 0..<index {
                if let first = service.queue.first { streams[first.id] = nil }
                try? service.remove(at: 0)
            }
            askForNext(at: 0, duration: service.duration())
        case .stateChanged(.playing):
            if let current = service.currentTrack, streams[current.id]?.heard == false { watchFirstFrame(current.id) }
        case .stateChanged(.stopped), .stateChanged(.error):
            if active && stamp > ownStopsThrough {
                active = false
                stat("STMu")  // end of playback (or it failed): the server moves on
            }
        case .position(let seconds, let duration):
            askForNext(at: seconds, duration: duration)
        case .queueEnded:
            if let current = service.currentTrack, streams[current.id]?.decoded == false {
                streams[current.id]?.decoded = true
                stat("STMd")
            }
        case .underrun:
            if active { stat("STMo") }
        case .error(let error, let url):
            guard let url, let id = streams.first(where: { $0.value.url == url && !$0.value.failed })?.key else { return }
            streams[id]?.failed = true
            refuse("\(url): \(error)")
        case .network(.streamTitle(let title, _), let url):
            guard streams.values.contains(where: { $0.url == url }) else { return }
            send(SlimprotoFrames.meta("StreamTitle='\(title.replacingOccurrences(of: "'", with: "’"))';"))
        default:
            break
        }
    }

    /// Sends STMs once the output has played the first frame of stream `id`
    /// (its heard position passes 0): checked every 2 ms on a timer thread,
    /// for at most 15 s, while it is the current track.
    private func watchFirstFrame(_ id: UUID) {
        firstFrameWatch?.cancel()
        let watch = DispatchSource.makeTimerSource(queue: .global(qos: .userInteractive))
        let service = self.service, post = self.post
        let deadline = DispatchTime.now() + .seconds(15)
        // The handler holds the timer through the box until it ends it (no cycle after).
        let box = TimerBox(watch)
        watch.schedule(deadline: .now(), repeating: .milliseconds(2), leeway: .microseconds(500))
        watch.setEventHandler { [self] in
            guard service.currentTrack?.id == id, DispatchTime.now() < deadline else {
                box.end()
                return
            }
            guard service.currentTime() > 0 else { return }
            box.end()
            post { self.heard(id) }
        }
        watch.resume()
        firstFrameWatch = watch
    }

    /// STMs once for the stream whose first frame is heard.
    private func heard(_ id: UUID) {
        guard streams[id]?.heard == false else { return }
        streams[id]?.heard = true
        stat("STMs")
        if timeline != nil {
            let heard = service.currentTime()
            mark("STMs: the first frame heard \(String(format: "%.1f", heard * 1000)) ms ago")
        }
    }

    /// STMd once the current stream is within `nextTrackLead` of its end.
    private func askForNext(at seconds: Double, duration: Double) {
        guard let current = service.currentTrack, let stream = streams[current.id], !stream.decoded,
              duration > 0, seconds >= duration - Self.nextTrackLead else { return }
        streams[current.id]?.decoded = true
        stat("STMd")
    }
}

/// A flag one thread raises and another reads. Any thread.
private final class Cancellation: @unchecked Sendable {
    private let lock = ConditionLock()
    private var cancelled = false

    func cancel() { lock.withLock { cancelled = true } }
    var isCancelled: Bool { lock.withLock { cancelled } }
}

/// A timer its own handler ends: `end` cancels it and lets it go. Used on
/// the timer's queue only.
private final class TimerBox: @unchecked Sendable {
    private var timer: DispatchSourceTimer?
    /// Ends the alignment after a start at a time (`resume`) when the
    /// server's next command comes: its own corrections are not undone.
    private var alignment: Cancellation?
    init(_ timer: DispatchSourceTimer) { self.timer = timer }

    func end() {
        timer?.cancel()
        timer = nil
    }
}
