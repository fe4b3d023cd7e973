#!/usr/bin/python3
"""Full scan alone, several binaries of ours against MPD, alternating, in one run.

`scan_time.py MUSIC SONGS ROUNDS NAME=BINARY...`: for each of ROUNDS rounds,
MPD and then each NAME's `harmonia-play serve` scan MUSIC (a make_library.py
folder of SONGS files) from an empty database, timed as library_scale_bench.py
times its full scan (from just before the process starts until `status` has
no `updating_db` and `stats` counts SONGS songs; the page cache warmed first).
Prints each time, then each server's median and its ratio to MPD's. For
before/after comparisons of the scan, where the whole benchmark is too long.
"""
import os, shutil, statistics, sys, tempfile, time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "server"))
import server_bench as sb  # noqa: E402
from library_scale_bench import warm_page_cache  # noqa: E402


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__.split("\n\n")[1])
    music, songs, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    servers = [("mpd", None)] + [tuple(a.split("=", 1)) for a in sys.argv[4:]]
    times = {name: [] for name, _ in servers}
    cpu = {name: [] for name, _ in servers}
    for r in range(rounds):
        for name, binary in servers:
            d = tempfile.mkdtemp(prefix="scan-time-")
            server = sb.PeerMPD(music, d) if binary is None else sb.OurServer(binary, music, d)
            warm_page_cache(music)
            try:
                t0, port = server.start()
                c = sb.connect(port, t0 + sb.START_TIMEOUT, server.process)
                sb.wait_scanned(c, songs, t0 + 3600)
                times[name].append(time.monotonic() - t0)
                cpu[name].append(cpu_seconds(server.process.pid))
            finally:
                server.stop()
                shutil.rmtree(d, ignore_errors=True)
            print(f"round {r + 1} {name}: {times[name][-1]:.2f} s, CPU {cpu[name][-1]:.2f} s", flush=True)
    mpd, mpd_cpu = statistics.median(times["mpd"]), statistics.median(cpu["mpd"])
    for name, ts in times.items():
        m, c = statistics.median(ts), statistics.median(cpu[name])
        print(f"{name}: median {m:.2f} s ({' '.join(f'{x:.2f}' for x in ts)}), {m / mpd:.2f}x MPD; "
              f"CPU {c:.2f} s, {c / mpd_cpu:.2f}x MPD's")


if __name__ == "__main__":
    main()
