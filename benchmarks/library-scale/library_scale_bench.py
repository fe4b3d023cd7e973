#!/usr/bin/python3
"""A library of SONGS tracks: `harmonia-play serve` against MPD on the same generated files.

The library is make_library.py's (SONGS tagged FLAC and MP3 files in album
folders, one folder of 5,000 files; made once, reused). Each server is
started in turn on it with a new database (server_bench.py's: serve with a
new SQLite file, MPD 0.23 with a private configuration), after a read of
every file (the page cache then holds them for both), scanned and rescanned
while the other is idle, and left running to the end. Measured from outside, over MPD's
protocol: (1) full scan: from just before the process starts until `status`
has no `updating_db` and `stats` counts every song; (2) RSS (VmRSS of
/proc/PID/status) idle after the scan; database size (ours: the SQLite file
and its WAL; MPD: its db_file); (3) unchanged rescan, RESCANS times, median,
timed as a client sees it (server_bench.timed_update); (4) rescan after 100
files touched (a new modification time) and 10 moved out (`stats` must then
count 10 fewer; they are moved back and rescanned, untimed); (5) each query
of QUERIES, one untimed, then RUNS timed, p50 and p95, from sending the line
until the last byte of its OK (a raw reader: no line parsing in the timing),
with both servers running and taking turns: 10 rounds of RUNS/10 runs each,
the server going first alternating;
(6) whole-library `listallinfo` and `list file`, 3 times: time, bytes, and
how the answer ended (OK, ACK, or the connection closed); (7) RSS after all
that, and peak RSS (VmHWM). Answers are compared between the servers: the
`file:` lines of song listings (as sets), the whole answer of `list`,
`count` and of `stats` without its times. Ratios ours ÷ MPD, lower is better.
Writes the results table (results_file.py).
"""
import argparse, json, os, re, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from results_file import write_table  # noqa: E402
from make_library import FIXED_MTIME, make_library, plan  # noqa: E402
import server_bench as sb  # noqa: E402

TOUCHED, DELETED = 100, 10
ANSWER_TIMEOUT = 120.0
ROUNDS = 10  # turns the servers take at each query (time_queries)


def info(*parts):
    print("library-scale:", *parts, file=sys.stderr, flush=True)


class RawClient:
    """One MPD connection; `timed(line)` sends a command and reads its whole
    answer as bytes, ending at an `OK` line, an `ACK` line or the close."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=ANSWER_TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.pending = b""
        greeting = self._answer_until(lambda buf: buf.endswith(b"\n"))
        if not greeting.startswith(b"OK MPD "):
            raise RuntimeError(f"greeting {greeting[:40]!r}")

    def _answer_until(self, done):
        buf = bytearray(self.pending)
        self.pending = b""
        while not done(buf):
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return bytes(buf) + b"<closed>"
            buf += chunk
        return bytes(buf)

    @staticmethod
    def ended(buf):
        if buf.endswith(b"\nOK\n") or buf == b"OK\n":
            return True
        if buf.endswith(b"\n"):
            last = buf.rfind(b"\n", 0, len(buf) - 1)
            return buf[last + 1:].startswith(b"ACK [")
        return False

    def command(self, line):
        self.sock.sendall(line.encode() + b"\n")
        return self._answer_until(self.ended)

    def timed(self, line):
        start = time.perf_counter()
        answer = self.command(line)
        return time.perf_counter() - start, answer

    def close(self):
        self.sock.close()


def ending(answer):
    if answer.endswith(b"<closed>"):
        return "closed"
    return "OK" if answer.endswith(b"OK\n") else "ACK"


def comparable(kind, answer):
    """What must be equal between the servers."""
    lines = answer.decode("utf-8", "replace").split("\n")
    if kind == "songs":
        return sorted(l for l in lines if l.startswith("file: "))
    if kind == "stats":
        return [l for l in lines if l.split(":")[0] in ("artists", "albums", "songs")]
    # Playtime is left out: MPD's decoders and ours measure an MP3's length differently.
    return [l for l in lines if not l.startswith("playtime: ")]


def queries(files):
    """[(label, command, kind)] chosen from the planned library."""
    album_path, _, album_tags = next(f for f in files if "ALBUMARTIST" in dict(f[2]))
    album_artist = dict(album_tags)["ALBUMARTIST"]
    folder = os.path.dirname(album_path)
    genre = dict(files[len(files) // 2][2])["GENRE"]
    term = album_artist.split()[0].lower()
    big = sum(1 for f in files if f[0].startswith("Singles/"))

    def q(text):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return [
        ("list albumartist", "list albumartist", "list"),
        ("list album group albumartist", "list album group albumartist", "list"),
        ("find albumartist (one artist)", f"find albumartist {q(album_artist)}", "songs"),
        ("search any (lowercase part of a name)", f"search any {q(term)}", "songs"),
        ("count genre", f"count genre {q(genre)}", "list"),
        ("lsinfo of an album folder", f"lsinfo {q(folder)}", "songs"),
        (f"lsinfo of the {big:,}-file folder", "lsinfo Singles", "songs"),
        ("listallinfo of one album artist's folder", f"listallinfo {q(album_artist)}", "songs"),
        ("stats", "stats", "stats"),
    ]


def warm_page_cache(folder):
    for root, _, names in os.walk(folder):
        for name in names:
            with open(os.path.join(root, name), "rb") as f:
                f.read()


def database_bytes(server):
    d = server.dir
    if isinstance(server, sb.OurServer):
        return sum(os.path.getsize(os.path.join(d, n)) for n in ("library.sqlite", "library.sqlite-wal")
                   if os.path.exists(os.path.join(d, n)))
    return os.path.getsize(os.path.join(d, "database"))


def percentile(samples, q):
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def scan_and_rescan(server, folder, songs, files, rescans):
    """Steps (1)-(4) on a server started here and left running; its results,
    with the port and the pid."""
    r = {}
    warm_page_cache(folder)
    t0, port = server.start()
    r["port"], r["pid"] = port, server.process.pid
    c = sb.connect(port, t0 + sb.START_TIMEOUT, server.process)
    sb.wait_scanned(c, songs, t0 + 3600)
    r["scan"] = time.monotonic() - t0
    r["rss_idle"] = sb.memory_kib(r["pid"])[1]
    r["db"] = database_bytes(server)
    info(server.name, f"full scan {r['scan']:.2f} s, RSS {r['rss_idle'] / 1024:.1f} MiB, database {r['db'] / 1e6:.1f} MB")
    sb.timed_update(c)  # untimed warm-up
    r["rescan"] = statistics.median(sb.timed_update(c) for _ in range(rescans))
    # Changed: 100 files touched, 10 moved aside.
    paths = [os.path.join(folder, f[0]) for f in files]
    touched = paths[7::len(paths) // TOUCHED][:TOUCHED]
    deleted = paths[3::len(paths) // DELETED][:DELETED]
    aside = folder + ".aside"
    os.makedirs(aside, exist_ok=True)
    mtime = time.time() // 1 + 10
    for p in touched:
        os.utime(p, (mtime, mtime))
    for i, p in enumerate(deleted):
        os.rename(p, os.path.join(aside, str(i)))
    try:
        r["changed"] = sb.timed_update(c)
        found = int(sb.pairs(c.command("stats"))["songs"])
        if found != songs - DELETED:
            raise RuntimeError(f"{server.name}: {found} songs after deleting {DELETED} of {songs}")
    finally:
        for i, p in enumerate(deleted):
            os.rename(os.path.join(aside, str(i)), p)
        for p in touched:
            os.utime(p, (FIXED_MTIME, FIXED_MTIME))
    sb.timed_update(c)
    if int(sb.pairs(c.command("stats"))["songs"]) != songs:
        raise RuntimeError(f"{server.name}: songs missing after the restore")
    c.sock.close()
    return r


def time_queries(servers, results, files, runs):
    """Step (5) with every server running: each query's RUNS timed runs are
    made in ROUNDS rounds, the servers taking turns within each round and the
    one going first alternating, so that a change in the machine's load
    falls on both alike (sub-millisecond queries are decided by such noise)."""
    clients = {name: RawClient(results[name]["port"]) for name in servers}
    names = list(servers)
    per_round = max(1, runs // ROUNDS)
    try:
        for label, line, kind in queries(files):
            times = {name: [] for name in names}
            answers = {}
            for name in names:
                clients[name].timed(line)  # untimed
            for turn in range(ROUNDS):
                for name in (names if turn % 2 == 0 else names[::-1]):
                    for _ in range(per_round):
                        t, answers[name] = clients[name].timed(line)
                        times[name].append(t)
            for name in names:
                answer = answers[name]
                if ending(answer) != "OK":
                    raise RuntimeError(f"{servers[name].name}: {line}: the answer ended {ending(answer)}: {answer[-200:]!r}")
                q = {"p50": percentile(times[name], 0.5), "p95": percentile(times[name], 0.95),
                     "answer": comparable(kind, answer), "bytes": len(answer)}
                results[name].setdefault("queries", {})[label] = q
                info(servers[name].name, f"{label}: p50 {1000 * q['p50']:.1f} ms, p95 {1000 * q['p95']:.1f} ms, "
                                         f"{len(answer)} bytes")
    finally:
        for client in clients.values():
            client.close()


def whole_library(server, r):
    """Steps (6) and (7)."""
    r["whole"] = {}
    for line in ("listallinfo", "list file"):
        samples = []
        for _ in range(3):
            client = RawClient(r["port"])
            t, answer = client.timed(line)
            client.close()
            samples.append((t, len(answer), ending(answer), answer.count(b"\nfile: ") + answer.startswith(b"file: ")))
        t = statistics.median(s[0] for s in samples)
        r["whole"][line] = {"seconds": t, "bytes": samples[-1][1], "ended": samples[-1][2], "files": samples[-1][3]}
        info(server.name, f"whole-library {line}: {t:.3f} s, {samples[-1][1]} bytes, ended {samples[-1][2]}, "
                          f"{samples[-1][3]} files")
    hwm, rss = sb.memory_kib(r["pid"])
    r["rss_after"], r["rss_peak"] = rss, hwm
    info(server.name, f"RSS after the queries {rss / 1024:.1f} MiB, peak {hwm / 1024:.1f} MiB")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--songs", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--rescans", type=int, default=3)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = os.path.abspath(a.work)
    folder = os.path.join(work, f"library-scale-{a.songs}")
    t = time.monotonic()
    summary = make_library(folder, a.songs)
    info(f"library {summary} ready in {time.monotonic() - t:.1f} s")
    files = plan(a.songs, 5_000, 1)
    songs = summary["songs"]
    version = re.search(r"\d+\.\d+\.\d+", subprocess.run([sb.MPD, "--version"], capture_output=True, text=True,
                                                         timeout=20).stdout)
    mpd_version = "MPD " + version.group(0) if version else "MPD"
    base = tempfile.mkdtemp(prefix="library-scale-", dir=work)
    results, servers = {}, {}
    try:
        # Scans one server at a time (the other idle: MPD has auto_update off).
        for name, make in (("mpd", lambda d: sb.PeerMPD(folder, d)),
                           ("ours", lambda d: sb.OurServer(a.ours, folder, d))):
            d = os.path.join(base, name)
            os.makedirs(d)
            servers[name] = make(d)
            results[name] = scan_and_rescan(servers[name], folder, songs, files, a.rescans)
        time_queries(servers, results, files, a.runs)
        for name, server in servers.items():
            whole_library(server, results[name])
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(base, ignore_errors=True)
    ours, mpd = results["ours"], results["mpd"]

    def row(label, x, y, unit, scale=1.0, digits=1, target=None):
        ratio = round(x / y, 2) if y else None
        met = None if target is None or ratio is None else ratio <= target
        return [f"{label} ({unit})", round(x * scale, digits), round(y * scale, digits), ratio,
                f"≤ {target}" if target is not None else "", met]
    rows = [
        row("full scan", ours["scan"], mpd["scan"], "s", digits=2, target=0.5),
        row("unchanged rescan", ours["rescan"], mpd["rescan"], "s", digits=3, target=1.0),
        row(f"rescan, {TOUCHED} touched and {DELETED} deleted", ours["changed"], mpd["changed"], "s", digits=3, target=1.0),
        row("database on disk", ours["db"], mpd["db"], "MB", scale=1e-6),
        row("RSS idle after the scan", ours["rss_idle"], mpd["rss_idle"], "MiB", scale=1 / 1024, target=1.0),
        row("RSS after the queries", ours["rss_after"], mpd["rss_after"], "MiB", scale=1 / 1024),
        row("peak RSS", ours["rss_peak"], mpd["rss_peak"], "MiB", scale=1 / 1024),
    ]
    same = {}
    for label in ours["queries"]:
        o, m = ours["queries"][label], mpd["queries"][label]
        same[label] = o["answer"] == m["answer"]
        rows.append(row(f"{label} p50", o["p50"], m["p50"], "ms", scale=1000, digits=2))
        rows.append(row(f"{label} p95", o["p95"], m["p95"], "ms", scale=1000, digits=2, target=1.0))
    notes = []
    for line in ("listallinfo", "list file"):
        o, m = ours["whole"][line], mpd["whole"][line]
        rows.append(row(f"whole-library {line}", o["seconds"], m["seconds"], "s", digits=3))
        notes.append(f"whole-library `{line}`: ours ended {o['ended']} after {o['bytes']:,} bytes ({o['files']:,} songs); "
                     f"MPD ended {m['ended']} after {m['bytes']:,} bytes ({m['files']:,} songs).")
    different = [label for label, equal in same.items() if not equal]
    notes.append("answers equal to MPD's: " + ("all" if not different else "all but " + ", ".join(different)) + ".")
    table = {
        "part": "library-scale",
        "title": f"A library of {songs:,} tracks: serve beside MPD",
        "method": __doc__.strip().split("\n\n", 1)[1].replace("\n", " ").replace("SONGS", f"{songs:,}")
                  .replace("RUNS", str(a.runs)).replace("RESCANS", str(a.rescans))
                  + f" Library: {summary['album_folders']:,} album folders, {summary['album_artists']:,} album artists."
                  + f" {mpd_version}; {os.cpu_count()} cores.",
        "columns": ["Measure", "harmonia-play serve", mpd_version, "ratio (ours ÷ MPD)", "target", "met"],
        "rows": rows,
        "headline": [{"label": f"full scan of {songs:,} files vs MPD", "ratio": rows[0][3], "target": 0.5,
                      "lower_is_better": True},
                     {"label": f"`list albumartist` p95 at {songs:,} vs MPD",
                      "ratio": rows[8][3], "target": 1.0, "lower_is_better": True}],
        "notes": notes,
    }
    write_table(table, a.out)
    for r in rows:
        info(r)
    for n in notes:
        info(n)
    if different:
        raise SystemExit(f"library-scale: answers differ from MPD's: {different}")


if __name__ == "__main__":
    main()
