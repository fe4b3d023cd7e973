// The HTTP streams the server starts, watched for STAT, RESP and DSCO —
// specs/slimproto.md §Streams
import Dispatch
import HarmoniaCore

/// A `ByteSourcePort` in front of the engine's HTTP input (the decoder opens
/// every stream through it): each source it opens is kept, the latest by
/// URL, so the player reads its transfer — bytes received and buffered for
/// STAT, the response's headers for RESP — and is watched every 100 ms (the
/// pace of squeezelite's stream thread) until its transfer ends, when
/// `onEnd` gives the DSCO reason.
///
/// Threads: any (a lock guards the table); `onOpen` on the thread that
/// opened the source, `onEnd` on a timer thread. Set both before the first
/// `open`.
public final class SlimprotoStreams: ByteSourcePort, @unchecked Sendable {
    /// DSCO reasons, as squeezelite sends them (its `disconnect_code`).
    public enum Reason {
        /// The body ended and the server closed the connection.
        public static let closed: UInt8 = 0
        /// The connection failed after the response began.
        public static let lost: UInt8 = 2
        /// The stream could not be opened (no connection, an error status).
        public static let unreachable: UInt8 = 3
        /// No data came for the network timeout.
        public static let timedOut: UInt8 = 4
    }

    /// The milliseconds between two looks at an open transfer.
    static let watchMilliseconds = 100

    private let inner: any ByteSourcePort
    /// A source opened: its URL and what its transfer says (its headers).
    public var onOpen: (@Sendable (_ url: String, _ transfer: ByteSourceTransfer?) -> Void)?
    /// A stream's connection ended (or never opened): its URL and the DSCO
    /// reason. Not called for a transfer the reader cancelled (a stop, a
    /// flush), as squeezelite sends none then.
    public var onEnd: (@Sendable (_ url: String, _ reason: UInt8) -> Void)?

    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var watched: [String: Watched] = [:]
    private var latestURL: String?

    /// - Parameter inner: the port that really opens the streams (`HTTPSourcePort`).
    public init(_ inner: any ByteSourcePort) {
        self.inner = inner
    }

    public func handles(url: String) -> Bool { inner.handles(url: url) }

    /// Opens through `inner`, then reports the open (`onOpen`) and watches
    /// the transfer. A failed open is `onEnd` with `unreachable`, unless it
    /// was interrupted. Throws what `inner` throws.
    public func open(url: String, observer: (@Sendable (NetworkEvent) -> Void)?,
                     interrupted: @escaping @Sendable () -> Bool) throws(CoreError) -> any ByteSource {
        let source: any ByteSource
        do throws(CoreError) {
            source = try inner.open(url: url, observer: observer, interrupted: interrupted)
        } catch {
            if case .invalidState = error {} else { onEnd?(url, Reason.unreachable) }
            throw error
        }
        onOpen?(url, source.transfer)
        watch(source, url: url)
        return source
    }

    /// The transfer of the latest source opened for `url`, while it lives.
    public func transfer(of url: String) -> ByteSourceTransfer? {
        lock.withLock { watched[url]?.source?.transfer }
    }

    /// The transfer of the latest source opened, while it lives and was
    /// not cancelled: what STAT reports as the stream buffer.
    public func latestTransfer() -> ByteSourceTransfer? {
        guard let transfer = lock.withLock({ latestURL.flatMap { watched[$0]?.source?.transfer } }),
              transfer.end != .cancelled else { return nil }
        return transfer
    }

    private func watch(_ source: any ByteSource, url: String) {
        let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        let entry = Watched(source: source, timer: timer)
        lock.withLock {
            watched = watched.filter { $0.value.source != nil }  // the table holds only live sources
            watched[url] = entry
            latestURL = url
        }
        let interval = DispatchTimeInterval.milliseconds(Self.watchMilliseconds)
        timer.schedule(deadline: .now() + interval, repeating: interval, leeway: .milliseconds(10))
        // The handler holds `entry` (not its source) until it cancels the
        // timer: once the transfer ended or the decoder let the source go.
        timer.setEventHandler { [weak self] in
            let source = entry.source
            let ended: ByteSourceTransfer.End? = source == nil ? .cancelled : source?.transfer?.end
            guard let end = ended else { return }
            entry.timer.cancel()
            let reason: UInt8? = switch end {
            case .complete: Reason.closed
            case .lost: Reason.lost
            case .timedOut: Reason.timedOut
            case .cancelled: nil
            }
            if let reason { self?.onEnd?(url, reason) }
        }
        timer.resume()
    }
}

/// One source watched: held weakly (the decoder owns it), with its timer.
private final class Watched: @unchecked Sendable {
    weak var source: (any ByteSource)?
    let timer: DispatchSourceTimer

    init(source: any ByteSource, timer: DispatchSourceTimer) {
        self.source = source
        self.timer = timer
    }
}
