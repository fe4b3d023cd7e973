#!/usr/bin/env python3
"""Footprint while playing a 10-minute FLAC (and the same music as MP3) in real
time through the sound server $PULSE_SERVER names: the private PulseAudio
(benchmarks/run-footprint.sh) or a private PipeWire, whose pipewire,
pipewire-pulse and WirePlumber are the server then
(benchmarks/run-footprint-pipewire.sh).

For each round and file: harmonia-play, then mpv, then MPD (a fresh private
daemon per run, driven by mpc), and harmonia-play at a 50 ms latency (FLAC);
every other round in the reverse order. With --fresh-server SCRIPT (a test
server's script: `SCRIPT start|stop DIR`, address unix:DIR/native) every run
gets a new sound server of its own, so no run inherits the state an earlier
client left in the server.
Each program plays for exactly SECONDS. From second STEADY to the end, the
on-CPU time of every thread of the player and of the PulseAudio daemon is
taken from schedstat: steady playback, player + server, is what the targets
compare. The whole window's CPU time (utime+stime, /proc/PID/stat) and peak
RSS (VmHWM) are read at the end; for ours and mpv that window starts at
process start, for MPD at `mpc play`.
Writes the contract's JSON (benchmarks/results/footprint.json).
"""
import argparse, os, shutil, signal, statistics, subprocess, sys, tempfile, time

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


def thread_names(pid):
    """The name (comm) of each live thread of pid."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                out[tid] = f.read().strip()
        except OSError:
            pass
    return out


def by_name(names, before, after):
    """Milliseconds on CPU between two samples, summed per thread name."""
    out = {}
    for tid, ns in after.items():
        name = names.get(tid, "?")
        out[name] = out.get(name, 0) + (ns - before.get(tid, 0)) / 1e6
    return {k: round(v, 2) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


def steady_seconds(before, after):
    return sum(ns - before.get(tid, 0) for tid, ns in after.items()) / 1e9


def vm_hwm_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def server_pids():
    """The sound server's processes, found from $PULSE_SERVER's folder: the
    PulseAudio test server's daemon (runtime/pid), or the PipeWire test
    server's pipewire, pipewire-pulse and WirePlumber (NAME.pid); [] if unknown."""
    s = os.environ.get("PULSE_SERVER", "")
    if not (s.startswith("unix:") and s.endswith("/native")):
        return []
    folder = os.path.dirname(s[5:])
    files = [os.path.join(folder, f"{name}.pid") for name in ("pipewire", "pipewire-pulse", "wireplumber")]
    if not os.path.exists(files[1]):
        files = [os.path.join(folder, "runtime", "pid")]
    pids = []
    for path in files:
        try:
            with open(path) as f:
                pids.append(int(f.read().split()[0]))
        except (OSError, ValueError, IndexError):
            return []
    return pids


def server_name():
    s = os.environ.get("PULSE_SERVER", "")
    folder = os.path.dirname(s[5:]) if s.startswith("unix:") else ""
    if folder and os.path.exists(os.path.join(folder, "pipewire-pulse.pid")):
        return "PipeWire (pipewire + pipewire-pulse + WirePlumber)"
    return "PulseAudio server"


def safe_cpu(pids):
    """Whole-window CPU seconds of the server's processes, or None."""
    try:
        return sum(cpu_seconds(pid) for pid in pids) if pids else None
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
    spid = server_pids()
    s0, st0 = safe_cpu(spid), safe_threads(spid)
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    t0 = time.monotonic()
    try:
        time.sleep(max(0.0, t0 + STEADY - time.monotonic()))
        try:
            c5, s5 = thread_ns(proc.pid), safe_threads(spid)
        except OSError:
            c5, s5 = None, None
        time.sleep(max(0.0, t0 + seconds - time.monotonic()))
        if proc.poll() is not None or c5 is None:
            err = proc.stderr.read().decode(errors="replace").strip()[-300:]
            raise RuntimeError(f"{label} exited early ({proc.returncode}): {err}")
        c20, s20 = thread_ns(proc.pid), safe_threads(spid)
        names = thread_names(proc.pid)
        cpu, rss = cpu_seconds(proc.pid), vm_hwm_mib(proc.pid)
        s1 = safe_cpu(spid)
    finally:
        stop(proc)
    # The whole window from the process's start: every live thread since it began.
    return measurement(cpu, rss, s0, s1, c5, c20, s5, s20, names, {}, st0)


def safe_threads(pids):
    """On-CPU nanoseconds of every thread of the server's processes (thread ids are unique), or None."""
    try:
        out = {}
        for pid in pids:
            out.update(thread_ns(pid))
        return out if pids else None
    except OSError:
        return None


def measurement(cpu, rss, s0, s1, c5, c20, s5, s20, names, c_start, st0):
    """One run's figures: the whole window (tick-based), the steady part
    (schedstat), the window from the player's process start (schedstat:
    every live thread since `c_start`, the server's since `st0`, sampled
    before the player's process started), and the player's steady
    milliseconds per thread name."""
    return {"cpu_s": round(cpu, 3), "rss_mib": round(rss, 2), "steady_cpu_s": round(steady_seconds(c5, c20), 4),
            "server_cpu_s": None if s0 is None or s1 is None else round(s1 - s0, 3),
            "server_steady_cpu_s": None if s5 is None or s20 is None else round(steady_seconds(s5, s20), 4),
            "from_start_cpu_s": round(steady_seconds(c_start, c20), 4),
            "server_from_start_cpu_s": None if st0 is None or s20 is None else round(steady_seconds(st0, s20), 4),
            "steady_threads_ms": by_name(names, c5, c20)}


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
    st0 = safe_threads(server_pids())
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
        spid = server_pids()
        s0, c0 = safe_cpu(spid), cpu_seconds(proc.pid)
        t0 = time.monotonic()
        mpc("play")
        time.sleep(max(0.0, t0 + STEADY - time.monotonic()))
        c5, s5 = thread_ns(proc.pid), safe_threads(spid)
        time.sleep(max(0.0, t0 + seconds - time.monotonic()))
        if proc.poll() is not None:
            raise RuntimeError(f"mpd exited early ({proc.returncode})")
        c20, s20 = thread_ns(proc.pid), safe_threads(spid)
        names = thread_names(proc.pid)
        cpu, rss = cpu_seconds(proc.pid) - c0, vm_hwm_mib(proc.pid)
        s1 = safe_cpu(spid)
        state = subprocess.run(["mpc", "status"], env=env, capture_output=True, text=True, timeout=10).stdout
        if "[playing]" not in state:
            raise RuntimeError("mpd is not playing: " + state.strip()[-200:])
    finally:
        stop(proc)
    # From MPD's own start: its start-up, `update`, `add` and `play` counted, as ours are.
    return measurement(cpu, rss, s0, s1, c5, c20, s5, s20, names, {}, st0)


def med(xs):
    return statistics.median(xs)


RSS_TARGET_MIB = 40.0  # issue 15: peak RSS playing FLAC


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", required=True)
    ap.add_argument("--file", required=True, help="a long FLAC")
    ap.add_argument("--mp3", help="the same music as MP3 (optional: a second set of rows)")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--work", default="benchmarks/.work")
    ap.add_argument("--out", default="benchmarks/results/footprint.json")
    ap.add_argument("--part", default="footprint", help="the results' part name (footprint-pipewire on PipeWire)")
    ap.add_argument("--fresh-server", metavar="SCRIPT",
                    help="start a new sound server for every run with SCRIPT start|stop DIR (Tests/pulse-test-server.sh)")
    a = ap.parse_args()
    server = server_name() if not a.fresh_server else (
        "PipeWire (pipewire + pipewire-pulse + WirePlumber)" if "pipewire" in a.fresh_server else "PulseAudio server")

    files = [("FLAC", a.file)] + ([("MP3", a.mp3)] if a.mp3 else [])
    programs = {}
    for fmt_name, path in files:
        programs[("ours", fmt_name)] = lambda p=path: run_process([a.ours, p, "--quiet"], a.seconds, "harmonia-play")
        programs[("mpv", fmt_name)] = lambda p=path: run_process(
            ["mpv", "--no-config", "--no-video", "--ao=pulse", "--no-terminal", p], a.seconds, "mpv")
        programs[("MPD", fmt_name)] = lambda p=path: run_mpd(p, a.seconds, a.work)
    # Not in the ratios: what the buffer size does (50 ms was the default before 0.1.1).
    programs[("ours-50", "FLAC")] = lambda: run_process([a.ours, a.file, "--quiet", "--latency", "50"], a.seconds,
                                                        "harmonia-play --latency 50")
    runs = {k: [] for k in programs}
    errors = {}
    def on_fresh_server(fn):
        """fn() with a sound server of its own (--fresh-server), stopped after."""
        if not a.fresh_server:
            return fn()
        folder = tempfile.mkdtemp(prefix="harmonia-footprint-server.")
        try:
            subprocess.run(["bash", a.fresh_server, "start", folder], check=True, stdout=subprocess.DEVNULL)
            os.environ["PULSE_SERVER"] = f"unix:{folder}/native"
            return fn()
        finally:
            subprocess.run(["bash", a.fresh_server, "stop", folder], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            shutil.rmtree(folder, ignore_errors=True)

    for r in range(a.rounds):
        order = list(programs.items())
        if r % 2:
            order.reverse()  # neither program always runs first (a machine warming up, a server's age)
        for key, fn in order:
            if key[0] in errors:
                continue
            try:
                m = on_fresh_server(fn)
                runs[key].append(m)
                print(f"footprint: round {r + 1} {key[0]} {key[1]}: CPU {m['cpu_s']:.2f} s "
                      f"(steady {m['steady_cpu_s']:.3f} s), peak RSS {m['rss_mib']:.1f} MiB, server CPU "
                      f"{m['server_cpu_s']} s (steady {m['server_steady_cpu_s']} s)", file=sys.stderr)
            except Exception as e:  # a peer that cannot run is reported, the others go on
                errors[key[0]] = str(e)
                print(f"footprint: {key[0]}: {e}", file=sys.stderr)
    if not runs[("ours", "FLAC")]:
        raise SystemExit(f"footprint: harmonia-play did not run: {errors.get('ours')}")

    def stats(key):
        """Medians of each figure over the rounds (None where a figure is missing)."""
        xs = runs.get(key) or []
        if not xs:
            return None
        out = {}
        for field in ("cpu_s", "rss_mib", "steady_cpu_s", "server_cpu_s", "server_steady_cpu_s"):
            vals = [x[field] for x in xs if x.get(field) is not None]
            out[field] = med(vals) if vals else None
        both = [x["steady_cpu_s"] + x["server_steady_cpu_s"] for x in xs if x.get("server_steady_cpu_s") is not None]
        out["both_steady"] = med(both) if both else None
        start = [x["from_start_cpu_s"] + x["server_from_start_cpu_s"] for x in xs
                 if x.get("server_from_start_cpu_s") is not None]
        out["both_from_start"] = med(start) if start else None
        names = {n for x in xs for n in x.get("steady_threads_ms", {})}
        out["threads"] = {n: round(med([x.get("steady_threads_ms", {}).get(n, 0) for x in xs]), 1) for n in names}
        return out

    def r2(x, n=2):
        return None if x is None else round(x, n)

    names = {"ours": "harmonia-play", "ours-50": "harmonia-play --latency 50", "mpv": "mpv", "MPD": "MPD"}
    rows, headline, notes = [], [], []
    for fmt_name, _ in files:
        o = stats(("ours", fmt_name))
        if o is None:
            notes.append(f"harmonia-play did not play the {fmt_name}: {errors.get('ours')}")
            continue
        for key in (("ours", fmt_name), ("ours-50", fmt_name), ("mpv", fmt_name), ("MPD", fmt_name)):
            st = stats(key)
            if st is None:
                continue
            peer = key[0] in ("mpv", "MPD")
            ratio = (lambda x, y: round(x / y, 2) if peer and x is not None and y else None)
            rows.append([f"{names[key[0]]} ({fmt_name})", r2(st["cpu_s"]), r2(st["steady_cpu_s"], 3),
                         r2(st["server_steady_cpu_s"], 3), r2(st["both_steady"], 3), r2(st["rss_mib"], 1),
                         ratio(o["both_steady"], st["both_steady"]), ratio(o["cpu_s"], st["cpu_s"]),
                         ratio(o["rss_mib"], st["rss_mib"])])
            if not peer:
                continue
            if o["both_steady"] is not None and st["both_steady"]:
                headline.append({"label": f"CPU, player + {server}, steady playback of {fmt_name} vs {key[0]}",
                                 "ratio": round(o["both_steady"] / st["both_steady"], 2),
                                 "target": 0.8 if key[0] == "MPD" else 1.0,  # issue 37: ≤ 0.8× MPD
                                 "lower_is_better": True})
                notes.append(f"{fmt_name}, seconds {STEADY:g}–{a.seconds:g}: harmonia-play {o['steady_cpu_s']:.3f} s "
                             f"+ server {o['server_steady_cpu_s']:.3f} s against {key[0]} {st['steady_cpu_s']:.3f} s "
                             f"+ server {st['server_steady_cpu_s']:.3f} s.")
                def threads(x):
                    return ", ".join(f"{n} {ms:g}" for n, ms in sorted(x.items(), key=lambda kv: -kv[1]) if ms >= 0.1)
                notes.append(f"{fmt_name}, steady, ms per thread (medians): harmonia-play {threads(o['threads'])}; "
                             f"{key[0]} {threads(st['threads'])}.")
            if key[0] == "MPD" and o["both_from_start"] is not None and st["both_from_start"]:
                headline.append({"label": f"CPU, player + {server}, {a.seconds:g} s of {fmt_name} from the player's "
                                          f"process start (start-up counted for both) vs MPD",
                                 "ratio": round(o["both_from_start"] / st["both_from_start"], 2),
                                 "target": 0.8, "lower_is_better": True})
                notes.append(f"{fmt_name}, from process start: harmonia-play + server {o['both_from_start']:.3f} s "
                             f"against MPD + server {st['both_from_start']:.3f} s (MPD's daemon start, `update`, "
                             f"`add` and `play` included, as ours are; threads that ended before the last "
                             f"sample, such as MPD's update thread, are not counted).")
            if fmt_name == "FLAC":
                headline.append({"label": f"CPU time over the whole window incl. start-up, FLAC, vs {key[0]} "
                                          f"(its start-up not counted)",
                                 "ratio": round(o["cpu_s"] / st["cpu_s"], 2) if st["cpu_s"] else None,
                                 "target": None, "lower_is_better": True})
                headline.append({"label": f"peak RSS vs {key[0]}", "ratio": round(o["rss_mib"] / st["rss_mib"], 2),
                                 "target": None, "lower_is_better": True})
        if fmt_name == "FLAC":
            headline.append({"label": f"peak RSS playing FLAC vs {RSS_TARGET_MIB:g} MiB",
                             "ratio": round(o["rss_mib"] / RSS_TARGET_MIB, 2), "target": 1.0,
                             "lower_is_better": True})
            fifty = stats(("ours-50", "FLAC"))
            if fifty is not None and fifty["both_steady"] is not None and o["both_steady"] is not None:
                notes.append(f"With a 50 ms target latency instead of the default 500 ms, harmonia-play and the server "
                             f"used {fifty['steady_cpu_s']:.3f} + {fifty['server_steady_cpu_s']:.3f} s in steady "
                             f"playback against {o['steady_cpu_s']:.3f} + {o['server_steady_cpu_s']:.3f} s at 500 ms. "
                             "This row is not in the ratios (they compare the default settings).")
    for peer in ("mpv", "MPD"):
        if peer in errors or not any(runs[k] for k in runs if k[0] == peer):
            notes.append(f"{peer} not measured: {errors.get(peer, 'no runs')}")
    n = len(runs[("ours", "FLAC")])
    method = (
        f"A 10-minute stereo 44.1 kHz 16-bit FLAC (generated with ffmpeg)"
        + (" and the same music as a 192 kbit/s MP3" if a.mp3 else "")
        + f", each played in real time through the private {server} (a float32 48 kHz null sink) for "
        f"exactly {a.seconds:g} s by each program, in rounds of harmonia-play (release build, `--quiet`), mpv "
        f"(`--no-config --no-video --ao=pulse`), MPD (a fresh private daemon per run, pulse output, driven by mpc) "
        f"and harmonia-play `--latency 50` (FLAC, for the notes), every other round in the reverse order"
        + (", each run on a new server of its own" if a.fresh_server else "")
        + f"; {n} rounds, figures are medians. "
        f"Steady playback is seconds {STEADY:g} to {a.seconds:g} of the window: on-CPU nanoseconds of each thread "
        f"of the player and of every server process (/proc/PID/task/TID/schedstat), start-up excluded for every "
        f"program; the server's share is the work it does for that one client (resampling to 48 kHz, mixing), "
        f"so the targets compare player + server. The whole-window CPU time (utime+stime from /proc/PID/stat, "
        f"{1000 / TICK:g} ms resolution) starts at process start for harmonia-play and mpv (start-up included: "
        f"`harmonia-play --version` alone takes about 47 ms of CPU, mapping and binding Debian's libavcodec and "
        f"its ~150 libraries) and at `mpc play` for MPD (the daemon already running with the file queued: its own "
        f"start-up, which loads 290 libraries, is not counted); it is given for information, without a target. "
        f"The from-start figure counts start-up for both: on-CPU time of every live thread of the player since "
        f"its process started (MPD's since the daemon started, its `update`, `add` and `play` included) plus the "
        f"server's from just before the player started, to the end of the window; it has the 0.8 target too. Peak RSS is VmHWM "
        f"from /proc/PID/status at the end of the window. Ratios are ours ÷ peer (lower is better), from the "
        f"medians of the same rounds.")
    title = "Footprint: 20 s of a 10-minute FLAC and MP3 in real time" + (" on PipeWire" if "PipeWire" in server else "")
    out = {"part": a.part, "title": title,
           "method": method,
           "columns": ["Program", "CPU time, whole window (s)", f"player CPU {STEADY:g}–{a.seconds:g} s (s)",
                       f"server CPU {STEADY:g}–{a.seconds:g} s (s)", "player + server, steady (s)",
                       "peak RSS (MiB)", "steady player + server ratio (ours ÷ peer)",
                       "whole-window CPU ratio", "RSS ratio (ours ÷ peer)"],
           "rows": rows, "headline": headline, "notes": notes,
           "runs": {f"{k[0]} {k[1]}": v for k, v in runs.items()}}
    write_table(out, a.out)
    print(f"footprint: wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
