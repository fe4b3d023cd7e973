// MPD's queue commands: add, addid, clear, delete, deleteid, move, moveid,
// swap, swapid, shuffle, playlistinfo, playlistid, plchanges,
// plchangesposid, playlistfind, playlistsearch — specs/mpd-protocol.md §Command groups
import HarmoniaControl
import HarmoniaCore
import HarmoniaLibrary

/// The queue as MPD clients edit it: positions, ids (`QueueLedger`) and
/// versions. Every edit runs on the main loop and ends by syncing the ledger.
public struct MPDQueueCommands: MPDCommandGroup {
    let player: MPDPlayer

    public init(player: MPDPlayer) {
        self.player = player
    }

    public let commands: [MPDCommandInfo] = [
        MPDCommandInfo("add", .add, .range(1, 2)),
        MPDCommandInfo("addid", .add, .range(1, 2)),
        MPDCommandInfo("clear", .player, .none),
        MPDCommandInfo("delete", .player, .exactly(1)),
        MPDCommandInfo("deleteid", .player, .exactly(1)),
        MPDCommandInfo("move", .player, .exactly(2)),
        MPDCommandInfo("moveid", .player, .exactly(2)),
        MPDCommandInfo("swap", .player, .exactly(2)),
        MPDCommandInfo("swapid", .player, .exactly(2)),
        MPDCommandInfo("shuffle", .player, .range(0, 1)),
        MPDCommandInfo("playlistinfo", .read, .range(0, 1)),
        MPDCommandInfo("playlistid", .read, .range(0, 1)),
        MPDCommandInfo("plchanges", .read, .range(1, 2)),
        MPDCommandInfo("plchangesposid", .read, .range(1, 2)),
        MPDCommandInfo("playlistfind", .read, .range(1, nil)),
        MPDCommandInfo("playlistsearch", .read, .range(1, nil)),
    ]

    public func handle(_ request: MPDRequest, context: MPDContext, into writer: inout MPDResponseWriter) throws(MPDError) {
        let args = request.arguments
        let service = player.service
        switch request.command {
        case "add", "addid":
            let tracks = try player.tracks(forURI: args[0], single: request.command == "addid")
            let position = try args.count > 1 ? Int(MPDArgument.unsigned(args[1])) : nil
            let ids = try player.run { () throws(MPDError) in try player.enqueue(tracks: tracks, at: position) }
            if request.command == "addid", let id = ids.first { writer.append("Id", id) }
        case "clear":
            try player.run { () throws(MPDError) in
                service.clearQueue()
                player.syncQueue()
            }
        case "delete":
            let range = try MPDArgument.range(args[0])
            try player.run { () throws(MPDError) in
                // As MPD: the start must be in the queue; the end is clipped to it.
                let count = service.queue.count
                guard Int(range.start) < count else { throw MPDError(.arg, "Bad song index") }
                let clipped = MPDRange(start: range.start, end: range.end.map { min($0, UInt32(clamping: count)) })
                let positions = try checked(clipped, count: count)
                for position in positions.reversed() { try core { () throws(CoreError) in try service.remove(at: position) } }
                player.syncQueue()
            }
        case "deleteid":
            let id = try MPDArgument.unsigned(args[0])
            try player.run { () throws(MPDError) in
                let position = try position(ofID: id)
                try core { () throws(CoreError) in try service.remove(at: position) }
                player.syncQueue()
            }
        case "move":
            let range = try MPDArgument.range(args[0])
            let target = try MPDArgument.int(args[1])
            try player.run { () throws(MPDError) in
                let positions = try checked(range, count: service.queue.count)
                try move(positions, to: Int(target))
            }
        case "moveid":
            let id = try MPDArgument.unsigned(args[0]), target = try MPDArgument.int(args[1])
            try player.run { () throws(MPDError) in try move(try position(ofID: id)..<(try position(ofID: id) + 1), to: Int(target)) }
        case "swap", "swapid":
            let first = try MPDArgument.unsigned(args[0]), second = try MPDArgument.unsigned(args[1])
            try player.run { () throws(MPDError) in
                let a: Int, b: Int
                if request.command == "swapid" {
                    a = try position(ofID: first)
                    b = try position(ofID: second)
                } else {
                    let count = service.queue.count
                    guard Int(first) < count, Int(second) < count else { throw MPDError(.arg, "Bad song index") }
                    a = Int(first)
                    b = Int(second)
                }
                guard a != b else { return }
                let (low, high) = (min(a, b), max(a, b))
                try core { () throws(CoreError) in
                    try service.move(from: high, to: low)
                    try service.move(from: low + 1, to: high)
                }
                player.syncQueue()
            }
        case "shuffle":
            let range = try args.first.map { (text) throws(MPDError) in try MPDArgument.range(text) } ?? .all
            try player.run { () throws(MPDError) in
                let positions = try checked(range, count: service.queue.count)
                // Fisher–Yates through moves: each place gets a random entry from those left.
                for place in positions.dropLast() {
                    let pick = Int.random(in: place..<positions.upperBound)
                    if pick != place { try core { () throws(CoreError) in try service.move(from: pick, to: place) } }
                }
                player.syncQueue()
            }
        case "playlistinfo":
            let range = try args.first.map { (text) throws(MPDError) in try MPDArgument.range(text) }
            let entries = player.syncQueue()
            let positions = try range.map { (range) throws(MPDError) in try checked(range, count: entries.count) } ?? entries.indices
            for position in positions { player.write(entries[position], position: position, into: &writer) }
        case "playlistid":
            let id = try args.first.map { (text) throws(MPDError) in try MPDArgument.unsigned(text) }
            let entries = player.syncQueue()
            if let id {
                guard let position = entries.firstIndex(where: { $0.id == Int(id) }) else { throw MPDError(.noExist, "No such song") }
                player.write(entries[position], position: position, into: &writer)
            } else {
                for (position, entry) in entries.enumerated() { player.write(entry, position: position, into: &writer) }
            }
        case "plchanges", "plchangesposid":
            let version = try MPDArgument.uint32(args[0])
            let range = try args.count > 1 ? MPDArgument.range(args[1]) : MPDRange.all
            player.syncQueue()
            let changes = player.ledger.changes(since: Int(version)).filter { position, _ in
                position >= Int(range.start) && range.end.map { position < Int($0) } ?? true
            }
            for (position, entry) in changes {
                if request.command == "plchanges" {
                    player.write(entry, position: position, into: &writer)
                } else {
                    writer.append("cpos", position)
                    writer.append("Id", entry.id)
                }
            }
        case "playlistfind", "playlistsearch":
            let filter = try MPDFilterParser.parse(args, foldCase: request.command == "playlistsearch")
            let matcher: LibraryFilterMatcher
            do throws(CoreError) { matcher = try LibraryFilterMatcher(filter) } catch { throw MPDError(error) }
            for (position, entry) in player.syncQueue().enumerated() where matcher.matches(player.song(for: entry.track)) {
                player.write(entry, position: position, into: &writer)
            }
        default:
            throw MPDError.unknownCommand(request.command)
        }
    }

    /// The positions of `range` in a queue of `count` entries (an open end is the end).
    private func checked(_ range: MPDRange, count: Int) throws(MPDError) -> Range<Int> {
        let start = Int(range.start), end = range.end.map(Int.init) ?? count
        guard start <= end, end <= count, start < count || (start == end && start == count && range.end == nil) else {
            throw MPDError(.arg, "Bad song index")
        }
        return start..<end
    }

    private func position(ofID id: UInt32) throws(MPDError) -> Int {
        player.syncQueue()
        guard let position = player.ledger.position(ofID: Int(id)) else { throw MPDError(.noExist, "No such song") }
        return position
    }

    /// Moves the block `positions` so that it starts at `target` (main loop).
    private func move(_ positions: Range<Int>, to target: Int) throws(MPDError) {
        let service = player.service
        let count = service.queue.count
        guard target >= 0, target + positions.count <= count else { throw MPDError(.arg, "Bad song index") }
        guard target != positions.lowerBound else { return }
        try core { () throws(CoreError) in
            if target < positions.lowerBound {
                for offset in 0..<positions.count { try service.move(from: positions.lowerBound + offset, to: target + offset) }
            } else {
                for _ in 0..<positions.count { try service.move(from: positions.lowerBound, to: target + positions.count - 1) }
            }
        }
        player.syncQueue()
    }

}
