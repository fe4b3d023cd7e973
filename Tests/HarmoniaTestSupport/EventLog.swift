// EventLog: records a playback service's events and lets a test wait for one
// (with a bound, so a broken service fails the test instead of hanging it).
import Foundation
import HarmoniaCore

public final class EventLog: @unchecked Sendable {
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var recorded: [PlaybackEvent] = []

    public init(_ service: DefaultPlaybackService) {
        service.observe { [weak self] event in
            guard let self else { return }
            self.condition.lock()
            self.recorded.append(event)
            self.condition.broadcast()
            self.condition.unlock()
        }
    }

    public var events: [PlaybackEvent] {
        condition.lock()
        defer { condition.unlock() }
        return recorded
    }

    /// Waits until an event satisfying `predicate` has been recorded; false
    /// when `timeout` seconds pass first.
    @discardableResult
    public func wait(timeout: Double = 30, for predicate: (PlaybackEvent) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock()
        defer { condition.unlock() }
        while !recorded.contains(where: predicate) {
            if !condition.wait(until: deadline) { return recorded.contains(where: predicate) }
        }
        return true
    }

    /// Waits for the state `state`.
    @discardableResult
    public func wait(timeout: Double = 30, forState state: PlaybackState) -> Bool {
        wait(timeout: timeout) { $0 == .stateChanged(state) }
    }
}
