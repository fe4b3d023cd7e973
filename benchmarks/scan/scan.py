#!/usr/bin/env python3
"""Library scan: `harmonia-play info --json FOLDER` against mutagen on the same files.

A folder of 1,200 small tagged files (240 each of MP3, FLAC, M4A, Opus and
WAV, 2 s of a tone, title/artist/album/track tags; the WAV files carry a
LIST/INFO chunk) is made once with the ffmpeg command line. Ours: the release
harmonia-play, `info --json FOLDER` (recursive, one JSON line per file, tags,
stream facts and duration; --jobs defaults to the core count). Peer: mutagen
(the tag library of beets and Picard, from PyPI) in one Python process that
walks the same folder and opens every file with `mutagen.File` (tags and
stream info, duration included), printing one line per file. Wall time of the
whole process, start-up included, output to /dev/null; one warm-up of each
(the page cache holds the files for both), then RUNS alternating pairs;
medians; ratio = ours ÷ mutagen (lower is better, target ≤ 1.0). The same
for ours with --jobs 1. Then the unchanged rescan beside MPD in the same
run: `harmonia-play serve` and a private MPD (server_bench.py's, on a new
database each) scan the same folder, then each is sent `update` RUNS
times (at least 5; one more first, untimed) on the unchanged folder, each timed from `update` until `status` has
no `updating_db` and `stats` shows every song (the MPD client's view, as
server_bench.py measures it); medians; ratio = ours ÷ MPD (target ≤ 1.0).
Writes the results table (results_file.py).
"""
import argparse, os, shutil, statistics, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from results_file import write_table  # noqa: E402

FORMATS = [("mp3", ["-c:a", "libmp3lame", "-b:a", "128k"]), ("flac", ["-c:a", "flac"]),
           ("m4a", ["-c:a", "aac", "-b:a", "128k"]), ("opus", ["-c:a", "libopus", "-b:a", "96k"]),
           ("wav", ["-c:a", "pcm_s16le"])]
PER_FORMAT = 240

MUTAGEN_SCAN = r"""
import os, sys, mutagen
out = sys.stdout
for root, dirs, files in os.walk(sys.argv[1]):
    dirs.sort()
    for name in sorted(files):
        path = os.path.join(root, name)
        f = mutagen.File(path)
        if f is None:
            out.write(path + " unsupported\n"); continue
        tags = dict(f.tags) if f.tags is not None else {}
        out.write("%s %.3f %d\n" % (path, f.info.length, len(tags)))
"""


def make_library(folder):
    if os.path.isdir(folder) and len(os.listdir(folder)) == len(FORMATS) * PER_FORMAT:
        return
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    seeds = folder + ".seeds"
    os.makedirs(seeds, exist_ok=True)
    for ext, codec in FORMATS:
        seed = os.path.join(seeds, "seed." + ext)
        if not os.path.exists(seed):
            rate = "48000" if ext == "opus" else "44100"
            subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi",
                            "-i", f"sine=frequency=440:sample_rate={rate}:duration=2", "-ac", "2", *codec,
                            "-metadata", "title=A Song", "-metadata", "artist=An Artist",
                            "-metadata", "album=An Album", "-metadata", "track=3", seed], check=True)
        data = open(seed, "rb").read()
        for i in range(PER_FORMAT):
            with open(os.path.join(folder, f"{ext}-{i:04d}.{ext}"), "wb") as f:
                f.write(data)


def timed(argv):
    t = time.monotonic()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.monotonic() - t


def rescans(ours, folder, work, count):
    """Unchanged-rescan times (s) of serve and of MPD on `folder`: {name: [seconds…]}."""
    import tempfile
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "server"))
    import server_bench as sb  # noqa: E402  (its servers, client and waits)
    songs = len(os.listdir(folder))
    folder, work = os.path.abspath(folder), os.path.abspath(work)  # MPD's configuration wants absolute paths
    result = {}
    for name, make in (("ours", lambda d: sb.OurServer(ours, folder, d)), ("mpd", lambda d: sb.PeerMPD(folder, d))):
        with tempfile.TemporaryDirectory(dir=work) as d:
            server = make(d)
            times = []
            try:
                t0, port = server.start()
                c = sb.connect(port, t0 + sb.START_TIMEOUT, server.process)
                try:
                    sb.wait_scanned(c, songs, t0 + sb.SCAN_TIMEOUT)
                    for i in range(count + 1):  # the first is a warm-up
                        t = time.monotonic()
                        sb.pairs(c.command("update"))
                        sb.wait_scanned(c, songs, t + sb.RESCAN_TIMEOUT)
                        if i:
                            times.append(time.monotonic() - t)
                finally:
                    c.sock.close()
            finally:
                server.stop()
            result[name] = times
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    folder = os.path.join(a.work, "scan-library")
    make_library(folder)
    files = len(os.listdir(folder))
    commands = {
        "ours": [a.ours, "info", "--json", folder],
        "ours-1": [a.ours, "info", "--json", "--jobs", "1", folder],
        "mutagen": [sys.executable, "-c", MUTAGEN_SCAN, folder],
    }
    times = {k: [] for k in commands}
    for argv in commands.values():
        timed(argv)  # warm-up
    for _ in range(a.runs):
        for name, argv in commands.items():
            times[name].append(timed(argv))
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = round(med["ours"] / med["mutagen"], 2)
    ratio1 = round(med["ours-1"] / med["mutagen"], 2)
    again = rescans(a.ours, folder, a.work, max(a.runs, 5))
    med["rescan-ours"], med["rescan-mpd"] = statistics.median(again["ours"]), statistics.median(again["mpd"])
    rescan_ratio = round(med["rescan-ours"] / med["rescan-mpd"], 2)
    print("scan: unchanged rescans (s): ours", [round(t, 4) for t in again["ours"]],
          "mpd", [round(t, 4) for t in again["mpd"]], file=sys.stderr)
    import mutagen
    cores = os.cpu_count()
    table = {
        "part": "scan",
        "title": "Library scan: info on a folder vs mutagen",
        "method": __doc__.strip().split("\n\n", 1)[1].replace("\n", " ").replace("RUNS", str(a.runs))
                  + f" mutagen {mutagen.version_string}; {cores} cores.",
        "columns": ["Program", "files", "wall time (s, median)", "ms per file", "ratio (ours ÷ mutagen)", "target", "met"],
        "rows": [
            ["harmonia-play info --json (default jobs)", files, round(med["ours"], 3),
             round(1000 * med["ours"] / files, 2), ratio, "≤ 1.0", ratio <= 1.0],
            ["harmonia-play info --json --jobs 1", files, round(med["ours-1"], 3),
             round(1000 * med["ours-1"] / files, 2), ratio1, None, None],
            ["mutagen (Python)", files, round(med["mutagen"], 3), round(1000 * med["mutagen"] / files, 2),
             None, None, None],
            ["harmonia-play serve: unchanged rescan (`update`)", files, round(med["rescan-ours"], 4),
             round(1000 * med["rescan-ours"] / files, 3), rescan_ratio, "≤ 1.0 (÷ MPD)", rescan_ratio <= 1.0],
            ["MPD 0.23: unchanged rescan (`update`)", files, round(med["rescan-mpd"], 4),
             round(1000 * med["rescan-mpd"] / files, 3), None, None, None],
        ],
        "headline": [{"label": f"library scan of {files} files vs mutagen", "ratio": ratio, "target": 1.0,
                      "lower_is_better": True},
                     {"label": f"unchanged rescan of {files} files vs MPD's update", "ratio": rescan_ratio, "target": 1.0,
                      "lower_is_better": True}],
        "notes": [],
    }
    write_table(table, a.out)
    for row in table["rows"]:
        print("scan:", row, file=sys.stderr)


if __name__ == "__main__":
    main()
