// PlaybackQueue — specs/services.md §Queue
import Foundation

/// The queue's entries and the order they play in. A value type without
/// I/O, so its rules (repeat, shuffle, edits) are tested on their own.
///
/// Shuffle keeps a play order of track ids: the current track first, the rest
/// in random order; tracks added while shuffled land at random places after
/// the current one. Edits never reorder what has already played.
struct PlaybackQueue: Sendable {
    private(set) var tracks: [Track] = []
    var repeatMode: RepeatMode = .off
    private(set) var shuffled = false
    /// Play order when shuffled (ids of `tracks`); empty otherwise.
    private var order: [UUID] = []

    func index(of id: UUID) -> Int? { tracks.firstIndex { $0.id == id } }

    private var playOrder: [UUID] { shuffled ? order : tracks.map(\.id) }

    /// The entry that plays after `index`: the same one when a track ends by
    /// itself under repeat-one, the first after the last under repeat-all.
    func following(_ index: Int, automatic: Bool) -> Int? {
        guard tracks.indices.contains(index) else { return nil }
        if automatic && repeatMode == .one { return index }
        let ids = playOrder
        guard let position = ids.firstIndex(of: tracks[index].id) else { return nil }
        if position + 1 < ids.count { return self.index(of: ids[position + 1]) }
        return repeatMode == .all ? self.index(of: ids[0]) : nil
    }

    /// The entry before `index` in play order (the last under repeat-all).
    func preceding(_ index: Int) -> Int? {
        guard tracks.indices.contains(index) else { return nil }
        let ids = playOrder
        guard let position = ids.firstIndex(of: tracks[index].id) else { return nil }
        if position > 0 { return self.index(of: ids[position - 1]) }
        return repeatMode == .all ? self.index(of: ids[ids.count - 1]) : nil
    }

    /// The first entry in play order.
    var first: Int? { playOrder.first.flatMap(index(of:)) }

    mutating func append(_ new: [Track], current: Int?) {
        tracks += new
        guard shuffled else { return }
        for track in new {
            let after = current.flatMap { order.firstIndex(of: tracks[$0].id) }.map { $0 + 1 } ?? 0
            order.insert(track.id, at: Int.random(in: after...order.count))
        }
    }

    mutating func insert(_ track: Track, at index: Int, current: Int?) {
        tracks.insert(track, at: index)
        guard shuffled else { return }
        let after = current.flatMap { $0 >= index ? $0 + 1 : $0 }
            .flatMap { order.firstIndex(of: tracks[$0].id) }.map { $0 + 1 } ?? 0
        order.insert(track.id, at: Int.random(in: after...order.count))
    }

    @discardableResult
    mutating func remove(at index: Int) -> Track {
        let track = tracks.remove(at: index)
        order.removeAll { $0 == track.id }
        return track
    }

    mutating func move(from: Int, to: Int) {
        let track = tracks.remove(at: from)
        tracks.insert(track, at: to)
    }

    mutating func removeAll() {
        tracks = []
        order = []
    }

    /// Updates a track's fields (tags read when it was opened), keeping its id.
    mutating func update(_ track: Track) {
        if let index = index(of: track.id) { tracks[index] = track }
    }

    /// Turns shuffle on (a fresh random order that starts with `current`) or off.
    mutating func setShuffle(_ enabled: Bool, current: Int?) {
        shuffled = enabled
        guard enabled else { order = []; return }
        var ids = tracks.map(\.id).shuffled()
        if let current, let at = ids.firstIndex(of: tracks[current].id) {
            ids.swapAt(0, at)
        }
        order = ids
    }
}
