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
for ours with --jobs 1. (The library update of `serve` beside MPD's, on a
copy of the same folder, is the update part's: update/update_bench.py.)
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
        ],
        "headline": [{"label": f"library scan of {files} files vs mutagen", "ratio": ratio, "target": 1.0,
                      "lower_is_better": True}],
        "notes": [],
    }
    write_table(table, a.out)
    for row in table["rows"]:
        print("scan:", row, file=sys.stderr)


if __name__ == "__main__":
    main()
