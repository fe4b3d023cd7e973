// A connection's lines and its own commands — specs/mpd-protocol.md §Connections, §Command lists, §Idle
//
// MPD's ProcessLine (src/client/Process.cxx) and command_process
// (src/command/AllCommands.cxx): the order of the checks is MPD's. Runs on
// the connection's reader thread only.

extension MPDConnection {
    /// What the reader does after a line.
    enum Flow { case proceed, finish, drop }

    /// How one command ended (MPD's CommandResult).
    enum Outcome: Equatable {
        case ok, error, finish
        case idle(MPDSubsystems)
    }

    private static let noidle = Array("noidle".utf8)
    private static let listBegin = Array("command_list_begin".utf8)
    private static let listOKBegin = Array("command_list_ok_begin".utf8)
    private static let listEnd = Array("command_list_end".utf8)

    /// One line from the client, in MPD's order: a line not starting with a
    /// lowercase letter closes the connection; `noidle`; anything else while
    /// idle closes it; inside a command list, lines are collected until
    /// `command_list_end` (past `maxCommandListBytes` the connection closes);
    /// else the command runs and is answered.
    func processLine(_ raw: [UInt8]) -> Flow {
        let line = MPDRequest.stripped(raw)
        guard let first = line.first, first >= 0x61 && first <= 0x7A else { return .finish }
        if line == Self.noidle {
            leaveIdle()
            return .proceed
        }
        if isIdle { return .finish }
        if commandList != nil {
            if line == Self.listEnd { return runCommandList() }
            commandListBytes += line.count + 1
            guard commandListBytes <= dispatch.configuration.maxCommandListBytes else { return .finish }
            commandList!.append(line)
            return .proceed
        }
        if line == Self.listBegin || line == Self.listOKBegin {
            commandList = []
            commandListOK = line == Self.listOKBegin
            commandListBytes = 0
            return .proceed
        }
        var writer = makeWriter()
        let outcome = execute(line, listIndex: 0, into: &writer)
        if outcome == .ok { writer.appendOK() }
        return send(writer, outcome)
    }

    /// `command_list_end`: every command in order, `list_OK` after each in
    /// OK mode; the first failure ends the list (its ACK has its index);
    /// `OK` when all succeeded.
    private func runCommandList() -> Flow {
        let list = commandList ?? []
        commandList = nil
        var writer = makeWriter()
        var outcome = Outcome.ok
        for (index, line) in list.enumerated() {
            outcome = execute(line, listIndex: index, into: &writer)
            guard outcome == .ok else { break }
            if commandListOK { writer.appendListOK() }
            if writer.isOverflowed { break }
        }
        if outcome == .ok { writer.appendOK() }
        return send(writer, outcome)
    }

    /// Queues the answer; then idles or closes as the outcome says. A client
    /// whose answer does not fit its output limit is dropped.
    private func send(_ writer: MPDResponseWriter, _ outcome: Outcome) -> Flow {
        var writer = writer
        guard !writer.isOverflowed, writer.flush() else { return .drop }
        switch outcome {
        case .ok, .error: return .proceed
        case .finish: return .finish
        case .idle(let subscriptions):
            enterIdle(subscriptions)
            return .proceed
        }
    }

    private func makeWriter() -> MPDResponseWriter {
        let configuration = dispatch.configuration
        var writer = MPDResponseWriter(limit: max(0, configuration.maxOutputBytes - queuedBytes),
                                       tagMask: configuration.tagTypes.intersection(clientTags),
                                       binaryLimit: binaryLimit)
        writer.sink = self
        return writer
    }

    /// Tokenizes and runs one command (MPD's command_process): tokenizer
    /// errors, then the lookup (`unknown command`), the permission, the
    /// arity, then the command itself.
    func execute(_ line: [UInt8], listIndex: Int, into writer: inout MPDResponseWriter) -> Outcome {
        func fail(_ error: MPDError, _ command: String) -> Outcome {
            writer.appendLine(error.line(command: command, listIndex: listIndex))
            return .error
        }
        let request: MPDRequest
        switch MPDRequest.parse(line: line) {
        case .close: return .finish
        case .errorThenClose(let error):
            _ = fail(error, "")
            return .finish
        case .error(let error): return fail(error, "")
        case .request(let parsed): request = parsed
        }
        guard let entry = dispatch.table[request.command] else {
            return fail(.unknownCommand(request.command), "")
        }
        guard permissions.isSuperset(of: entry.info.permission) else {
            return fail(.permissionDenied(request.command), request.command)
        }
        if let violation = entry.info.arity.violation(count: request.arguments.count, name: request.command) {
            return fail(violation, request.command)
        }
        do {
            if entry.builtin { return try runBuiltin(request, into: &writer) }
            let context = MPDContext(clientID: id, peer: peer, permissions: permissions, listIndex: listIndex,
                                     tagMask: writer.tagMask)
            try dispatch.handler.handle(request, context: context, into: &writer)
            return .ok
        } catch {
            return fail(error, request.command)
        }
    }

    // MARK: - The connection's own commands

    private func runBuiltin(_ request: MPDRequest, into writer: inout MPDResponseWriter) throws(MPDError) -> Outcome {
        let arguments = request.arguments
        switch request.command {
        case "ping":
            return .ok
        case "close":
            return .finish
        case "password":
            // A wrong password waits before its answer: guessing is slow,
            // and only this connection waits.
            guard let granted = dispatch.configuration.passwords[arguments[0]] else {
                pause(seconds: dispatch.configuration.wrongPasswordDelay)
                throw MPDError(.password, "incorrect password")
            }
            permissions = granted
            return .ok
        case "commands", "notcommands":
            let permitted = request.command == "commands"
            for info in dispatch.sorted where permissions.isSuperset(of: info.permission) == permitted {
                writer.append("command", info.name)
            }
            return .ok
        case "tagtypes":
            try tagtypes(arguments, into: &writer)
            return .ok
        case "binarylimit":
            let ceiling = UInt32(clamping: max(0, dispatch.configuration.maxOutputBytes - 4096))
            let value = try MPDArgument.unsigned(arguments[0], max: ceiling)
            guard value >= MPDProtocol.minBinaryLimit else { throw MPDError(.arg, "Value too small") }
            binaryLimit = Int(value)
            return .ok
        case "idle":
            var subscriptions: MPDSubsystems = []
            for name in arguments {
                guard let subsystem = MPDSubsystems(name: name) else {
                    throw MPDError(.arg, "Unrecognized idle event: \(name)")
                }
                subscriptions.formUnion(subsystem)
            }
            return .idle(subscriptions.isEmpty ? .all : subscriptions)
        default:
            return .ok
        }
    }

    /// `tagtypes` (list), `tagtypes all|clear`, `tagtypes enable|disable NAME…`.
    private func tagtypes(_ arguments: [String], into writer: inout MPDResponseWriter) throws(MPDError) {
        guard let sub = arguments.first else {
            for tag in dispatch.configuration.tagTypes.intersection(clientTags).tags { writer.append("tagtype", tag.name) }
            return
        }
        let names = arguments.dropFirst()
        func mask() throws(MPDError) -> MPDTagMask {
            guard !names.isEmpty else { throw MPDError(.arg, "Not enough arguments") }
            var result = MPDTagMask.none
            for name in names {
                guard let tag = MPDTagType(name: name) else { throw MPDError(.arg, "Unknown tag type") }
                result.insert(tag)
            }
            return result
        }
        switch sub {
        case "all", "clear":
            guard names.isEmpty else { throw MPDError(.arg, "Too many arguments") }
            clientTags = sub == "all" ? .all : .none
        case "enable":
            clientTags = MPDTagMask(bits: clientTags.bits | (try mask()).bits)
        case "disable":
            clientTags = MPDTagMask(bits: clientTags.bits & ~(try mask()).bits)
        default:
            throw MPDError(.arg, "Unknown sub command")
        }
    }
}

extension MPDRequest {
    /// A line as MPD sees it: up to its first NUL, without trailing bytes ≤ 0x20.
    static func stripped(_ raw: some Collection<UInt8>) -> [UInt8] {
        var line = Array(raw.prefix { $0 != 0 })
        while let last = line.last, last <= 0x20 { line.removeLast() }
        return line
    }
}
