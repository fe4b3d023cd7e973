#!/usr/bin/env python3
"""Footprint while playing a 10-minute FLAC in real time through PulseAudio.

For each round: harmonia-play, then mpv, then MPD (a fresh private daemon per
run, driven by mpc). Each program plays for exactly SECONDS; at the end of the
window its CPU time (utime+stime of all its threads, /proc/PID/stat) and peak
RSS (VmHWM, /proc/PID/status) are read, then it is stopped. For ours and mpv
the window starts when the process is started (start-up included); for MPD it
starts at `mpc play` (the daemon is already running, its database updated and
the file queued), and its CPU time is the difference of two samples.
Writes the contract's JSON (benchmarks/results/footprint.json).
"""
import argparse, os, shutil, signal, statistics, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from results_file import write_table  # noqa: E402 (benchmarks/, one level up)

TICK = os.sysconf("SC_CLK_TCK")
STEADY = 5.0  # the steady-state column counts CPU time from this second of the window on


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state); utime = field 14, stime = field 15
    return (int(fields[11]) + int(fields[12])) / TICK


def thread_ns(pid):
    """On-CPU nanoseconds of each live thread (/proc/PID/task/TID/schedstat): precise,
    but a thread that has exited is no longer counted."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                out[tid] = int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return out


def steady_seconds(before, after):
    return sum(ns - before.get(tid, 0) for tid, ns in after.items()) / 1e9


def vm_hwm_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def server_pid():
    s = os.environ.get("PULSE_SERVER", "")
    if s.startswith("unix:") and s.endswith("/native"):
        try:
            with open(os.path.join(os.path.dirname(s[5:]), "runtime", "pid")) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError):
            return None
    return None


def safe_cpu(pid):
    try:
        return cpu_seconds(pid) if pid else None
    except OSError:
        return None


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_process(argv, seconds, label):
    """Start argv, let it play `seconds`, sample, stop. Returns (cpu s, rss MiB, server cpu s)."""
    spid = server_pid()
    s0 = safe_cpu(spid)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    t0 = time.monotonic()
    try:
        time.sleep(max(0.0, t0 + STEADY - time.monotonic()))
        try:
            c5 = thread_ns(proc.pid)
        except OSError:
            c5 = None
        time.sleep(max(0.0, t0 + seconds - time.monotonic()))
        if proc.poll() is not None or c5 is None:
            err = proc.stderr.read().decode(errors="replace").strip()[-300:]
            raise RuntimeError(f"{label} exited early ({proc.returncode}): {err}")
        c20 = thread_ns(proc.pid)
        cpu, rss = cpu_seconds(proc.pid), vm_hwm_mib(proc.pid)
        s1 = safe_cpu(spid)
    finally:
        stop(proc)
    return cpu, rss, (s1 - s0) if s0 is not None and s1 is not None else None, steady_seconds(c5, c20)


MPD_CONF = """music_directory "{d}/music"
db_file "{d}/database"
log_file "{d}/mpd.log"
bind_to_address "{d}/socket"
auto_update "no"
zeroconf_enabled "no"
audio_output {{
    type "pulse"
    name "bench"
    server "{server}"
}}
"""


def run_mpd(flac, seconds, work):
    d = os.path.abspath(os.path.join(work, "footprint-mpd"))
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "music"))
    name = os.path.basename(flac)
    target = os.path.join(d, "music", name)
    try:
        os.link(os.path.abspath(flac), target)
    except OSError:
        shutil.copyfile(flac, target)
    server = os.environ.get("PULSE_SERVER", "")
    with open(os.path.join(d, "mpd.conf"), "w") as f:
        f.write(MPD_CONF.format(d=d, server=server))
    env = dict(os.environ, MPD_HOST=os.path.join(d, "socket"))
    mpc = lambda *a: subprocess.run(["mpc", "-q", *a], env=env, check=True, timeout=30,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    proc = subprocess.Popen(["mpd", "--no-daemon", os.path.join(d, "mpd.conf")],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        for _ in range(100):
            if os.path.exists(os.path.join(d, "socket")):
                break
            if proc.poll() is not None:
                raise RuntimeError("mpd exited: " + proc.stderr.read().decode(errors="replace")[-300:])
            time.sleep(0.1)
        mpc("update", "--wait")
        mpc("clear")
        mpc("add", name)
        spid = server_pid()
        s0, c0 = safe_cpu(spid), cpu_seconds(proc.pid)
        t0 = time.monotonic()
        mpc("play")
        time.sleep(max(0.0, t0 + STEADY - time.monotonic()))
        c5 = thread_ns(proc.pid)
        time.sleep(max(0.0, t0 + seconds - time.monotonic()))
        if proc.poll() is not None:
            raise RuntimeError(f"mpd exited early ({proc.returncode})")
        c20 = thread_ns(proc.pid)
        cpu, rss = cpu_seconds(proc.pid) - c0, vm_hwm_mib(proc.pid)
        s1 = safe_cpu(spid)
        state = subprocess.run(["mpc", "status"], env=env, capture_output=True, text=True, timeout=10).stdout
        if "[playing]" not in state:
            raise RuntimeError("mpd is not playing: " + state.strip()[-200:])
    finally:
        stop(proc)
    return cpu, rss, (s1 - s0) if s0 is not None and s1 is not None else None, steady_seconds(c5, c20)


def med(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", required=True)
    ap.add_argument("--file", required=True)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default="benchmarks/.work")
    ap.add_argument("--out", default="benchmarks/results/footprint.json")
    a = ap.parse_args()

    programs = {
        "ours": lambda: run_process([a.ours, a.file, "--quiet"], a.seconds, "harmonia-play"),
        "mpv": lambda: run_process(["mpv", "--no-config", "--no-video", "--ao=pulse", "--no-terminal",
                                    a.file], a.seconds, "mpv"),
        "MPD": lambda: run_mpd(a.file, a.seconds, a.work),
        # Not in the ratios: what the buffer size does (50 ms was the default before 0.1.1).
        "ours-50": lambda: run_process([a.ours, a.file, "--quiet", "--latency", "50"], a.seconds,
                                       "harmonia-play --latency 50"),
    }
    runs = {k: [] for k in programs}
    errors = {}
    for r in range(a.rounds):
        for name, fn in programs.items():
            if name in errors:
                continue
            try:
                cpu, rss, srv, steady = fn()
                runs[name].append({"cpu_s": round(cpu, 3), "rss_mib": round(rss, 2), "steady_cpu_s": round(steady, 3),
                                   "server_cpu_s": None if srv is None else round(srv, 3)})
                print(f"footprint: round {r + 1} {name}: CPU {cpu:.2f} s, peak RSS {rss:.1f} MiB"
                      + ("" if srv is None else f", server CPU {srv:.2f} s"), file=sys.stderr)
            except Exception as e:  # a peer that cannot run is reported, the others go on
                errors[name] = str(e)
                print(f"footprint: {name}: {e}", file=sys.stderr)
    if not runs["ours"]:
        raise SystemExit(f"footprint: harmonia-play did not run: {errors.get('ours')}")

    def stats(name):
        xs = runs[name]
        srv = [x["server_cpu_s"] for x in xs if x["server_cpu_s"] is not None]
        return (med([x["cpu_s"] for x in xs]), med([x["rss_mib"] for x in xs]),
                med(srv) if srv else None, med([x["steady_cpu_s"] for x in xs]))

    oc, orss, osrv, ost = stats("ours")
    rows, headline, notes = [], [], []
    rows.append(["harmonia-play", round(oc, 2), round(100 * oc / a.seconds, 2), round(ost, 3), round(orss, 1),
                 None if osrv is None else round(osrv, 2), None, None, None])
    if runs["ours-50"]:
        lc, lrss, lsrv, lst = stats("ours-50")
        rows.append(["harmonia-play --latency 50", round(lc, 2), round(100 * lc / a.seconds, 2), round(lst, 3),
                     round(lrss, 1), None if lsrv is None else round(lsrv, 2), None, None, None])
        notes.append(f"With a 50 ms target latency instead of the default 500 ms, harmonia-play used "
                     f"{lc:.2f} s of CPU ({lst:.3f} s in steady playback) and the server "
                     + ("?" if lsrv is None else f"{lsrv:.2f}") + " s, against "
                     f"{oc:.2f} s ({ost:.3f} s) and " + ("?" if osrv is None else f"{osrv:.2f}")
                     + " s at 500 ms"
                     + (": the smaller buffer means more wake-ups on both sides. "
                        if lc > oc or (lsrv is not None and osrv is not None and lsrv > osrv)
                        else ": the buffer size is not what makes the difference. ")
                     + "This row is not in the ratios (they compare the default settings).")
    for peer in ("mpv", "MPD"):
        if not runs[peer]:
            notes.append(f"{peer} not measured: {errors.get(peer, 'no runs')}")
            continue
        pc, prss, psrv, pst = stats(peer)
        cr, rr = round(oc / pc, 2), round(orss / prss, 2)
        sr = round(ost / pst, 2) if pst > 0 else None
        rows.append([peer, round(pc, 2), round(100 * pc / a.seconds, 2), round(pst, 3), round(prss, 1),
                     None if psrv is None else round(psrv, 2), cr, sr, rr])
        headline.append({"label": f"CPU time vs {peer} ({a.seconds:g} s of FLAC)", "ratio": cr, "target": None,
                         "lower_is_better": True})
        if sr is not None:
            headline.append({"label": f"CPU time, steady playback vs {peer}", "ratio": sr, "target": None,
                             "lower_is_better": True})
        headline.append({"label": f"peak RSS vs {peer}", "ratio": rr, "target": None,
                         "lower_is_better": True})
        if osrv is not None and psrv is not None and pc + psrv > 0:
            both = round((oc + osrv) / (pc + psrv), 2)
            headline.append({"label": f"CPU time, player + PulseAudio server vs {peer} and the server", "ratio": both,
                             "target": 1.0, "lower_is_better": True})
            notes.append(f"Player and server together: harmonia-play {oc:.2f} + {osrv:.2f} s, {peer} "
                         f"{pc:.2f} + {psrv:.2f} s: {both:.2f}x.")
        if osrv is not None and psrv and osrv > 1.5 * psrv:
            notes.append(f"The PulseAudio server spent more CPU time for harmonia-play than for {peer} "
                         f"({osrv:.2f} s vs {psrv:.2f} s in the window).")
    n = len(runs["ours"])
    method = (
        f"A 10-minute stereo 44.1 kHz 16-bit FLAC (generated with ffmpeg) played in real time through "
        f"the private PulseAudio server (a float32 48 kHz null sink) for exactly {a.seconds:g} s by each "
        f"program, in rounds of harmonia-play (release build, `--quiet`), mpv (`--no-config --no-video "
        f"--ao=pulse`), MPD (a fresh private daemon per run, pulse output, driven by mpc) and "
        f"harmonia-play `--latency 50` (for the notes); {n} rounds, "
        f"figures are medians. CPU time is user+system time of all the process's threads from "
        f"/proc/PID/stat at the end of the window ({1000 / TICK:g} ms resolution); for harmonia-play and "
        f"mpv the window starts at process start (start-up included), for MPD at `mpc play` (the daemon "
        f"already running with the file queued: its start-up and database scan are not counted; MPD "
        f"decodes ahead into its 4 MiB audio buffer as play starts, so its decode work comes early in "
        f"the window). "
        f"Because of that difference the table also gives the CPU time from second {STEADY:g} to the end of "
        f"the window (steady playback, start-up excluded for every program; on-CPU nanoseconds of each "
        f"thread from /proc/PID/task/TID/schedstat, precise where the tick-based figure is coarse) and its ratio. Peak "
        f"RSS is VmHWM from /proc/PID/status at the end of the window. Ratios are ours ÷ peer "
        f"(lower is better), from the medians of the same rounds. No target was set for footprint; "
        f"the server column is the PulseAudio daemon's CPU time in the same window (work done for "
        f"the client: resampling to 48 kHz, mixing), not counted in the ratios.")
    out = {"part": "footprint", "title": "Footprint: 20 s of a 10-minute FLAC in real time",
           "method": method,
           "columns": ["Program", "CPU time (s)", "CPU (% of one core)", f"CPU {STEADY:g}–{a.seconds:g} s (s)",
                       "peak RSS (MiB)", "server CPU (s)", "CPU ratio (ours ÷ peer)",
                       f"CPU {STEADY:g}–{a.seconds:g} s ratio", "RSS ratio (ours ÷ peer)"],
           "rows": rows, "headline": headline, "notes": notes, "runs": runs}
    write_table(out, a.out)
    print(f"footprint: wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
