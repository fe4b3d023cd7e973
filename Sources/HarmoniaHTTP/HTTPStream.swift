// HTTPStream — specs/network.md §Policy
//
// One http(s) resource read like a file, with the engine's network policy:
// a transfer thread fills a bounded window ahead of the reader; when the
// connection stalls, resets or ends before the declared size, it asks again
// with a Range request at the exact next byte, after a short back-off, until
// no byte has come for the network timeout. A server that ignores Range is
// read forward from the start with the bytes before the wanted one dropped.
// The first bytes of the resource are kept, so a demuxer's probing seeks
// back to the start cost no new request.
import CCurl
import Foundation
import HarmoniaCore
#if canImport(Glibc)
import Glibc
#endif

/// One open http(s) resource. See `ByteSource` for the threads.
final class HTTPStream: ByteSource, CurlTransferDelegate, @unchecked Sendable {
    private let url: String
    private let configuration: HTTPSourceConfiguration
    private let observer: (@Sendable (NetworkEvent) -> Void)?
    /// Polled by the waits of `start` and `read`; once true, the stream is cancelled.
    private let interrupted: @Sendable () -> Bool

    // MARK: Shared state, guarded by `lock`
    private let lock = ConditionLock()
    /// Bytes [0, head.count) of the resource, kept for probing seeks.
    private var head: [UInt8] = []
    /// Bytes [windowStart, windowStart + window.count): what the transfer delivered ahead of (and a little behind) the reader.
    private var window: [UInt8] = []
    private var windowStart: Int64 = 0
    /// The byte the next `read` delivers.
    private var readPosition: Int64 = 0
    /// The byte the transfer delivers next.
    private var transferPosition: Int64 = 0
    /// Bytes still to drop at the start of this response's body (a server that ignored Range).
    private var discard: Int64 = 0
    /// The resource's size, from the first response that declared one.
    private var declaredSize: Int64?
    /// False once the server contradicted its own size (a lying Content-Range).
    private var sizeTrusted = true
    /// Whether the server answers Range requests with 206 (nil: not asked yet).
    private var rangesHonoured: Bool?
    private var acceptRanges = false
    /// The first response came (2xx headers): `open` returns.
    private var responded = false
    private var ended = false
    private var failure: CoreError?
    private var cancelled = false
    /// A position outside the window the transfer must start again at.
    private var restartAt: Int64?
    /// Monotonic seconds when the last byte arrived (or the reader made room).
    private var lastData: Double
    /// When the current attempt started (its own stall budget starts there).
    private var attemptStarted: Double
    /// Reconnect attempts since data last flowed (0 while it flows).
    private var attempt = 0

    /// The status line and headers of the first 2xx response (`transfer`).
    private var responseHead: String?
    /// Body bytes received over every response (`transfer`).
    private var received: Int64 = 0
    /// The failure is the network timeout (`transfer`'s end).
    private var timedOut = false

    /// A refused link (401, 403, 410) the transfer thread asks `renewLink` to replace. Guarded by `lock`.
    private var expiredStatus: Int?
    /// Links renewed so far; a link refused again after this many renewals fails.
    private var renewals = 0
    private static let maxRenewals = 8

    // MARK: Transfer-thread state (one response at a time)
    /// The URL requested now: `url`, or the fresh link that replaced it.
    private var currentURL: String
    /// Every request's extra headers: the configuration's, then this URL's own.
    private let requestHeaders: [String]
    private var response = ResponseHead()
    private var icy: ICYDeinterleaver?
    private var announcedStation = false

    init(url: String, configuration: HTTPSourceConfiguration, observer: (@Sendable (NetworkEvent) -> Void)?,
         interrupted: @escaping @Sendable () -> Bool) {
        self.url = url
        self.configuration = configuration
        self.observer = observer
        self.interrupted = interrupted
        currentURL = url
        requestHeaders = configuration.headers + (configuration.headersForURL?(url) ?? [])
        lastData = monotonicSeconds()
        attemptStarted = lastData
    }

    /// Starts the transfer and waits for the first response.
    /// - Throws: as `ByteSourcePort.open`.
    func start() throws(CoreError) {
        observer?(.connecting)
        startTransferThread()
        try lock.withLock { () throws(CoreError) in
            while !responded {
                if let failure { throw failure }
                if ended { throw CoreError.ioError("\(url): the server closed the connection without an answer") }
                if stopRequested() { throw CoreError.invalidState("\(url): the open was cancelled") }
                lock.wait(seconds: Self.interruptPoll)
            }
        }
    }

    /// Runs `runTransfers` on a thread of its own (it ends with the stream's end, a failure or `cancel`).
    private func startTransferThread() {
        let thread = Thread { [self] in nameCurrentThread("harmonia.http"); runTransfers() }
        thread.name = "harmonia.http"
        thread.start()
    }

    // MARK: ByteSource

    func read(into buffer: UnsafeMutableRawPointer, count: Int) throws(CoreError) -> Int {
        guard count > 0 else { return 0 }
        return try lock.withLock { () throws(CoreError) -> Int in
            while true {
                if stopRequested() { throw CoreError.invalidState("\(url): reading was cancelled") }
                let position = readPosition
                if position < Int64(head.count) {
                    let n = min(count, head.count - Int(position))
                    head.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + Int(position), byteCount: n) }
                    readPosition += Int64(n)
                    return n
                }
                let windowEnd = windowStart + Int64(window.count)
                if position >= windowStart && position < windowEnd {
                    let offset = Int(position - windowStart)
                    let n = min(count, window.count - offset)
                    window.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + offset, byteCount: n) }
                    readPosition += Int64(n)
                    lock.broadcast()  // room for the transfer
                    return n
                }
                if ended && position >= windowEnd { return 0 }
                if let failure { throw failure }
                if restartAt == nil, needsNewRequest(for: position, windowEnd: windowEnd) {
                    restartAt = position
                    if ended {
                        // The transfer reached the end and its thread is gone: a
                        // seek back behind the window needs a new one (it waited
                        // for a thread that no longer ran, for good).
                        ended = false
                        startTransferThread()
                    }
                    lock.broadcast()
                } else if position >= windowEnd {
                    // Ahead of everything the window holds (a forward skip
                    // the current transfer has to read through, however far:
                    // ranges refused, or the skip is short): wake the
                    // transfer, which may be waiting for room in a full
                    // window that is all behind us; it drops that and reads on.
                    lock.broadcast()
                }
                lock.wait(seconds: Self.interruptPoll)
            }
        }
    }

    /// Seconds between two looks at `interrupted` while a reader waits.
    private static let interruptPoll = 0.1

    /// Whether the stream is cancelled, by `cancel` or by `interrupted`.
    /// Guarded by `lock`.
    private func stopRequested() -> Bool {
        if !cancelled && interrupted() {
            cancelled = true
            lock.broadcast()
        }
        return cancelled
    }

    func seek(to offset: Int64) throws(CoreError) {
        guard offset >= 0 else { throw .invalidArgument("\(url): seek to byte \(offset); bytes start at 0") }
        lock.withLock {
            readPosition = offset
            lock.broadcast()
        }
    }

    var position: Int64 { lock.withLock { readPosition } }

    var size: Int64? { lock.withLock { sizeTrusted ? declaredSize : nil } }

    var isSeekable: Bool { lock.withLock { rangesHonoured == true || (rangesHonoured == nil && acceptRanges && declaredSize != nil) } }

    var transfer: ByteSourceTransfer? {
        lock.withLock {
            let windowEnd = windowStart + Int64(window.count)
            let ahead = max(0, min(windowEnd - max(readPosition, windowStart), Int64(configuration.windowBytes)))
            let end: ByteSourceTransfer.End? = cancelled ? .cancelled
                : failure != nil ? (timedOut ? .timedOut : .lost)
                : ended ? .complete : nil
            return ByteSourceTransfer(responseHead: responseHead, received: received, buffered: Int(ahead),
                                      capacity: configuration.windowBytes, end: end)
        }
    }

    func cancel() {
        lock.withLock {
            cancelled = true
            lock.broadcast()
        }
    }

    /// A position the current transfer will not bring: behind the window,
    /// or further ahead than reading forward is worth (when ranges work).
    /// Guarded by `lock`.
    private func needsNewRequest(for position: Int64, windowEnd: Int64) -> Bool {
        if position < windowStart { return true }
        if ended { return position < windowEnd }
        return position > windowEnd + configuration.forwardSkipBytes && rangesHonoured != false
    }

    // MARK: The transfer loop (its own thread)

    private func runTransfers() {
        while true {
            if let status = lock.withLock({ () -> Int? in defer { expiredStatus = nil }; return expiredStatus }) {
                guard renew(after: status) else { return }
            }
            guard let start = nextAttemptStart() else { return }
            let request = CurlRequest(url: currentURL, start: start, headers: requestHeaders, userAgent: configuration.userAgent,
                                      verifyTLS: configuration.verifyTLS, maxRedirects: configuration.maxRedirects,
                                      connectTimeout: min(configuration.stallTimeout, configuration.networkTimeout))
            response = ResponseHead()
            icy = nil
            let outcome = performCurlTransfer(request, delegate: self)
            guard let backoff = decide(after: outcome) else { return }
            if backoff > 0 {
                lock.withLock {
                    if !cancelled && restartAt == nil { lock.wait(seconds: backoff) }
                }
            }
        }
    }

    /// Where the next attempt starts, or nil when the stream is finished.
    private func nextAttemptStart() -> Int64? {
        lock.withLock {
            if cancelled || failure != nil || ended { return nil }
            if let target = restartAt {
                restartAt = nil
                window.removeAll(keepingCapacity: true)
                windowStart = target
                transferPosition = target
            }
            attemptStarted = monotonicSeconds()
            discard = 0
            return transferPosition
        }
    }

    /// The server refused the link (`status`): says so (`linkExpired`), asks
    /// the application's `renewLink` for a fresh one (it may block, up to the
    /// network timeout) and goes on with it at the same byte. False when
    /// there is none: the stream has failed.
    private func renew(after status: Int) -> Bool {
        observer?(.linkExpired(status: status))
        let fresh = configuration.renewLink?(url, status)
        return lock.withLock { () -> Bool in
            defer { lock.broadcast() }
            guard !cancelled else { return false }
            guard let fresh, !fresh.isEmpty else {
                failure = HTTPFailure.refused(url, status: status, askedForFreshLink: true)
                return false
            }
            renewals += 1
            currentURL = fresh
            lastData = monotonicSeconds()  // asking for a link is not waiting for the network
            return true
        }
    }

    /// After one transfer: nil when the stream is finished (ended, failed or
    /// cancelled), else the back-off before the next attempt.
    private func decide(after outcome: CurlOutcome) -> Double? {
        var event: NetworkEvent?
        defer { if let event { observer?(event) } }
        return lock.withLock { () -> Double? in
            defer { lock.broadcast() }
            if cancelled { return nil }
            if restartAt != nil {
                attempt = 0
                return 0  // a seek far away stopped this transfer: start again there at once
            }
            let size = sizeTrusted ? declaredSize : nil
            let complete = size.map { transferPosition >= $0 } ?? false
            var lost: String
            if outcome.succeeded {
                if size == nil || complete {
                    ended = true
                    return nil
                }
                lost = "the body ended at byte \(transferPosition) of \(size!)"
            } else if outcome.httpError {
                switch outcome.status {
                case 404:
                    failure = HTTPFailure.notFound(url)
                    return nil
                case 401, 403, 410:
                    if configuration.renewLink != nil && renewals < Self.maxRenewals {
                        expiredStatus = outcome.status  // runTransfers asks for a fresh link
                        return 0
                    }
                    failure = HTTPFailure.refused(url, status: outcome.status, askedForFreshLink: configuration.renewLink != nil)
                    return nil
                case 416 where transferPosition >= (size ?? 1):
                    ended = true  // asked for bytes past the end: there are none
                    return nil
                case 408, 429, 500...599:
                    lost = HTTPFailure.statusReason(outcome.status)
                default:
                    failure = HTTPFailure.status(url, outcome.status)
                    return nil
                }
            } else if outcome.tooManyRedirects {
                failure = HTTPFailure.tooManyRedirects(url, count: outcome.redirects, lastTarget: outcome.effectiveURL)
                return nil
            } else if outcome.certificateProblem {
                failure = HTTPFailure.untrustedCertificate(url, detail: outcome.detail)
                return nil
            } else if outcome.badURL {
                failure = HTTPFailure.badURL(url, detail: outcome.detail)
                return nil
            } else if complete {
                // Every declared byte came, then the connection failed (a TLS
                // peer that closes without close_notify): that is the end.
                ended = true
                return nil
            } else if outcome.abortedByUs {
                lost = "no data for \(formatSeconds(configuration.stallTimeout))"
            } else {
                lost = outcome.detail
            }
            // Retry, unless no byte has come for the whole network timeout.
            let silent = monotonicSeconds() - lastData
            if silent >= configuration.networkTimeout {
                failure = HTTPFailure.timedOut(url, after: configuration.networkTimeout, attempts: attempt + 1, at: transferPosition,
                                               of: size, last: lost)
                timedOut = true
                return nil
            }
            attempt += 1
            event = .reconnecting(attempt: attempt, byte: transferPosition)
            let backoff = min(configuration.firstBackoff * Double(1 << min(attempt - 1, 16)), configuration.maxBackoff)
            return min(backoff, max(0, configuration.networkTimeout - silent))
        }
    }

    // MARK: CurlTransferDelegate (transfer thread)

    func curlHeader(_ line: String) {
        if line.hasPrefix("HTTP/") || line.hasPrefix("ICY ") {
            response = ResponseHead()
            response.status = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
            response.lines = line + "\r\n"
            return
        }
        guard !line.isEmpty else { return endOfHeaders() }
        if response.lines.utf8.count + line.utf8.count <= ResponseHead.keptBytes { response.lines += line + "\r\n" }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        switch name {
        case "content-length": response.contentLength = Int64(value).flatMap { $0 >= 0 ? $0 : nil }
        case "content-range": response.contentRange = ContentRange(value)
        case "accept-ranges": response.acceptRanges = value.lowercased().contains("bytes")
        case "icy-metaint": response.metaint = Int(value).flatMap { (1...(1 << 20)).contains($0) ? $0 : nil }
        case "icy-name": response.station.name = value
        case "icy-genre": response.station.genre = value
        case "icy-url": response.station.url = value
        default: break
        }
    }

    /// A response's headers are complete: for a 2xx, what its body is.
    private func endOfHeaders() {
        guard (200..<300).contains(response.status) else { return }
        var event: NetworkEvent?
        lock.withLock {
            let start = transferPosition
            if response.status == 206, let range = response.contentRange, range.first <= start {
                rangesHonoured = true
                discard = start - range.first  // a server that started a little early
                switch range.total {
                case .known(let total): noteSize(total)
                case .contradictory: sizeTrusted = false  // a total at or before the range's own end
                case .unknown: break
                }
            } else {
                // A whole body from byte 0: the server ignored the Range (or none was sent).
                if start > 0 { rangesHonoured = false }
                discard = start
                if let length = response.contentLength { noteSize(length) }
            }
            acceptRanges = acceptRanges || response.acceptRanges
            if let interval = response.metaint { icy = ICYDeinterleaver(interval: interval) }
            if !announcedStation, response.station != StationInfo() {
                announcedStation = true
                event = .station(response.station)
            }
            if responseHead == nil { responseHead = response.lines + "\r\n" }
            responded = true
            lock.broadcast()
        }
        if let event { observer?(event) }
    }

    /// A size the server declared; one that contradicts an earlier one is not trusted.
    /// Guarded by `lock`.
    private func noteSize(_ size: Int64) {
        if let declaredSize, declaredSize != size { sizeTrusted = false }
        if declaredSize == nil { declaredSize = size }
    }

    func curlBody(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard icy != nil else { return append(bytes) }
        var titles: [(String, Int64)] = []
        let ok = icy!.feed(bytes, audio: { append($0) }, metadata: { text in
            if let title = ICYDeinterleaver.streamTitle(in: text) {
                titles.append((title, lock.withLock { transferPosition }))
            }
        })
        for (title, byte) in titles { observer?(.streamTitle(title, byte: byte)) }
        return ok
    }

    func curlProgress() -> Bool {
        lock.withLock {
            if cancelled || restartAt != nil { return false }
            let now = monotonicSeconds()
            return now - max(lastData, attemptStarted) < configuration.stallTimeout
        }
    }

    /// Audio bytes of the current response: into the window (and the head),
    /// waiting while the window is full. False aborts the transfer.
    private func append(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var resumedAt: Int64?
        defer { if let resumedAt { observer?(.resumed(byte: resumedAt)) } }
        return lock.withLock { () -> Bool in
            var bytes = bytes
            if discard > 0 {
                let drop = Int(min(discard, Int64(bytes.count)))
                discard -= Int64(drop)
                bytes = UnsafeRawBufferPointer(rebasing: bytes[drop...])
                lastData = monotonicSeconds()
                if bytes.isEmpty { return true }
            }
            while true {
                if cancelled || restartAt != nil { return false }
                trimWindow(toFit: bytes.count)
                if window.count + bytes.count <= configuration.windowBytes || window.isEmpty { break }
                lock.wait()  // the reader makes room
                lastData = monotonicSeconds()  // waiting for the reader is not waiting for the network
            }
            if transferPosition < Int64(configuration.headBytes), Int64(head.count) == transferPosition {
                head.append(contentsOf: bytes.prefix(configuration.headBytes - head.count))
            }
            if window.isEmpty { windowStart = transferPosition }
            window.append(contentsOf: bytes)
            transferPosition += Int64(bytes.count)
            received += Int64(bytes.count)
            if sizeTrusted, let declaredSize, transferPosition > declaredSize { sizeTrusted = false }
            lastData = monotonicSeconds()
            if attempt > 0 {
                attempt = 0
                resumedAt = transferPosition - Int64(bytes.count)
            }
            lock.broadcast()
            return true
        }
    }

    /// Drops window bytes the reader is done with (all but `keepBehindBytes`
    /// before its position) when `incoming` more would not fit. (Trimming
    /// only once the window was exactly full stalled both sides for good
    /// when it was fuller than a chunk's room but not full: the transfer
    /// waited for room, the reader at the window's end for bytes.)
    /// Guarded by `lock`.
    private func trimWindow(toFit incoming: Int) {
        guard window.count + incoming > configuration.windowBytes else { return }
        let keepFrom = max(windowStart, readPosition - Int64(configuration.keepBehindBytes))
        let drop = Int(min(Int64(window.count), keepFrom - windowStart))
        guard drop > 0 else { return }
        window.removeFirst(drop)
        windowStart += Int64(drop)
    }
}

/// The headers of one response that matter to the policy.
private struct ResponseHead {
    var status = 0
    var contentLength: Int64?
    var contentRange: ContentRange?
    var acceptRanges = false
    var metaint: Int?
    var station = StationInfo()
    /// The status line and header lines as received, each ended by CRLF
    /// (the lines past `keptBytes` are left out).
    var lines = ""
    static let keptBytes = 8192
}

/// `Content-Range: bytes FIRST-LAST/TOTAL` (TOTAL may be `*`).
struct ContentRange: Equatable {
    let first: Int64
    let last: Int64
    let total: Total

    /// The resource's size as the header declares it.
    enum Total: Equatable {
        case known(Int64)
        /// `*`: the server does not say.
        case unknown
        /// A total the range itself proves wrong (at or before its last byte).
        case contradictory
    }

    init?(_ text: String) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6)
        let parts = spec.split(separator: "/", maxSplits: 1)
        let bounds = parts.first?.split(separator: "-", maxSplits: 1) ?? []
        guard bounds.count == 2, let first = Int64(bounds[0].trimmingCharacters(in: .whitespaces)),
              let last = Int64(bounds[1].trimmingCharacters(in: .whitespaces)), first >= 0, last >= first else { return nil }
        self.first = first
        self.last = last
        let totalText = parts.count > 1 ? parts[1].trimmingCharacters(in: .whitespaces) : "*"
        if totalText == "*" {
            total = .unknown
        } else {
            guard let total = Int64(totalText), total >= 0 else { return nil }
            self.total = total > last ? .known(total) : .contradictory
        }
    }
}

