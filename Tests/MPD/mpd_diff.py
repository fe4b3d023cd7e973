#!/usr/bin/python3
"""Differential harness for the MPD protocol — specs/mpd-protocol.md §Differential harness.

Runs a scripted session of raw protocol lines against an MPD-protocol server,
records the raw answers, and compares two recordings after a narrow, written
normalisation (NORMALISATION below). A private real MPD can be started on a
small music tree built from the repository's fixtures.

Subcommands (all waits are bounded; a private mpd is killed on every exit path):

  make-music DIR                 build the music tree from Tests/Fixtures/audio (ffmpeg tags)
  serve --music DIR              start a private mpd, print its port, run until Ctrl-C / SIGTERM
  record --port P --script F     run the session F ('-' = stdin) against host:port, write
         [--host H] [--out R]    the recording R (JSON; default: print it readably)
  compare A B                    compare two recordings; exit 1 on differences
  selftest [--keep DIR]          music tree + two private mpds + the default session:
                                 the two recordings must be equal (exit 0)
  against --port P [--script F]  the session on a server at 127.0.0.1:P and on a private
          [--music DIR]          mpd (DIR, or an empty tree): exit 1 when they differ
          [--tag-order]

Session files: one raw command line per line, sent as is with "\\n". Blank lines
and lines starting with '#' are skipped. `@wait-status KEY` is a directive, not
a command: it asks `status` (unrecorded) until the answer has KEY (at most 5 s).
Two clients: `@other LINE` sends LINE on a second connection, `@reconnect` opens
a new session connection (after a change by the other), `@send LINE` sends
without reading (an idle), `@read` reads that answer. `@keys K1,K2 LINE` sends LINE and
records only the answer's lines with those keys (and its OK or ACK): `@keys state,song status`
while playing, whose elapsed time differs by the moment asked. Lines between command_list_begin /
command_list_ok_begin and command_list_end are sent together and answered once.
An `idle ...` line followed by `noidle` is sent with it, so the idle answer is
recorded against the pair; a lone `noidle` gets no answer and none is read. An answer ends at "OK", at an
"ACK ..." line, or when the server closes the connection ("<closed>").

Use /usr/bin/python3 (Debian's); nothing outside the standard library is needed.
"""
import argparse
import difflib
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "Tests", "Fixtures", "audio")
DEFAULT_SESSION = os.path.join(os.path.dirname(os.path.abspath(__file__)), "session_basic.txt")
MPD = "/usr/bin/mpd"
ANSWER_TIMEOUT = 10.0     # seconds to wait for one answer
START_TIMEOUT = 15.0      # seconds for mpd to answer after start
UPDATE_TIMEOUT = 60.0     # seconds for `update` to finish
# Every file of the tree gets this mtime, so Last-Modified is the same on every run.
FIXED_MTIME = 1_700_000_000  # 2023-11-14T22:13:20Z


# MARK: - The music tree

# (fixture, destination, tags in MPD's tag order). ffmpeg writes the tags
# (-map_metadata -1 drops the fixture's own), streams are copied.
TREE = [
    ("flac_s16_stereo_44k.flac", "Harmonia Artist/First Album/01 Opening.flac",
     [("artist", "Harmonia Artist"), ("album", "First Album"), ("album_artist", "Harmonia Artist"),
      ("title", "Opening"), ("track", "1"), ("genre", "Electronic"), ("date", "2024"),
      ("composer", "Harmonia Composer"), ("disc", "1")]),
    ("vorbis_stereo_44k.ogg", "Harmonia Artist/First Album/02 Quote's \"Song\".ogg",
     [("artist", "Harmonia Artist"), ("album", "First Album"), ("title", "Quote's \"Song\" \\ back"),
      ("track", "2"), ("genre", "Electronic"), ("date", "2024")]),
    ("mp3_cbr_stereo_44k.mp3", "Other Artist/Second Album/01 Ünïcödé.mp3",
     [("artist", "Other Artist"), ("album", "Second Album"), ("title", "Ünïcödé Title"),
      ("track", "1"), ("genre", "Jazz"), ("date", "1999"), ("comment", "a comment")]),
    ("opus_stereo_48k.opus", "Other Artist/Second Album/02 Opus.opus",
     [("artist", "Other Artist"), ("album", "Second Album"), ("title", "Opus Track"), ("track", "2")]),
    ("wav_s16_stereo_44k.wav", "loose/untagged.wav", []),
    ("flac_s24_stereo_96k.flac", "loose/hires.flac",
     [("artist", "harmonia artist"), ("title", "Hi-Res")]),
]


COVER = "Harmonia Artist/First Album/cover.jpg"
PLAYLIST = "loose/mix.m3u"


def make_music(directory):
    """Builds the tree in `directory` (created); returns it."""
    os.makedirs(directory, exist_ok=True)
    for source, destination, tags in TREE:
        target = os.path.join(directory, destination)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        command = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-i", os.path.join(FIXTURES, source),
                   "-map", "0:a", "-map_metadata", "-1", "-c", "copy"]
        for key, value in tags:
            command += ["-metadata", f"{key}={value}"]
        if target.endswith(".mp3"):
            command += ["-id3v2_version", "4"]
        command.append(target)
        subprocess.run(command, check=True, timeout=60)
        os.utime(target, (FIXED_MTIME, FIXED_MTIME))
    # A folder cover for `albumart` (12,500 bytes: two chunks at the default
    # binary limit; bit-exact, so the same bytes on every run) and a playlist
    # file, which MPD lists in its folder.
    cover = os.path.join(directory, COVER)
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=320x240",
                    "-frames:v", "1", "-fflags", "+bitexact", "-flags", "+bitexact", "-q:v", "2", cover],
                   check=True, timeout=60)
    playlist = os.path.join(directory, PLAYLIST)
    with open(playlist, "w", encoding="utf-8") as f:
        f.write("hires.flac\nuntagged.wav\n")
    for path in (cover, playlist):
        os.utime(path, (FIXED_MTIME, FIXED_MTIME))
    for root, dirs, _ in os.walk(directory):
        for d in dirs:
            os.utime(os.path.join(root, d), (FIXED_MTIME, FIXED_MTIME))
    return directory


# MARK: - A private mpd

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivateMPD:
    """A real mpd in a temp dir, bound to 127.0.0.1 on a free port, null output.
    Use as a context manager: it is killed on exit, whatever happened."""

    def __init__(self, music, workdir=None):
        self.music = os.path.abspath(music)
        self.owns_dir = workdir is None  # a temp dir of our own is removed at exit
        self.dir = workdir or tempfile.mkdtemp(prefix="mpd-diff-")
        self.process = None
        self.port = None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        if self.owns_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def config(self):
        d = self.dir
        os.makedirs(os.path.join(d, "playlists"), exist_ok=True)
        return "\n".join([
            f'music_directory "{self.music}"',
            f'playlist_directory "{d}/playlists"',
            f'db_file "{d}/database"',
            f'state_file "{d}/state"',
            f'pid_file "{d}/pid"',
            f'log_file "{d}/log"',
            'bind_to_address "127.0.0.1"',
            f'port "{self.port}"',
            'zeroconf_enabled "no"',
            'auto_update "no"',
            # A software mixer, so that volume commands work as on our server.
            'audio_output {\n    type "null"\n    name "null"\n    mixer_type "software"\n}',
            "",
        ])

    def start(self):
        for _ in range(3):  # the free port may be taken before mpd binds it
            self.port = free_port()
            path = os.path.join(self.dir, "mpd.conf")
            with open(path, "w") as f:
                f.write(self.config())
            self.process = subprocess.Popen([MPD, "--no-daemon", path], stdin=subprocess.DEVNULL,
                                            stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "stderr"), "w"),
                                            start_new_session=True)
            if self.wait_until_answering():
                self.update()
                # MPD sorts a folder's subfolders (ICU collation) when it loads
                # its database, not after an update, where they stay in the
                # file system's order: restart it so the order is the same
                # on every file system.
                self.stop()
                self.process = subprocess.Popen([MPD, "--no-daemon", path], stdin=subprocess.DEVNULL,
                                                stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.dir, "stderr"), "a"),
                                                start_new_session=True)
                if self.wait_until_answering():
                    return
            self.stop()
        raise RuntimeError(f"mpd did not start; see {self.dir}/log and {self.dir}/stderr")

    def wait_until_answering(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with Connection("127.0.0.1", self.port, timeout=1) as c:
                    return c.greeting.startswith("OK MPD ")
            except OSError:
                time.sleep(0.05)  # polling a process we do not control
        return False

    def update(self):
        """Runs `update` and waits (bounded) until `status` shows no `updating_db`."""
        with Connection("127.0.0.1", self.port) as c:
            answer = c.command("update")
            if not answer or not answer[-1] == "OK":
                raise RuntimeError(f"update failed: {answer}")
            deadline = time.monotonic() + UPDATE_TIMEOUT
            while time.monotonic() < deadline:
                status = c.command("status")
                if not any(line.startswith("updating_db:") for line in status):
                    return
                c.command("idle update")  # returns when the update job changes state
            raise RuntimeError("update did not finish in time")

    def stop(self):
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
        self.process = None


# MARK: - Talking to a server

class Connection:
    """One protocol connection; every read is bounded by `timeout`."""

    def __init__(self, host, port, timeout=ANSWER_TIMEOUT):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.sock.settimeout(timeout)
        self.buffer = b""
        self.closed = False
        self.greeting = self.read_line() or "<closed>"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()

    def send(self, line):
        self.sock.sendall(line.encode("utf-8") + b"\n")

    def fill(self):
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            raise
        except OSError:
            data = b""
        if not data:
            self.closed = True
        self.buffer += data
        return bool(data)

    def read_line(self):
        while b"\n" not in self.buffer:
            if self.closed or not self.fill():
                return None
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line.decode("utf-8", "backslashreplace")

    def read_bytes(self, n):
        while len(self.buffer) < n + 1:
            if self.closed or not self.fill():
                return None
        data, self.buffer = self.buffer[:n], self.buffer[n + 1:]  # the payload, then "\n"
        return data

    def read_answer(self):
        """Lines up to and including OK / ACK; binary payloads summarised;
        '<closed>' or '<timeout>' at the end when the answer did not finish."""
        lines = []
        try:
            while True:
                line = self.read_line()
                if line is None:
                    lines.append("<closed>")
                    return lines
                lines.append(line)
                if line == "OK" or line.startswith("ACK "):
                    return lines
                if line.startswith("binary: "):
                    size = int(line[8:])
                    data = self.read_bytes(size)
                    if data is None:
                        lines.append("<closed>")
                        return lines
                    lines.append(f"<{size} bytes sha256={hashlib.sha256(data).hexdigest()[:16]}>")
        except socket.timeout:
            lines.append("<timeout>")
            return lines

    def command(self, line):
        self.send(line)
        return self.read_answer()


def load_session(path):
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    return [line for line in text.split("\n") if line.strip() and not line.startswith("#")]


def two_clients(line, c, other, host, port):
    """The two-client directives: `@other LINE` (LINE on a second connection,
    opened at its first use, its answer recorded), `@reconnect` (the session's
    connection is closed and a new one opened: the greeting is recorded),
    `@send LINE` (sent on the session's connection, nothing read: an `idle`
    whose answer comes later) and `@read` (one answer read there). Returns
    (exchange or None when `line` is no such directive, connection, other)."""
    word, _, rest = line.partition(" ")
    if word == "@other":
        other = other or Connection(host, port)
        return {"send": [line], "answer": other.command(rest)}, c, other
    if word == "@reconnect":
        c.sock.close()
        c = Connection(host, port)
        return {"send": [line], "answer": ["OK MPD <version>" if c.greeting.startswith("OK MPD ") else c.greeting]}, c, other
    if word == "@send":
        c.send(rest)
        return {"send": [line], "answer": []}, c, other
    if word == "@read":
        return {"send": [line], "answer": c.read_answer()}, c, other
    return None, c, other


def record(host, port, lines):
    """Runs the session; returns {"greeting", "exchanges": [{"send": [...], "answer": [...]}]}."""
    exchanges = []
    other = None
    with Connection(host, port) as first:
        c = first
        i = 0
        while i < len(lines) and not c.closed:
            batch = [lines[i]]
            i += 1
            exchange, c, other = two_clients(batch[0], c, other, host, port)
            if exchange is not None:
                exchanges.append(exchange)
                continue
            if batch[0].startswith("@wait-status "):
                # A directive, not a command: asks `status` (unrecorded) until
                # its answer has the key, at most 5 s — MPD's decoder starts a
                # moment after `play`, and a seek before it is "Not seekable".
                key = batch[0].split(" ", 1)[1] + ": "
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    c.send("status")
                    if any(line.startswith(key) for line in c.read_answer()):
                        break
                    time.sleep(0.02)
                continue
            if batch[0].startswith("@keys "):
                _, keys, command = batch[0].split(" ", 2)
                wanted = tuple(key + ": " for key in keys.split(","))
                answer = c.command(command)
                kept = [line for line in answer if line.startswith(wanted) or line == "OK" or line.startswith("ACK ")]
                exchanges.append({"send": batch, "answer": kept})
                continue
            if batch[0] in ("command_list_begin", "command_list_ok_begin"):
                while i < len(lines) and batch[-1] != "command_list_end":
                    batch.append(lines[i])
                    i += 1
            elif (batch[0] == "idle" or batch[0].startswith("idle ")) and i < len(lines) and lines[i] == "noidle":
                batch.append(lines[i])  # the noidle that ends it
                i += 1
            try:
                for line in batch:
                    c.send(line)
            except OSError:
                exchanges.append({"send": batch, "answer": ["<closed>"]})
                break
            if batch == ["noidle"]:
                # Outside idle, noidle has no answer: nothing to wait for. A
                # server that answers anyway shifts the next exchange.
                exchanges.append({"send": batch, "answer": []})
                continue
            answer = c.read_answer()
            exchanges.append({"send": batch, "answer": answer})
        if other is not None:
            other.sock.close()
        if c is not first:
            c.sock.close()
        return {"greeting": "OK MPD <version>" if first.greeting.startswith("OK MPD ") else first.greeting,
                "exchanges": exchanges}


# MARK: - Normalisation and comparison

NORMALISATION = """\
Written normalisation (everything else is compared byte for byte):
  - greeting: the version number ("OK MPD <version>").
  - status: `playlist: N` -> `playlist: <version>`; `updating_db: N` -> `updating_db: <job>`;
    `mixrampdb: X` -> `mixrampdb: <mixrampdb>`.
  - stats: `uptime`, `playtime`, `db_update` values -> `<time>`.
  - status: `bitrate: N` -> `bitrate: <bitrate>` (MPD: the decoder's current rate; ours: the file's average).
  - queue ids: values of `Id:` (playlistinfo, addid, plchangesposid), `songid:` and
    `nextsongid:` are renamed by order of first appearance in the recording (<id1>, <id2>, ...).
  - `Last-Modified` is kept (the tree has fixed mtimes), but for stored playlists' (below).
  - only with --decoder-facts EXT,...: `Format:` and `duration:` of songs whose file has one of
    these extensions -> `<decoder>` (MPD's mad and Opus plugins count the encoder's padding;
    the engine reports the exact length).
  - only with --tag-order: a song's tag lines are sorted into MPD's tag-type order (MPD
    prints them in the file's order; HarmoniaMPD in tag-type order).
  - stored playlists (a `playlist: NAME` line whose NAME has no `/`: the test tree has no
    playlist file at its top): the `Last-Modified` line after it -> `<stored>` (the time of
    the run), and a run of such records is sorted by name (MPD lists its playlist folder
    in readdir order; HarmoniaMPD by name).
"""

# MPD's tag names in its tag-type order (src/tag/Names.c, 0.23).
TAG_ORDER = ["Artist", "ArtistSort", "Album", "AlbumSort", "AlbumArtist", "AlbumArtistSort", "Title",
             "Track", "Name", "Genre", "Date", "OriginalDate", "Composer", "ComposerSort", "Performer",
             "Conductor", "Work", "Movement", "MovementNumber", "Ensemble", "Location", "Grouping",
             "Comment", "Disc", "Label", "MUSICBRAINZ_ARTISTID", "MUSICBRAINZ_ALBUMID",
             "MUSICBRAINZ_ALBUMARTISTID", "MUSICBRAINZ_TRACKID", "MUSICBRAINZ_RELEASETRACKID",
             "MUSICBRAINZ_WORKID"]

VOLATILE = {
    "playlist": "<version>", "updating_db": "<job>", "mixrampdb": "<mixrampdb>",
    "uptime": "<time>", "playtime": "<time>", "db_update": "<time>",
    # MPD reports the decoder's current bit rate (0 until it has one); we
    # report the file's average.
    "bitrate": "<bitrate>",
}
ID_KEYS = ("Id", "songid", "nextsongid")
# What a song's decoder says (its format and length), masked only with
# --decoder-facts EXT,...: MPD's own MP3 (mad) and Opus plugins report 24 and
# 16 bits and lengths with the encoder's padding (2.037 s, 2.005 s) where the
# engine's FFmpeg scanner reports the exact, gapless length (2.000 s) and float.
DECODER_FACT_KEYS = ("Format", "duration")


def sort_tag_runs(lines):
    """Sorts each run of consecutive tag lines by MPD's tag-type order (stable)."""
    out, run = [], []
    for line in lines + [None]:
        key = line.partition(": ")[0] if line is not None else None
        if key in TAG_ORDER:
            run.append(line)
            continue
        out += sorted(run, key=lambda l: TAG_ORDER.index(l.partition(": ")[0]))
        run = []
        if line is not None:
            out.append(line)
    return out


def sort_stored_playlists(lines):
    """Masks a stored playlist's Last-Modified and sorts each run of stored playlist records by name."""
    out, run, i = [], [], 0
    while i <= len(lines):
        line = lines[i] if i < len(lines) else None
        if line is not None and line.startswith("playlist: ") and "/" not in line[len("playlist: "):]:
            record = [line]
            if i + 1 < len(lines) and lines[i + 1].startswith("Last-Modified: "):
                record.append("Last-Modified: <stored>")
                i += 1
            run.append(record)
            i += 1
            continue
        for record in sorted(run, key=lambda r: r[0].encode("utf-8")):
            out += record
        run = []
        if line is not None:
            out.append(line)
        i += 1
    return out


def normalise(recording, tag_order=False, decoder_facts=()):
    ids = {}
    out = []
    for exchange in recording["exchanges"]:
        answer = []
        current_file = ""
        for line in exchange["answer"]:
            key, sep, value = line.partition(": ")
            if sep and key == "file":
                current_file = value
            if sep and key in DECODER_FACT_KEYS and current_file.lower().endswith(tuple(decoder_facts)):
                line = f"{key}: <decoder>"
            elif sep and key in VOLATILE:
                line = f"{key}: {VOLATILE[key]}"
            elif sep and key in ID_KEYS:
                ids.setdefault(value, f"<id{len(ids) + 1}>")
                line = f"{key}: {ids[value]}"
            answer.append(line)
        if tag_order:
            answer = sort_tag_runs(answer)
        answer = sort_stored_playlists(answer)
        out.append({"send": exchange["send"], "answer": answer})
    return {"greeting": recording["greeting"], "exchanges": out}


def render(recording):
    lines = [f"<< {recording['greeting']}"]
    for exchange in recording["exchanges"]:
        lines += [f">> {s}" for s in exchange["send"]]
        lines += [f"<< {a}" for a in exchange["answer"]]
    return lines


def compare(a, b, name_a="A", name_b="B", tag_order=False, decoder_facts=()):
    """Prints a unified diff of the normalised recordings; returns True when equal."""
    left, right = render(normalise(a, tag_order, decoder_facts)), render(normalise(b, tag_order, decoder_facts))
    if left == right:
        print(f"equal: {len(a['exchanges'])} exchanges")
        return True
    sys.stdout.writelines(line + "\n" for line in difflib.unified_diff(left, right, name_a, name_b, lineterm="", n=3))
    return False


# MARK: - Command line

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("make-music")
    p.add_argument("dir")
    p = sub.add_parser("serve")
    p.add_argument("--music", required=True)
    p = sub.add_parser("record")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--script", default=DEFAULT_SESSION)
    p.add_argument("--out")
    p = sub.add_parser("compare")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--tag-order", action="store_true", help="sort tag lines into MPD's tag-type order")
    p = sub.add_parser("against")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--script", default=DEFAULT_SESSION)
    p.add_argument("--music")
    p.add_argument("--tag-order", action="store_true")
    p.add_argument("--decoder-facts", default="", help="mask Format and duration of songs with these extensions (mp3,opus)")
    p = sub.add_parser("selftest")
    p.add_argument("--keep", help="keep the music tree and mpd dirs here")
    p.add_argument("--script", default=DEFAULT_SESSION)
    args = parser.parse_args()
    # SIGTERM and SIGINT (ignored in a backgrounded shell job otherwise) end the
    # run through the context managers, so a private mpd is always killed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)

    if args.command == "make-music":
        make_music(args.dir)
        return 0
    if args.command == "serve":
        with PrivateMPD(args.music) as server:
            print(f"mpd on 127.0.0.1:{server.port} (dir {server.dir}); Ctrl-C stops it", flush=True)
            try:
                server.process.wait()
            except (KeyboardInterrupt, SystemExit):
                pass
        return 0
    if args.command == "record":
        recording = record(args.host, args.port, load_session(args.script))
        if args.out:
            with open(args.out, "w") as f:
                json.dump(recording, f, indent=1, ensure_ascii=False)
        else:
            print("\n".join(render(recording)))
        return 0
    if args.command == "compare":
        a, b = (json.load(open(path, encoding="utf-8")) for path in (args.a, args.b))
        print(NORMALISATION)
        return 0 if compare(a, b, args.a, args.b, args.tag_order) else 1
    if args.command == "against":
        lines = load_session(args.script)
        theirs = record("127.0.0.1", args.port, lines)
        base = tempfile.mkdtemp(prefix="mpd-diff-against-")
        try:
            music = args.music or os.path.join(base, "music")
            os.makedirs(music, exist_ok=True)
            work = os.path.join(base, "mpd")
            os.makedirs(work)
            with PrivateMPD(music, work) as server:
                reference = record("127.0.0.1", server.port, lines)
            print(NORMALISATION)
            facts = tuple("." + e.strip().lower() for e in args.decoder_facts.split(",") if e.strip())
            return 0 if compare(reference, theirs, "mpd", f"127.0.0.1:{args.port}", args.tag_order, facts) else 1
        finally:
            shutil.rmtree(base, ignore_errors=True)
    if args.command == "selftest":
        base = args.keep or tempfile.mkdtemp(prefix="mpd-diff-selftest-")
        try:
            music = make_music(os.path.join(base, "music"))
            lines = load_session(args.script)
            recordings = []
            for name in ("mpd-a", "mpd-b"):
                work = os.path.join(base, name)
                os.makedirs(work, exist_ok=True)
                with PrivateMPD(music, work) as server:
                    recordings.append(record("127.0.0.1", server.port, lines))
            print(NORMALISATION)
            # The comparison must be able to fail: a changed answer is reported.
            tampered = json.loads(json.dumps(recordings[1]))
            tampered["exchanges"][0]["answer"].insert(0, "tampered: yes")
            with open(os.devnull, "w") as sink:
                stdout, sys.stdout = sys.stdout, sink
                try:
                    caught = not compare(recordings[0], tampered)
                finally:
                    sys.stdout = stdout
            if not caught:
                print("selftest: a tampered recording compared equal")
                return 1
            return 0 if compare(recordings[0], recordings[1], "mpd-a", "mpd-b") else 1
        finally:
            if not args.keep:
                shutil.rmtree(base, ignore_errors=True)
    return 2


if __name__ == "__main__":
    sys.exit(main())
