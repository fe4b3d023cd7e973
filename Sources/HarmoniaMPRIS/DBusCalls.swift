// Every libdbus call of the MPRIS adapter, in one file — specs/mpris.md §Threads
//
// Nothing here knows MPRIS: a private connection to a bus address, name
// requests, messages received one at a time (no callbacks, no dispatch:
// `popMessage`), replies, errors and signals built from `DBusValue`s, and the
// arguments of a received message read back into them. Each failure is a
// `DBusFailure` naming the libdbus function. Used on the adapter's D-Bus
// thread only (the connection is not shared), so libdbus's own locking is
// never contended.
import CDBus
#if canImport(Glibc)
import Glibc
#endif

/// A libdbus call failed: which one, and the D-Bus error it gave, if any.
struct DBusFailure: Error, CustomStringConvertible {
    let function: String
    var name: String? = nil
    var message: String? = nil

    var description: String {
        var text = function + " failed"
        if let name { text += ": " + name }
        if let message { text += ": " + message }
        return text
    }

    /// Takes (and frees) the error libdbus filled in.
    fileprivate init(_ function: String, _ error: inout DBusError) {
        self.function = function
        if dbus_error_is_set(&error) != 0 {
            name = error.name.map { String(cString: $0) }
            message = error.message.map { String(cString: $0) }
            dbus_error_free(&error)
        }
    }

    fileprivate init(_ function: String) { self.function = function }
}

/// A message taken from the connection; unreferenced when released.
/// D-Bus thread only.
final class DBusIncomingMessage {
    enum Kind { case methodCall, signal, other }

    fileprivate let message: OpaquePointer
    let kind: Kind
    let path: String?
    let interface: String?
    let member: String?
    /// The signature of the body (`""` for none).
    let signature: String
    /// Whether the sender waits for a reply.
    let wantsReply: Bool

    fileprivate init(_ message: OpaquePointer) {
        self.message = message
        switch dbus_message_get_type(message) {
        case DBUS_MESSAGE_TYPE_METHOD_CALL: kind = .methodCall
        case DBUS_MESSAGE_TYPE_SIGNAL: kind = .signal
        default: kind = .other
        }
        path = dbus_message_get_path(message).map { String(cString: $0) }
        interface = dbus_message_get_interface(message).map { String(cString: $0) }
        member = dbus_message_get_member(message).map { String(cString: $0) }
        signature = dbus_message_get_signature(message).map { String(cString: $0) } ?? ""
        wantsReply = dbus_message_get_no_reply(message) == 0
    }

    deinit { dbus_message_unref(message) }

    /// The body's values when every argument is a basic type or a variant
    /// holding a basic type (all MPRIS methods take); nil otherwise. Strings
    /// longer than `maxStringBytes` are refused (nil), so a peer's message
    /// is never copied whole into a Swift value.
    func arguments(maxStringBytes: Int) -> [DBusValue]? {
        var iter = DBusMessageIter()
        guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
        var values: [DBusValue] = []
        repeat {
            guard let value = Self.read(&iter, maxStringBytes: maxStringBytes, variantAllowed: true) else { return nil }
            values.append(value)
        } while dbus_message_iter_next(&iter) != 0
        return values
    }

    private static func read(_ iter: inout DBusMessageIter, maxStringBytes: Int, variantAllowed: Bool) -> DBusValue? {
        let type = dbus_message_iter_get_arg_type(&iter)
        switch type {
        case DBusTypeCode.boolean:
            var v: dbus_bool_t = 0
            dbus_message_iter_get_basic(&iter, &v)
            return .boolean(v != 0)
        case DBusTypeCode.int32:
            var v: Int32 = 0
            dbus_message_iter_get_basic(&iter, &v)
            return .int32(v)
        case DBusTypeCode.uint32:
            var v: UInt32 = 0
            dbus_message_iter_get_basic(&iter, &v)
            return .uint32(v)
        case DBusTypeCode.int64:
            var v: Int64 = 0
            dbus_message_iter_get_basic(&iter, &v)
            return .int64(v)
        case DBusTypeCode.uint64:
            var v: UInt64 = 0
            dbus_message_iter_get_basic(&iter, &v)
            return .uint64(v)
        case DBusTypeCode.double:
            var v: Double = 0
            dbus_message_iter_get_basic(&iter, &v)
            return .double(v)
        case DBusTypeCode.string, DBusTypeCode.objectPath:
            var pointer: UnsafePointer<CChar>? = nil
            dbus_message_iter_get_basic(&iter, &pointer)
            guard let pointer, strnlen(pointer, maxStringBytes + 1) <= maxStringBytes else { return nil }
            let text = String(cString: pointer)  // libdbus validated it as UTF-8
            return type == DBusTypeCode.string ? .string(text) : .objectPath(text)
        case DBusTypeCode.variant where variantAllowed:
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iter, &inner)
            return read(&inner, maxStringBytes: maxStringBytes, variantAllowed: false).map(DBusValue.variant)
        default:
            return nil
        }
    }
}

/// A private connection to a message bus. D-Bus thread only.
final class DBusBusConnection {
    private let connection: OpaquePointer
    private var closed = false

    /// Connects to the bus at `address` and says hello. Blocks (on the
    /// caller's thread) up to libdbus's default timeout on a slow bus.
    init(address: String) throws(DBusFailure) {
        var error = DBusError()
        dbus_error_init(&error)
        guard let connection = dbus_connection_open_private(address, &error) else {
            throw DBusFailure("dbus_connection_open_private", &error)
        }
        // Never _exit() the process when the bus goes away (libdbus's default for bus connections).
        dbus_connection_set_exit_on_disconnect(connection, 0)
        guard dbus_bus_register(connection, &error) != 0 else {
            let failure = DBusFailure("dbus_bus_register", &error)
            dbus_connection_close(connection)
            dbus_connection_unref(connection)
            throw failure
        }
        self.connection = connection
    }

    deinit { close() }

    /// Asks for `name` without queueing; true when this connection became
    /// its primary owner, false when another connection has it.
    func requestName(_ name: String) throws(DBusFailure) -> Bool {
        var error = DBusError()
        dbus_error_init(&error)
        let result = dbus_bus_request_name(connection, name, UInt32(DBUS_NAME_FLAG_DO_NOT_QUEUE), &error)
        guard result >= 0 else { throw DBusFailure("dbus_bus_request_name", &error) }
        return result == DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER || result == DBUS_REQUEST_NAME_REPLY_ALREADY_OWNER
    }

    /// The socket, to poll on.
    var fileDescriptor: Int32? {
        var fd: Int32 = -1
        return dbus_connection_get_unix_fd(connection, &fd) != 0 && fd >= 0 ? fd : nil
    }

    var isConnected: Bool { !closed && dbus_connection_get_is_connected(connection) != 0 }

    /// Outgoing messages are waiting for the socket to take them.
    var hasMessagesToSend: Bool { dbus_connection_has_messages_to_send(connection) != 0 }

    /// Reads what the socket has and writes what it takes, without blocking.
    func readWrite() { _ = dbus_connection_read_write(connection, 0) }

    /// Blocks until every queued message is written (or the connection is lost).
    func flush() { dbus_connection_flush(connection) }

    /// The oldest received message, if any.
    func popMessage() -> DBusIncomingMessage? {
        dbus_connection_pop_message(connection).map(DBusIncomingMessage.init)
    }

    /// Sends the method return of `call` carrying `values`.
    func reply(to call: DBusIncomingMessage, _ values: [DBusValue]) throws(DBusFailure) {
        guard let reply = dbus_message_new_method_return(call.message) else {
            throw DBusFailure("dbus_message_new_method_return")
        }
        defer { dbus_message_unref(reply) }
        try Self.append(values, to: reply)
        try send(reply)
    }

    /// Sends an error reply to `call`: `name` is a D-Bus error name.
    func replyError(to call: DBusIncomingMessage, name: String, message: String) throws(DBusFailure) {
        guard let reply = dbus_message_new_error(call.message, name, message) else {
            throw DBusFailure("dbus_message_new_error")
        }
        defer { dbus_message_unref(reply) }
        try send(reply)
    }

    /// Emits a signal from `path`.
    func signal(path: String, interface: String, member: String, _ values: [DBusValue]) throws(DBusFailure) {
        guard let signal = dbus_message_new_signal(path, interface, member) else {
            throw DBusFailure("dbus_message_new_signal")
        }
        defer { dbus_message_unref(signal) }
        try Self.append(values, to: signal)
        try send(signal)
    }

    /// The machine's D-Bus id (org.freedesktop.DBus.Peer.GetMachineId).
    func machineID() throws(DBusFailure) -> String {
        var error = DBusError()
        dbus_error_init(&error)
        guard let id = dbus_try_get_local_machine_id(&error) else {
            throw DBusFailure("dbus_try_get_local_machine_id", &error)
        }
        defer { dbus_free(id) }
        return String(cString: id)
    }

    /// Closes and releases the connection (the bus drops its names). Idempotent.
    func close() {
        guard !closed else { return }
        closed = true
        dbus_connection_close(connection)
        dbus_connection_unref(connection)
    }

    // MARK: Sending

    private func send(_ message: OpaquePointer) throws(DBusFailure) {
        // Queues the message and writes what the socket takes now, never waiting.
        guard dbus_connection_send(connection, message, nil) != 0 else {
            throw DBusFailure("dbus_connection_send")
        }
    }

    private static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusFailure) {
        var iter = DBusMessageIter()
        dbus_message_iter_init_append(message, &iter)
        for value in values { try append(value, to: &iter) }
    }

    private static func append(_ value: DBusValue, to iter: inout DBusMessageIter) throws(DBusFailure) {
        let ok: Bool
        switch value {
        case .boolean(let v):
            var b: dbus_bool_t = v ? 1 : 0
            ok = dbus_message_iter_append_basic(&iter, DBusTypeCode.boolean, &b) != 0
        case .int32(var v):
            ok = dbus_message_iter_append_basic(&iter, DBusTypeCode.int32, &v) != 0
        case .uint32(var v):
            ok = dbus_message_iter_append_basic(&iter, DBusTypeCode.uint32, &v) != 0
        case .int64(var v):
            ok = dbus_message_iter_append_basic(&iter, DBusTypeCode.int64, &v) != 0
        case .uint64(var v):
            ok = dbus_message_iter_append_basic(&iter, DBusTypeCode.uint64, &v) != 0
        case .double(var v):
            ok = dbus_message_iter_append_basic(&iter, DBusTypeCode.double, &v) != 0
        case .string(let text), .objectPath(let text):
            // A NUL inside ends the C string: what goes out is its valid UTF-8 prefix.
            ok = text.withCString { pointer in
                var p: UnsafePointer<CChar>? = pointer
                return dbus_message_iter_append_basic(&iter, value.typeCode, &p) != 0
            }
        case .variant(let inner):
            try container(&iter, DBusTypeCode.variant, inner.signature) { sub throws(DBusFailure) in
                try append(inner, to: &sub)
            }
            return
        case .array(let element, let elements):
            try container(&iter, DBusTypeCode.array, element) { sub throws(DBusFailure) in
                for element in elements { try append(element, to: &sub) }
            }
            return
        case .dictionary(let entries):
            try container(&iter, DBusTypeCode.array, "{sv}") { sub throws(DBusFailure) in
                for entry in entries {
                    try container(&sub, DBusTypeCode.dictEntry, nil) { pair throws(DBusFailure) in
                        try append(.string(entry.key), to: &pair)
                        try append(.variant(entry.value), to: &pair)
                    }
                }
            }
            return
        }
        guard ok else { throw DBusFailure("dbus_message_iter_append_basic") }
    }

    private static func container(_ iter: inout DBusMessageIter, _ type: Int32, _ contained: String?,
                                  _ body: (inout DBusMessageIter) throws(DBusFailure) -> Void) throws(DBusFailure) {
        var sub = DBusMessageIter()
        let opened: Bool
        if let contained {
            opened = dbus_message_iter_open_container(&iter, type, contained, &sub) != 0
        } else {
            opened = dbus_message_iter_open_container(&iter, type, nil, &sub) != 0
        }
        guard opened else { throw DBusFailure("dbus_message_iter_open_container") }
        do {
            try body(&sub)
        } catch {
            dbus_message_iter_abandon_container(&iter, &sub)
            throw error
        }
        guard dbus_message_iter_close_container(&iter, &sub) != 0 else {
            throw DBusFailure("dbus_message_iter_close_container")
        }
    }
}
