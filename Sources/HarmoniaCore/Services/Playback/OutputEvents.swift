// OutputEvents — specs/services.md §Buffering
// The output's events (underruns, errors, reconnects) on their way into the
// service: the output's observer posts them to an inbox (it may run under the
// output's lock), and the service's own thread (`harmonia.events`) takes
// each one and handles it with `engine` held; specs/services.md §Threads.
import Foundation

// MARK: - Output events

extension DefaultPlaybackService {
    /// Underruns become events, and `buffering` while a read is stalled;
    /// output errors become error events and `buffering` until the output
    /// says it reconnected (it reconnects itself).
    /// The output's observer only queues the event (it may run under the
    /// output's lock); a thread of the service's own handles it, so nothing
    /// depends on a Swift concurrency executor being free.
    func startOutputEventForwarder() {
        let inbox = OutputEventInbox()
        output.observe { inbox.post($0) }
        let thread = Thread { [weak self] in
            nameCurrentThread("harmonia.events")
            while let event = inbox.take() {
                guard let self else { return }
                self.handle(event)
            }
        }
        thread.name = "harmonia.events"
        outputEvents = inbox
        thread.start()
    }

    private func handle(_ event: AudioOutputEvent) {
        engine.withLock {
            switch event {
            case .underrun(let count):
                // The end of the queue, a range or a format is not an underrun.
                guard !(endOfData || awaitingFormat != nil || rangeEndReached), intent == .playing else { return }
                hub.emit(.underrun(count: count))
                if readInFlight != nil, currentState == .playing {
                    setState(.buffering)
                    // Gather `rebuffer` seconds before sound resumes (resumeWhenRefilled).
                    if configuration.rebuffer > 0 {
                        output.pause()
                        corkedForBuffering = true
                    }
                }
            case .error(let error):
                hub.emit(.error(error, url: nil))
                // The output reconnects by itself; meanwhile nothing is heard.
                if currentState == .playing {
                    outputLost = true
                    setState(.buffering)
                }
            case .reconnected(let frame):
                logger.info("output reconnected at frame \(frame)")
                if outputLost {
                    outputLost = false
                    if currentState == .buffering, intent == .playing, !corkedForBuffering { setState(.playing) }
                }
            }
        }
    }
}

/// Output events on their way from the output's observer to the service's
/// event thread: `post` never blocks for long; `take` waits for one.
final class OutputEventInbox: @unchecked Sendable {
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var queue: [AudioOutputEvent] = []
    private var closed = false

    func post(_ event: AudioOutputEvent) {
        lock.withLock {
            queue.append(event)
            lock.broadcast()
        }
    }

    /// The next event, or nil once closed.
    func take() -> AudioOutputEvent? {
        lock.withLock {
            while queue.isEmpty && !closed { lock.wait() }
            return closed ? nil : queue.removeFirst()
        }
    }

    func close() {
        lock.withLock {
            closed = true
            lock.broadcast()
        }
    }
}
