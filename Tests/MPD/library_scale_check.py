#!/usr/bin/python3
"""A generated library of SONGS files (default 20,000): `harmonia-play serve` against MPD 0.23 — specs/library.md §Large libraries.

`library_scale_check.py --ours BINARY --work DIR [--songs N]` (Debian's
python3; mutagen from python3-mutagen checks the generated tags):

1. The library: benchmarks/library-scale/make_library.py's (FLAC and MP3 in
   album folders, one folder of 5,000 files), made once in DIR and reused.
2. A scan killed with SIGKILL: serve starts on a new database and scans; when
   `stats` counts some songs and `status` still says updating_db, it is killed;
   `PRAGMA integrity_check` (sqlite3) says ok; a new serve on the same
   database opens and completes the scan.
3. The same answers as a private MPD scanning the same files: `stats`
   (artists, albums, songs), `list albumartist`, `list album group
   albumartist`, `list genre`, `count group genre`, `count genre G`, `find
   albumartist A` and `search any T` for several values (the `file:` lines as
   sets), `lsinfo` of the big folder (likewise).
4. Streaming: a command list of 4 whole-library `listallinfo` (far more than
   MPD's 8 MiB output limit) read by a slow reader (4 KiB at a time, a pause
   of 1 ms every 64 reads): it ends in OK, past twice MPD's limit, while another
   client's queries are answered mid-reply, and the server's peak RSS
   (VmHWM) grows by less than half the reply (the largest folder is read whole). A client that
   disconnects mid-reply: the server's threads come back to their number
   before it (awaited, bounded), and it still answers.
Exit 0 when all hold; each failure is one line on stderr, exit 1.
"""
import argparse, os, shutil, signal, socket, sqlite3, subprocess, sys, tempfile, time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "benchmarks", "library-scale"))
sys.path.insert(0, HERE)
from make_library import make_library, plan  # noqa: E402
from mpd_diff import Connection, PrivateMPD  # noqa: E402

TIMEOUT = 300.0  # s, the bound of every wait (a hang guard, not a measure)
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("library-scale-check: FAIL:", message, file=sys.stderr, flush=True)
    return condition


def wait_for(condition, what, bound=TIMEOUT):
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"gave up waiting for {what}")
        time.sleep(0.01)


def fields(answer):
    out = {}
    for line in answer[:-1]:
        k, _, v = line.partition(": ")
        out[k] = v
    return out


class Serve:
    def __init__(self, binary, music, folder):
        self.dir = folder
        self.log = os.path.join(folder, f"stderr-{len([n for n in os.listdir(folder) if n.startswith('stderr-')])}")
        self.stderr = open(self.log, "w")
        self.process = subprocess.Popen(
            [binary, "serve", "--music-dir", music, "--database", os.path.join(folder, "library.sqlite"),
             "--store", os.path.join(folder, "offline"), "--state", "off", "--output", "null",
             "--mpd-listen", "127.0.0.1:0", "--listen", "off"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.stderr, start_new_session=True)
        self.port = None

        def announced():
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited ({self.process.returncode}); see {self.log}")
            for line in open(self.log, errors="replace"):
                if "MPD protocol on 127.0.0.1:" in line:
                    self.port = int(line.rsplit(":", 1)[1].split()[0])
                    return True
            return False
        wait_for(announced, "serve's port", 30)

    def connect(self):
        return Connection("127.0.0.1", self.port, timeout=60)

    def stop(self, signo=signal.SIGTERM):
        if self.process.poll() is None:
            os.killpg(self.process.pid, signo)
            self.process.wait(timeout=30)
        self.stderr.close()

    def status_file(self, key):
        with open(f"/proc/{self.process.pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])

    def threads(self):
        return len(os.listdir(f"/proc/{self.process.pid}/task"))


def wait_scanned(c, songs):
    def done():
        status = fields(c.command("status"))
        return "updating_db" not in status and fields(c.command("stats")).get("songs") == str(songs)
    wait_for(done, f"{songs} songs scanned")


def killed_scan(binary, music, work, songs):
    """Serve killed mid-scan, the database checked, a new serve completes it; returns the running serve."""
    folder = os.path.join(work, "ours")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    first = Serve(binary, music, folder)
    c = first.connect()

    def some_stored():
        return int(fields(c.command("stats")).get("songs", "0")) >= 1000
    wait_for(some_stored, "the first songs stored")
    stored = int(fields(c.command("stats"))["songs"])
    check("updating_db" in fields(c.command("status")), f"the scan ended before it could be killed ({stored} songs)")
    first.stop(signal.SIGKILL)
    check(first.process.returncode == -signal.SIGKILL, f"serve exited {first.process.returncode}, not by SIGKILL")
    db = sqlite3.connect(os.path.join(folder, "library.sqlite"))
    check(db.execute("PRAGMA integrity_check").fetchone()[0] == "ok", "the killed scan's database fails integrity_check")
    db.close()
    second = Serve(binary, music, folder)
    c = second.connect()
    wait_scanned(c, songs)
    c.sock.close()
    return second


def song_files(answer):
    return sorted(line for line in answer if line.startswith("file: "))


def compare(ours, mpd, files):
    o, m = ours.connect(), Connection("127.0.0.1", mpd.port, timeout=60)
    so, sm = fields(o.command("stats")), fields(m.command("stats"))
    for key in ("artists", "albums", "songs"):
        check(so.get(key) == sm.get(key), f"stats {key}: ours {so.get(key)}, MPD {sm.get(key)}")
    whole = ["list albumartist", "list album group albumartist", "list genre", "count group genre", "count"]
    album_artists = sorted({dict(t)["ALBUMARTIST"] for _, _, t in files if "ALBUMARTIST" in dict(t)})
    several = [dict(t)["ARTIST"] for _, _, t in files if [k for k, _ in t].count("ARTIST") > 1][:3]
    genres = sorted({dict(t)["GENRE"] for _, _, t in files})

    def q(text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    for line in whole + [f"count genre {q(g)}" for g in genres[:5]]:
        # Playtime is left out: MPD's decoders and ours measure an MP3's length differently.
        a, b = ([x for x in c.command(line) if not x.startswith("playtime: ")] for c in (o, m))
        check(a == b, f"{line}: ours {len(a)} lines, MPD {len(b)} (first difference: "
                      f"{next((x, y) for x, y in zip(a + [''], b + ['']) if x != y) if a != b else ''})")
    songs = ([f"find albumartist {q(a)}" for a in album_artists[::max(1, len(album_artists) // 6)]]
             + [f"find artist {q(a)}" for a in several]
             + [f"search any {q(a.split()[0].lower())}" for a in album_artists[:3]]
             + ["lsinfo Singles", 'find "(genre == \\"Jazz\\")"', "search title ocean"])
    for line in songs:
        a, b = song_files(o.command(line)), song_files(m.command(line))
        check(a == b and len(a) > 0, f"{line}: ours {len(a)} songs, MPD {len(b)}")
    o.sock.close()
    m.sock.close()


def read_answer_bytes(sock, chunk, pace_every=0, on_progress=None):
    """Reads until a final OK/ACK line; (bytes read, last line)."""
    tail, total, reads = b"", 0, 0
    while True:
        data = sock.recv(chunk)
        if not data:
            return total, "<closed>"
        total += len(data)
        reads += 1
        tail = (tail + data)[-4096:]
        if on_progress:
            on_progress(total)
        if tail.endswith(b"\nOK\n"):
            return total, "OK"
        if tail.endswith(b"\n") and tail[tail.rfind(b"\n", 0, len(tail) - 1) + 1:].startswith(b"ACK ["):
            return total, tail.rstrip(b"\n").rsplit(b"\n", 1)[-1].decode(errors="replace")
        if pace_every and reads % pace_every == 0:
            time.sleep(0.001)  # the pace of a slow reader, not a wait for a condition


def streaming(ours, songs, files):
    warm = ours.connect()
    answer = warm.command("listallinfo")
    check(answer[-1] == "OK" and len(song_files(answer)) == songs,
          f"whole-library listallinfo: ended {answer[-1]!r} with {len(song_files(answer))} of {songs} songs")
    answer = warm.command("list file")
    check(answer[-1] == "OK" and len(song_files(answer)) == songs,
          f"whole-library list file: ended {answer[-1]!r} with {len(song_files(answer))} of {songs} songs")
    warm.sock.close()
    peak_before = ours.status_file("VmHWM")
    threads_before = ours.threads()

    slow = socket.create_connection(("127.0.0.1", ours.port), timeout=60)
    slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
    slow.recv(64)
    slow.sendall(b"command_list_begin\n" + b"listallinfo\n" * 4 + b"command_list_end\n")
    asked = []

    def midway(total):
        if not asked and total > 2_000_000:
            other = ours.connect()
            album_artist = next(dict(t)["ALBUMARTIST"] for _, _, t in files if "ALBUMARTIST" in dict(t))
            found = other.command(f'find albumartist "{album_artist}"')
            stats = other.command("stats")
            asked.append(found[-1] == "OK" and len(song_files(found)) > 0 and stats[-1] == "OK")
            other.sock.close()
    total, last = read_answer_bytes(slow, 4096, pace_every=64, on_progress=midway)
    slow.close()
    grown = (ours.status_file("VmHWM") - peak_before) * 1024
    check(last == "OK", f"4 whole-library listallinfo in a command list ended {last!r} after {total:,} bytes")
    check(total > 2 * 8 * 1024 * 1024, f"the streamed answer is only {total:,} bytes: no test of the bound")
    check(total / 2 > 8 * 1024 * 1024, f"the streamed answer ({total:,} bytes) is too small to show the RSS bound")
    check(asked == [True], "another client's find and stats were not answered while a slow reader was mid-reply")
    check(grown < total / 2, f"peak RSS grew {grown / 1048576:.1f} MiB for a {total / 1048576:.1f} MiB answer")

    gone = socket.create_connection(("127.0.0.1", ours.port), timeout=60)
    gone.recv(64)
    gone.sendall(b"command_list_begin\n" + b"listallinfo\n" * 4 + b"command_list_end\n")
    read = 0
    while read < 1_000_000:
        read += len(gone.recv(65536))
    gone.close()
    wait_for(lambda: ours.threads() <= threads_before, "the disconnected client's threads to end", 60)
    c = ours.connect()
    check(c.command("ping") == ["OK"], "serve does not answer after a client left mid-reply")
    c.sock.close()
    return total, grown


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--songs", type=int, default=20_000)
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    music = os.path.join(work, f"library-{a.songs}")
    t = time.monotonic()
    summary = make_library(music, a.songs)
    files = plan(a.songs, 5_000, 1)
    print(f"library-scale-check: library {summary} in {time.monotonic() - t:.1f} s", file=sys.stderr, flush=True)
    mpd_dir = tempfile.mkdtemp(prefix="mpd-", dir=work)
    ours = None
    try:
        with PrivateMPD(music, mpd_dir) as mpd:
            # The harness's MPD updates, then restarts on its saved database;
            # a database saved before the update's end is completed here.
            m = Connection("127.0.0.1", mpd.port, timeout=60)
            if fields(m.command("stats")).get("songs") != str(summary["songs"]):
                mpd.update()
            check(fields(m.command("stats")).get("songs") == str(summary["songs"]), "MPD did not scan every file")
            m.sock.close()
            ours = killed_scan(a.ours, music, work, summary["songs"])
            compare(ours, mpd, files)
        total, grown = streaming(ours, summary["songs"], files)
        print(f"library-scale-check: streamed {total:,} bytes to a slow reader; peak RSS grew {grown / 1048576:.1f} MiB",
              file=sys.stderr)
    finally:
        if ours:
            ours.stop()
        shutil.rmtree(mpd_dir, ignore_errors=True)
        shutil.rmtree(os.path.join(work, "ours"), ignore_errors=True)
    if failures:
        sys.exit(1)
    print(f"library-scale-check: all checks passed ({summary['songs']:,} songs)")


if __name__ == "__main__":
    main()
