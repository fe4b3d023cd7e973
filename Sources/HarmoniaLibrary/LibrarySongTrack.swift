// A library song as a queue entry, and a queue entry as a song — specs/library.md §Queue entries
import HarmoniaCore

extension Track {
    /// The queue entry for a library song: its absolute path in
    /// `musicDirectory`, the tags the library keeps (so nothing is read to
    /// show it) — title, every artist, album, every album artist, every
    /// genre — and its duration. The one conversion every frontend uses
    /// (the control protocol, MPD), so a song queued through any of them is
    /// the track the file gives once opened. Pure; any thread.
    public init(song: LibrarySong, in musicDirectory: MusicDirectory) {
        let root = musicDirectory.root
        self.init(url: (root.hasSuffix("/") ? root : root + "/") + song.path,
                  title: song.first(.title), album: song.first(.album), duration: song.duration,
                  artists: song.tags[.artist] ?? [], albumArtists: song.tags[.albumArtist] ?? [],
                  genres: song.tags[.genre] ?? [])
    }
}

extension LibrarySong {
    /// A song for a queue entry the library does not know (a stream, a file
    /// not yet scanned), at `path` as the entry is named: the tags the entry
    /// carries, no file facts. Pure; any thread.
    public init(track: Track, path: String) {
        self.init(path: path, modified: 0, size: 0, duration: track.duration)
        if let title = track.title { tags[.title] = [title] }
        if !track.artists.isEmpty { tags[.artist] = track.artists }
        if let album = track.album { tags[.album] = [album] }
        if !track.albumArtists.isEmpty { tags[.albumArtist] = track.albumArtists }
        if !track.genres.isEmpty { tags[.genre] = track.genres }
    }
}
