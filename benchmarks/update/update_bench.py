#!/usr/bin/env python3
"""Library update as an MPD client sees it: `harmonia-play serve` against MPD on the same folder.

The folder is a copy of scan.py's 1,200 small tagged files in one folder (240
each of MP3, FLAC, M4A, Opus and WAV; made once with ffmpeg). Both servers
run at once on that copy, each on a new database (server_bench.py's: serve
with a new SQLite file, MPD 0.23 with a private configuration), and scan it
first. An update is timed as a client sees it (as `mpc update --wait` waits):
from sending `update` until the client knows the job is over — it waits in
`idle database update`, asks `status` after each answer, and stops at the
first `status` without `updating_db` (one round trip after the idle event
that ends the job; idle events pending from before are taken first,
untimed). (1) Unchanged: RUNS updates of the unchanged folder. (2) Changed: RUNS times, 10 files given a
new modification time and 2 files moved out of the folder, then `update`
(timed; `stats` must then count 2 songs fewer); then the 2 files moved back
and `update` again, untimed, before the next. Each timed update runs on
both servers on the same folder, one after the other, the order alternating;
one untimed warm-up of each first. Medians; ratios ours ÷ MPD (lower is
better, target ≤ 1.0). Writes the results table (results_file.py).
"""
import argparse, os, re, shutil, signal, statistics, subprocess, sys, tempfile

sys.dont_write_bytecode = True  # no __pycache__ next to the modules imported below
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "scan"))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from results_file import write_table  # noqa: E402
from scan import make_library  # noqa: E402  (the scan part's folder)
import server_bench as sb  # noqa: E402  (its servers, client and waits)

TOUCHED = 10            # files given a new modification time in a changed update
DELETED = 2             # files moved out in a changed update


def info(*parts):
    print("update:", *parts, file=sys.stderr, flush=True)


def songs_in_library(c):
    return int(sb.pairs(c.command("stats")).get("songs", "0"))


class Folder:
    """The copy both servers scan, and the change of a changed update."""

    def __init__(self, source, path):
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(source, path)  # copy2: the files keep their times
        self.path = path
        self.aside = path + ".aside"
        shutil.rmtree(self.aside, ignore_errors=True)
        os.makedirs(self.aside)
        names = sorted(os.listdir(path))
        self.songs = len(names)
        # Spread over the folder (every format), the same files every time,
        # none both touched and deleted.
        self.touched = names[::len(names) // TOUCHED][:TOUCHED]
        self.deleted = [names[len(names) * (2 * i + 1) // (2 * DELETED) + 1] for i in range(DELETED)]
        self.stamp = int(os.stat(os.path.join(path, names[0])).st_mtime)

    def change(self, run):
        """New whole-second times for the touched files (different at every
        run: both servers compare seconds), the deleted files moved aside."""
        mtime = self.stamp + 10 + run
        for name in self.touched:
            os.utime(os.path.join(self.path, name), (mtime, mtime))
        for name in self.deleted:
            os.rename(os.path.join(self.path, name), os.path.join(self.aside, name))

    def restore(self):
        for name in self.deleted:
            os.rename(os.path.join(self.aside, name), os.path.join(self.path, name))

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)
        shutil.rmtree(self.aside, ignore_errors=True)


def measure(servers, folder, runs):
    """{name: {"unchanged": [s…], "changed": [s…]}} for `servers` ({name: connection})."""
    names = list(servers)
    times = {name: {"unchanged": [], "changed": []} for name in names}

    def each(run, body):
        for name in (names if run % 2 == 0 else names[::-1]):
            body(name, servers[name])

    def expect_songs(name, c, count):
        found = songs_in_library(c)
        if found != count:
            raise RuntimeError(f"{name}: stats shows {found} songs, the folder has {count}")

    for name, c in servers.items():
        sb.timed_update(c)  # warm-up
    for run in range(runs):
        each(run, lambda name, c: times[name]["unchanged"].append(sb.timed_update(c)))
    for name, c in servers.items():
        expect_songs(name, c, folder.songs)
    for run in range(runs):
        folder.change(run)
        each(run, lambda name, c: times[name]["changed"].append(sb.timed_update(c)))
        each(run, lambda name, c: expect_songs(name, c, folder.songs - DELETED))
        folder.restore()
        each(run, lambda name, c: (sb.timed_update(c), expect_songs(name, c, folder.songs)))
    return times


def median_ms(samples):
    return round(1000 * statistics.median(samples), 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=15)
    a = ap.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # ends through the finally blocks
    work = os.path.abspath(a.work)  # MPD's configuration wants absolute paths
    source = os.path.join(work, "scan-library")
    make_library(source)
    folder = Folder(source, os.path.join(work, "update-library"))
    version = re.search(r"\d+\.\d+\.\d+", subprocess.run([sb.MPD, "--version"], capture_output=True, text=True,
                                                         timeout=20).stdout)
    mpd_version = "MPD " + version.group(0) if version else "MPD"
    base = tempfile.mkdtemp(prefix="update-", dir=work)
    servers, connections = {}, {}
    try:
        for name, make in (("ours", lambda d: sb.OurServer(a.ours, folder.path, d)),
                           ("mpd", lambda d: sb.PeerMPD(folder.path, d))):
            d = os.path.join(base, name)
            os.makedirs(d)
            servers[name] = make(d)
            t0, port = servers[name].start()
            c = sb.connect(port, t0 + sb.START_TIMEOUT, servers[name].process)
            connections[name] = c
            sb.wait_scanned(c, folder.songs, t0 + sb.SCAN_TIMEOUT)
        times = measure(connections, folder, a.runs)
    finally:
        for c in connections.values():
            c.sock.close()
        for server in servers.values():
            server.stop()
        shutil.rmtree(base, ignore_errors=True)
        folder.remove()
    for name, kinds in times.items():
        for kind, samples in kinds.items():
            info(f"{name} {kind} (ms):", ", ".join(f"{1000 * t:.1f}" for t in samples))
    med = {name: {kind: median_ms(samples) for kind, samples in kinds.items()} for name, kinds in times.items()}
    ratio = {kind: round(med["ours"][kind] / med["mpd"][kind], 2) for kind in ("unchanged", "changed")}
    rows = [
        [f"unchanged folder of {folder.songs:,} files (ms)", med["ours"]["unchanged"], med["mpd"]["unchanged"],
         ratio["unchanged"], "≤ 1.0", ratio["unchanged"] <= 1.0],
        [f"{TOUCHED} files touched, {DELETED} deleted (ms)", med["ours"]["changed"], med["mpd"]["changed"],
         ratio["changed"], "≤ 1.0", ratio["changed"] <= 1.0],
    ]
    table = {
        "part": "update",
        "title": "Library update as an MPD client sees it",
        "method": __doc__.strip().split("\n\n", 1)[1].replace("\n", " ").replace("RUNS", str(a.runs))
                  + f" {mpd_version}; {os.cpu_count()} cores.",
        "columns": ["Update", "harmonia-play serve", mpd_version, "ratio (ours ÷ MPD)", "target", "met"],
        "rows": rows,
        "headline": [{"label": f"unchanged update of {folder.songs:,} files vs MPD", "ratio": ratio["unchanged"],
                      "target": 1.0, "lower_is_better": True},
                     {"label": f"update after {TOUCHED} touched, {DELETED} deleted vs MPD", "ratio": ratio["changed"],
                      "target": 1.0, "lower_is_better": True}],
        "notes": [],
    }
    write_table(table, a.out)
    for row in rows:
        info(row)


if __name__ == "__main__":
    main()
