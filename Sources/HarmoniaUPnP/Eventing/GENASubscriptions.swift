// GENA eventing: subscriptions, LastChange, moderation, SEQ
// — specs/upnp.md §Eventing
import Foundation
import HarmoniaCore
import NIOCore
import NIOHTTP1

/// The event subscribers of the three services and what they are sent.
///
/// The owner `publish`es each service's evented variables after every
/// change; changes are gathered and sent at most every `moderation`
/// seconds, as one LastChange (AVTransport, RenderingControl) or property
/// set (ConnectionManager), to each subscriber in order with its own SEQ
/// (0 for the initial event, then 1, 2, …). Each subscriber has its own
/// queue of at most `maxQueued` messages and one NOTIFY in flight; one that
/// does not answer (connect 3 s, answer 5 s), answers an error, or falls
/// that far behind is dropped, and nobody else waits for it.
///
/// Threads: every method from any thread; sending on `loop`.
public final class GENASubscriptions: @unchecked Sendable {
    public static let maxSubscriptions = 32
    public static let maxQueued = 16
    public static let moderation = 0.2
    let loop: any EventLoop
    private let lock = ConditionLock()
    // Guarded by `lock`.
    private var subscribers: [String: Subscriber] = [:]
    private var variables: [String: [(String, String)]] = [:]
    private var pending: [String: Set<String>] = [:]
    private var flushScheduled = false
    private var lastFlush = -1.0
    private var closed = false

    /// Guarded by the owner's `lock`.
    final class Subscriber: @unchecked Sendable {
        let sid: String
        let service: String
        let callback: GENACallback
        var expiry: Double
        var seq: UInt32 = 0
        var queue: [String] = []
        var sending = false
        init(sid: String, service: String, callback: GENACallback, expiry: Double) {
            self.sid = sid
            self.service = service
            self.callback = callback
            self.expiry = expiry
        }
    }

    init(loop: any EventLoop) {
        self.loop = loop
    }

    public enum Method: Sendable { case subscribe, unsubscribe }

    struct Answer {
        var status: HTTPResponseStatus
        var headers: [(String, String)] = []
        /// A new subscription: its initial event goes once the answer is sent.
        var initialEventFor: String?
    }

    /// Subscribers now (for tests and the spec's limits).
    public var count: Int { lock.withLock { subscribers.count } }

    /// SUBSCRIBE (new, or a renewal with SID) and UNSUBSCRIBE, as UDA 1.1
    /// §4.1 answers them: 200, 400 (SID together with CALLBACK or NT), 412
    /// (no or unknown SID, no usable CALLBACK, NT not upnp:event), 503 (the
    /// limit of subscriptions reached).
    ///
    /// Stricter than the peers: a CALLBACK must be an http URL on the
    /// subscriber's own address, so no one can make the renderer send its
    /// events to a third host.
    func handle(method: Method, service: String, headers: HTTPHeaders, peer: String) -> Answer {
        let sid = headers.first(name: "sid")
        let callback = headers.first(name: "callback")
        let nt = headers.first(name: "nt")
        if sid != nil && (callback != nil || nt != nil) { return Answer(status: .badRequest) }
        let now = monotonicSeconds()
        return lock.withLock { () -> Answer in
            removeExpiredLocked(now: now)
            if method == .unsubscribe {
                guard let sid, subscribers[sid]?.service == service else { return Answer(status: .preconditionFailed) }
                subscribers[sid] = nil
                return Answer(status: .ok)
            }
            let timeout = Self.timeout(headers.first(name: "timeout"))
            let answerHeaders: (String) -> [(String, String)] = { [("SID", $0), ("TIMEOUT", "Second-\(timeout)"), ("Server", UPnPServer.header)] }
            if let sid {
                guard let subscriber = subscribers[sid], subscriber.service == service else { return Answer(status: .preconditionFailed) }
                subscriber.expiry = now + Double(timeout)
                return Answer(status: .ok, headers: answerHeaders(sid))
            }
            guard nt == "upnp:event", let callback = GENACallback(header: callback ?? ""), callback.host == peer else {
                return Answer(status: .preconditionFailed)
            }
            guard !closed, subscribers.count < Self.maxSubscriptions else { return Answer(status: .serviceUnavailable) }
            let sid = "uuid:" + UUID().uuidString.lowercased()
            subscribers[sid] = Subscriber(sid: sid, service: service, callback: callback, expiry: now + Double(timeout))
            return Answer(status: .ok, headers: answerHeaders(sid), initialEventFor: sid)
        }
    }

    /// Sends a new subscriber every evented variable of its service (SEQ 0).
    func sendInitial(sid: String) {
        let ready = lock.withLock { () -> Subscriber? in
            guard let subscriber = subscribers[sid] else { return nil }
            let all = variables[subscriber.service] ?? []
            subscriber.queue.append(GENABody.make(service: subscriber.service, variables: all))
            return subscriber
        }
        if let ready { pump(ready) }
    }

    /// The evented variables of `service` now (AVTransport, RenderingControl,
    /// ConnectionManager), in their order; the ones that changed are sent
    /// within `moderation` seconds. Any thread.
    public func publish(service: String, variables now: [(String, String)]) {
        let delay = lock.withLock { () -> Double? in
            let before = Dictionary(variables[service] ?? [], uniquingKeysWith: { a, _ in a })
            variables[service] = now
            let changed = now.filter { before[$0.0] != $0.1 }.map(\.0)
            guard !changed.isEmpty, !closed else { return nil }
            pending[service, default: []].formUnion(changed)
            guard !flushScheduled else { return nil }
            flushScheduled = true
            return max(0, lastFlush + Self.moderation - monotonicSeconds())
        }
        guard let delay else { return }
        loop.scheduleTask(in: .nanoseconds(Int64(delay * 1e9))) { [self] in flush() }
    }

    private func flush() {
        let ready = lock.withLock { () -> [Subscriber] in
            flushScheduled = false
            lastFlush = monotonicSeconds()
            removeExpiredLocked(now: lastFlush)
            var bodies: [String: String] = [:]
            for (service, names) in pending {
                let changed = (variables[service] ?? []).filter { names.contains($0.0) }
                bodies[service] = GENABody.make(service: service, variables: changed)
            }
            pending = [:]
            var ready: [Subscriber] = []
            for subscriber in subscribers.values {
                guard let body = bodies[subscriber.service] else { continue }
                guard subscriber.queue.count < Self.maxQueued else {
                    subscribers[subscriber.sid] = nil  // too far behind: dropped
                    continue
                }
                subscriber.queue.append(body)
                ready.append(subscriber)
            }
            return ready
        }
        for subscriber in ready { pump(subscriber) }
    }

    /// Sends the subscriber's next message unless one is in flight.
    private func pump(_ subscriber: Subscriber) {
        let next = lock.withLock { () -> (String, UInt32)? in
            guard !subscriber.sending, !subscriber.queue.isEmpty, subscribers[subscriber.sid] === subscriber else { return nil }
            subscriber.sending = true
            let seq = subscriber.seq
            subscriber.seq = seq == UInt32.max ? 1 : seq + 1  // UDA: wraps to 1
            return (subscriber.queue.removeFirst(), seq)
        }
        guard let next else { return }
        let (body, seq) = next
        GENANotifier.send(body: body, sid: subscriber.sid, seq: seq, to: subscriber.callback, loop: loop).whenComplete { [self] result in
            let delivered = (try? result.get()) ?? false
            lock.withLock {
                subscriber.sending = false
                if !delivered, subscribers[subscriber.sid] === subscriber { subscribers[subscriber.sid] = nil }
            }
            if delivered { pump(subscriber) }
        }
    }

    private func removeExpiredLocked(now: Double) {
        subscribers = subscribers.filter { $0.value.expiry > now }
    }

    /// Ends eventing: no subscriber is sent anything more.
    func close() {
        lock.withLock {
            closed = true
            subscribers = [:]
        }
    }

    /// `Second-N` clamped to 60…3600 s; `infinite`, absent or unreadable: 1800.
    static func timeout(_ header: String?) -> Int {
        guard let header, header.lowercased().hasPrefix("second-"), header.count <= 16,
              let seconds = Int(header.dropFirst(7)) else { return 1800 }
        return min(max(seconds, 60), 3600)
    }
}

/// A subscriber's CALLBACK: the first `<http://HOST:PORT/PATH>` of the header.
struct GENACallback: Equatable {
    let host: String
    let port: Int
    let path: String

    init?(header: String) {
        guard header.utf8.count <= 1024, let open = header.firstIndex(of: "<"), let close = header[open...].firstIndex(of: ">") else { return nil }
        let url = header[header.index(after: open)..<close]
        guard url.lowercased().hasPrefix("http://") else { return nil }
        let rest = url.dropFirst(7)
        let authority = rest.prefix { $0 != "/" }
        path = rest.count > authority.count ? String(rest.dropFirst(authority.count)) : "/"
        var portText: Substring = "80"
        if authority.hasPrefix("["), let end = authority.firstIndex(of: "]") {
            host = String(authority[authority.index(after: authority.startIndex)..<end])
            let after = authority[authority.index(after: end)...]
            if after.hasPrefix(":") { portText = after.dropFirst() } else if !after.isEmpty { return nil }
        } else if let colon = authority.lastIndex(of: ":") {
            host = String(authority[..<colon])
            portText = authority[authority.index(after: colon)...]
        } else {
            host = String(authority)
        }
        guard !host.isEmpty, portText.count <= 5, let port = Int(portText), (1...65535).contains(port),
              !path.contains(where: { $0.isWhitespace || $0.asciiValue.map { $0 < 0x20 } == true }) else { return nil }
        self.port = port
    }
}

/// The bodies of NOTIFY messages.
enum GENABody {
    /// A property set: LastChange (escaped Event XML, `InstanceID val="0"`)
    /// for AVTransport and RenderingControl, the variables themselves for
    /// ConnectionManager.
    static func make(service: String, variables: [(String, String)]) -> String {
        var properties = ""
        if service == UPnPServiceSpec.connectionManager.name {
            for (name, value) in variables { properties += "<e:property><\(name)>\(UPnPXML.escape(value))</\(name)></e:property>" }
        } else {
            let namespace = service == UPnPServiceSpec.avTransport.name
                ? "urn:schemas-upnp-org:metadata-1-0/AVT/" : "urn:schemas-upnp-org:metadata-1-0/RCS/"
            var event = "<Event xmlns=\"\(namespace)\"><InstanceID val=\"0\">"
            for (name, value) in variables {
                let channel = name == "Volume" || name == "Mute" ? " channel=\"Master\"" : ""
                event += "<\(name)\(channel) val=\"\(UPnPXML.escape(value))\"/>"
            }
            event += "</InstanceID></Event>"
            properties = "<e:property><LastChange>\(UPnPXML.escape(event))</LastChange></e:property>"
        }
        return "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<e:propertyset xmlns:e=\"urn:schemas-upnp-org:event-1-0\">"
            + properties + "</e:propertyset>\n"
    }
}
