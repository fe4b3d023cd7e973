// What a desktop may ask of the player — specs/mpris.md §Methods
import HarmoniaCore

/// The player's actions as MPRIS method calls and property writes reach
/// them. The application implements it with the same code its other
/// controls use (harmonia-play: `PlayerActions`, shared with keys and the
/// control protocol), so every way of asking behaves alike.
///
/// Threads: called on the adapter's D-Bus thread, one call at a time. A call
/// may block (opening a file); the bus waits, playback does not.
public protocol MPRISCommands: Sendable {
    /// Plays; from stopped, starts the current entry (or the first) again.
    func play() throws(CoreError)
    /// Pauses when playing; otherwise nothing.
    func pause() throws(CoreError)
    /// Pauses when playing, plays otherwise (from stopped: as `play`).
    func playPause() throws(CoreError)
    /// Stops; the process stays, `play` starts again.
    func stop()
    func next() throws(CoreError)
    func previous() throws(CoreError)
    /// Seeks to `seconds` into the current track (exact to the frame).
    func seek(to seconds: Double) throws(CoreError)
    /// Seeks `delta` seconds from the heard position, clamped to the track.
    func seek(by delta: Double) throws(CoreError)
    /// Volume from 0 to 1 (clamped).
    func setVolume(_ level: Double)
    func setRepeatMode(_ mode: RepeatMode)
    func setShuffle(_ enabled: Bool)
    /// Adds `url` (a path or an http(s) URL) to the queue and plays it.
    func open(url: String) throws(CoreError)
    /// Ends the player, as the control protocol's `quit`.
    func quit()
}
