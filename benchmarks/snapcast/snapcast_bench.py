#!/usr/bin/python3
"""Snapcast: CPU time of harmonia-play feeding a private snapserver, against
the same player on PulseAudio and against MPD 0.23's FIFO output into the
same kind of snapserver (MPD's documented Snapcast set-up).

One 30 s 44.1 kHz stereo FLAC, played once in real time per run, in rounds
that alternate the three set-ups:

  ours-snapcast  harmonia-play --output snapcast://127.0.0.1:PORT/ → a private
                 snapserver (TCP source, server mode, 48000:16:2, codec pcm):
                 the player resamples to 48 kHz (libsoxr) and paces the socket.
  ours-pulse     harmonia-play --output pulse → the PulseAudio server in
                 PULSE_SERVER (a float32 48 kHz null sink; the server resamples).
  MPD-fifo       a private mpd, audio_output fifo (format 48000:16:2) → a
                 private snapserver reading it (pipe source, mode=read);
                 MPD resamples to 48 kHz itself.

The player's CPU time is its whole life (os.wait4's rusage, user+sys): start,
30 s of playing, the drain at the end. MPD's is utime+stime from
/proc/PID/stat between `play` and the moment `idle player` reports the end of
the song (the daemon already running, the file queued). Both are also given
from one second into the window to its end (start-up excluded). The server's
CPU over the same window (snapserver or the PulseAudio daemon) is given for
information. Writes the contract's JSON (benchmarks/results/snapcast.json).
Standard library only (/usr/bin/python3). Every process started here is
stopped in a finally block; every wait is bounded.
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from results_file import write_table  # noqa: E402 (benchmarks/, one level up)

TICK = os.sysconf("SC_CLK_TCK")
STEADY_FROM = 1.0      # the "from 1 s" columns start this far into the window
PLAY_TIMEOUT = 30.0    # seconds allowed beyond the file's length for a run to end
START_TIMEOUT = 15.0   # seconds for snapserver or mpd to answer
SNAPSERVER = "/usr/bin/snapserver"
MPD = "/usr/bin/mpd"


def log(msg):
    print(f"snapcast: {msg}", file=sys.stderr, flush=True)


# MARK: - Processes

def cpu_seconds(pid):
    """utime + stime of a live process (/proc/PID/stat, clock ticks)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def safe_cpu(pid):
    try:
        return cpu_seconds(pid) if pid else None
    except (OSError, ValueError, IndexError):
        return None


def start(argv, log_path, **kw):
    """A child in its own session (so stop() reaches anything it starts), output to a log."""
    with open(log_path, "ab") as out:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True, **kw)


def stop(proc):
    """SIGTERM to its process group, SIGKILL after 5 s. Idempotent; never raises on a dead child."""
    if proc is None or proc.returncode is not None:
        return
    for sig, wait in ((signal.SIGTERM, 5), (signal.SIGKILL, 5)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def free_ports(count):
    socks = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def tail(path, n=400):
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return ""


def pulse_server_pid():
    s = os.environ.get("PULSE_SERVER", "")
    if s.startswith("unix:") and s.endswith("/native"):
        try:
            with open(os.path.join(os.path.dirname(s[5:]), "runtime", "pid")) as f:
                return int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            return None
    return None


# MARK: - A private snapserver

class Snapserver:
    """snapserver 0.26 with a generated config in `folder`: loopback, free ports,
    codec pcm, buffer 1000 ms, one stream from `source` (a format string taking
    the source port). No HTTP. Use as a context manager: stopped on exit."""

    def __init__(self, folder, source):
        self.folder = folder
        os.makedirs(folder, exist_ok=True)
        self.source_port, self.stream_port, self.control_port = free_ports(3)
        self.source = source.format(port=self.source_port)
        self.config = os.path.join(folder, "snapserver.conf")
        self.log = os.path.join(folder, "snapserver.log")
        self.proc = None
        with open(self.config, "w") as f:
            f.write(f"""[server]
datadir = {folder}
[http]
enabled = false
[tcp]
enabled = true
bind_to_address = 127.0.0.1
port = {self.control_port}
[stream]
bind_to_address = 127.0.0.1
port = {self.stream_port}
source = {self.source}
codec = pcm
buffer = 1000
[logging]
sink = stderr
filter = *:warning
""")

    def __enter__(self):
        self.proc = start([SNAPSERVER, "-c", self.config], self.log)
        deadline = time.monotonic() + START_TIMEOUT
        while not accepts(self.stream_port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"snapserver did not start: {tail(self.log)}")
            time.sleep(0.05)  # polling a process we do not control
        return self

    def __exit__(self, *exc):
        stop(self.proc)


# MARK: - harmonia-play

def run_ours(ours, flac, output, server_pid, log_path, length):
    """Plays `flac` to the end with `--output output`; returns the figures."""
    s0 = safe_cpu(server_pid)
    t0 = time.monotonic()
    proc = start([ours, "--quiet", "--output", output, flac], log_path)
    try:
        early = early_server = None
        deadline = t0 + length + PLAY_TIMEOUT
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                proc.returncode = os.waitstatus_to_exitcode(status)
                break
            now = time.monotonic()
            if early is None and now - t0 >= STEADY_FROM:
                early, early_server = safe_cpu(proc.pid), safe_cpu(server_pid)
            if now > deadline:
                raise RuntimeError(f"harmonia-play ({output}) did not finish within {length + PLAY_TIMEOUT:g} s")
            time.sleep(0.02)
        wall = time.monotonic() - t0
        s1 = safe_cpu(server_pid)
    finally:
        stop(proc)
    if proc.returncode != 0:
        raise RuntimeError(f"harmonia-play ({output}) exited {proc.returncode}: {tail(log_path)}")
    if wall < length - 0.5:
        raise RuntimeError(f"harmonia-play ({output}) ended after {wall:.1f} s, not in real time: {tail(log_path)}")
    cpu = usage.ru_utime + usage.ru_stime
    return figures(cpu, None if early is None else cpu - early, wall, s0, s1, early_server)


def figures(cpu, cpu_steady, wall, s0, s1, s_early):
    return {"cpu_s": round(cpu, 4), "cpu_from_1s": None if cpu_steady is None else round(cpu_steady, 4),
            "wall_s": round(wall, 3),
            "server_cpu_s": None if s0 is None or s1 is None else round(s1 - s0, 3),
            "server_cpu_from_1s": None if s_early is None or s1 is None else round(s1 - s_early, 3)}


# MARK: - MPD

class MPDClient:
    """The MPD protocol on a unix socket; every read bounded by the socket's timeout."""

    def __init__(self, path, timeout=10.0):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.buf = b""
        greeting = self.line()
        if not greeting.startswith("OK MPD "):
            raise RuntimeError(f"not MPD: {greeting!r}")

    def close(self):
        self.sock.close()

    def line(self):
        while b"\n" not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise RuntimeError("mpd closed the connection")
            self.buf += data
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode("utf-8", "replace")

    def command(self, cmd, timeout=None):
        """Sends `cmd`; returns its answer as a dict (last value wins). ACK raises."""
        if timeout is not None:
            self.sock.settimeout(timeout)
        self.sock.sendall(cmd.encode() + b"\n")
        out = {}
        while True:
            line = self.line()
            if line == "OK":
                return out
            if line.startswith("ACK"):
                raise RuntimeError(f"mpd: {cmd}: {line}")
            key, _, value = line.partition(": ")
            out[key] = value


MPD_CONF = """music_directory "{d}/music"
playlist_directory "{d}/playlists"
db_file "{d}/database"
state_file "{d}/state"
log_file "{d}/mpd.log"
bind_to_address "{d}/socket"
auto_update "no"
zeroconf_enabled "no"
audio_output {{
    type "fifo"
    name "snapcast"
    path "{fifo}"
    format "48000:16:2"
    mixer_type "software"
}}
"""


def run_mpd(flac, folder, length):
    """A fresh snapserver reading a FIFO and a fresh mpd writing it; MPD's CPU over the song."""
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "music"))
    os.makedirs(os.path.join(folder, "playlists"))
    name = os.path.basename(flac)
    try:
        os.link(os.path.abspath(flac), os.path.join(folder, "music", name))
    except OSError:
        shutil.copyfile(flac, os.path.join(folder, "music", name))
    fifo = os.path.join(folder, "snapfifo")
    os.mkfifo(fifo)
    conf = os.path.join(folder, "mpd.conf")
    with open(conf, "w") as f:
        f.write(MPD_CONF.format(d=folder, fifo=fifo))
    sock = os.path.join(folder, "socket")
    with Snapserver(os.path.join(folder, "snapserver"), f"pipe://{fifo}?name=mpd&mode=read") as snap:
        mpd = start([MPD, "--no-daemon", conf], os.path.join(folder, "mpd.stderr"))
        client = None
        try:
            deadline = time.monotonic() + START_TIMEOUT
            while client is None:
                try:
                    client = MPDClient(sock)
                except OSError:
                    if mpd.poll() is not None or time.monotonic() > deadline:
                        raise RuntimeError(f"mpd did not start: {tail(os.path.join(folder, 'mpd.log'))}")
                    time.sleep(0.05)  # polling a process we do not control
            client.command("update")
            deadline = time.monotonic() + 60
            while "updating_db" in client.command("status"):
                if time.monotonic() > deadline:
                    raise RuntimeError("mpd's update did not finish in 60 s")
                client.command("idle update", timeout=5)  # returns when the update job ends
            client.command("clear")
            client.command(f'add "{name}"', timeout=10)
            client.command("setvol 100")
            spid = snap.proc.pid
            s0, c0 = safe_cpu(spid), cpu_seconds(mpd.pid)
            t0 = time.monotonic()
            client.command("play")
            early = early_server = None
            end = t0 + length + PLAY_TIMEOUT
            while True:
                status = client.command("status", timeout=10)
                if status.get("state") != "play":
                    break
                now = time.monotonic()
                if early is None and now - t0 >= STEADY_FROM:
                    early, early_server = cpu_seconds(mpd.pid), safe_cpu(spid)
                if now > end:
                    raise RuntimeError("mpd did not finish the song in time")
                # Wake at the next player event, or after 0.25 s to take the
                # one-second sample: idle's answer is bounded by noidle.
                client.sock.sendall(b"idle player\n")
                client.sock.settimeout(0.25 if early is None else max(0.1, end - now))
                try:
                    answer = client.line()
                except socket.timeout:
                    client.sock.settimeout(10)
                    client.sock.sendall(b"noidle\n")
                    answer = client.line()
                client.sock.settimeout(10)
                while answer != "OK":
                    if answer.startswith("ACK"):
                        raise RuntimeError(f"mpd: idle: {answer}")
                    answer = client.line()
            c1, s1 = cpu_seconds(mpd.pid), safe_cpu(spid)
            wall = time.monotonic() - t0
            if mpd.poll() is not None:
                raise RuntimeError(f"mpd exited ({mpd.returncode})")
            if "error" in status:
                raise RuntimeError(f"mpd: {status['error']}")
            if wall < length - 0.5:
                raise RuntimeError(f"mpd's song ended after {wall:.1f} s: {tail(os.path.join(folder, 'mpd.log'))}")
            if snap.proc.poll() is not None:
                raise RuntimeError(f"snapserver exited: {tail(snap.log)}")
        finally:
            if client is not None:
                client.close()
            stop(mpd)
    return figures(c1 - c0, None if early is None else c1 - early, wall, s0, s1, early_server)


# MARK: - Main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", required=True)
    ap.add_argument("--file", required=True, help="the 30 s 44.1 kHz stereo FLAC")
    ap.add_argument("--length", type=float, default=30.0, help="the file's length (s)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--work", default="benchmarks/.work/snapcast")
    ap.add_argument("--out", default="benchmarks/results/snapcast.json")
    a = ap.parse_args()
    work = os.path.abspath(a.work)
    flac = os.path.abspath(a.file)
    os.makedirs(work, exist_ok=True)

    def ours_snapcast(r):
        with Snapserver(os.path.join(work, f"snap-{r}"),
                        "tcp://127.0.0.1:{port}/?name=harmonia&mode=server&sampleformat=48000:16:2") as snap:
            m = run_ours(a.ours, flac, f"snapcast://127.0.0.1:{snap.source_port}/?buffer=1000", snap.proc.pid,
                         os.path.join(work, f"ours-snapcast-{r}.log"), a.length)
            if snap.proc.poll() is not None:
                raise RuntimeError(f"snapserver exited: {tail(snap.log)}")
            return m

    setups = {
        "ours-snapcast": ours_snapcast,
        "ours-pulse": lambda r: run_ours(a.ours, flac, "pulse", pulse_server_pid(),
                                         os.path.join(work, f"ours-pulse-{r}.log"), a.length),
        "MPD-fifo": lambda r: run_mpd(flac, os.path.join(work, f"mpd-{r}"), a.length),
    }
    runs = {k: [] for k in setups}
    errors = {}
    for r in range(a.runs):
        # Alternating, and the order turns each round so no set-up is always first.
        order = list(setups)[r % 3:] + list(setups)[:r % 3]
        for key in order:
            if key in errors:
                continue
            try:
                m = setups[key](r)
                runs[key].append(m)
                log(f"run {r + 1} {key}: CPU {m['cpu_s']:.3f} s (from 1 s: {m['cpu_from_1s']}), "
                    f"{m['wall_s']:.1f} s wall, server CPU {m['server_cpu_s']} s")
            except Exception as e:  # a set-up that cannot run is reported; the others go on
                errors[key] = str(e)
                log(f"{key}: {e}")
    if not runs["ours-snapcast"]:
        raise SystemExit(f"snapcast: harmonia-play did not play to snapserver: {errors.get('ours-snapcast')}")

    def med(key, field):
        vals = [m[field] for m in runs[key] if m.get(field) is not None]
        return statistics.median(vals) if vals else None

    def ratio(x, y):
        return round(x / y, 2) if x is not None and y else None

    o_cpu, o_steady = med("ours-snapcast", "cpu_s"), med("ours-snapcast", "cpu_from_1s")
    labels = {"ours-snapcast": "harmonia-play → snapserver (snapcast://, resampled by us)",
              "ours-pulse": "harmonia-play → PulseAudio (--output pulse)",
              "MPD-fifo": "MPD 0.23 fifo output → snapserver (pipe source)"}
    short = {"ours-pulse": "the same player on PulseAudio", "MPD-fifo": "MPD 0.23's fifo output to snapserver"}
    servers = {"ours-snapcast": "snapserver", "ours-pulse": "PulseAudio daemon", "MPD-fifo": "snapserver"}
    rows, headline, notes = [], [], []
    for key in setups:
        if not runs[key]:
            notes.append(f"{labels[key]}: not measured: {errors.get(key, 'no runs')}")
            continue
        cpu, steady = med(key, "cpu_s"), med(key, "cpu_from_1s")
        srv = med(key, "server_cpu_s")
        rows.append([labels[key], len(runs[key]), round(cpu, 3), None if steady is None else round(steady, 3),
                     round(med(key, "wall_s"), 2), None if srv is None else f"{srv:.2f} ({servers[key]})",
                     None if key == "ours-snapcast" else ratio(o_cpu, cpu),
                     None if key == "ours-snapcast" else ratio(o_steady, steady)])
        if key != "ours-snapcast":
            headline.append({"label": f"CPU, 30 s of FLAC, harmonia-play to snapserver vs {short[key]}",
                             "ratio": ratio(o_cpu, cpu), "target": None, "lower_is_better": True})
        if key in errors:
            notes.append(f"{labels[key]}: a run failed, later runs skipped: {errors[key]}")
    both = {k: [m["cpu_s"] + m["server_cpu_s"] for m in runs[k] if m.get("server_cpu_s") is not None] for k in setups}
    if both["ours-snapcast"] and both["MPD-fifo"]:
        ours_both, mpd_both = statistics.median(both["ours-snapcast"]), statistics.median(both["MPD-fifo"])
        notes.append(f"Player + snapserver together: harmonia-play {ours_both:.2f} s against MPD {mpd_both:.2f} s "
                     f"({ours_both / mpd_both:.2f}×; not a headline ratio).")
    notes.append("What differs: with --output pulse the player keeps a 500 ms buffer (the default) in PulseAudio "
                 "and the server resamples; to snapserver the player's writer thread converts and sends one 10 ms "
                 "period every 10 ms (specs/snapcast.md §Pacing); MPD resamples in its own process and writes the "
                 "FIFO from its output thread.")
    method = (
        f"One 30 s stereo 44.1 kHz 16-bit FLAC (generated with ffmpeg), played once in real time per run by "
        f"each set-up, {a.runs} rounds alternating (the order turns each round); figures are medians. "
        f"(a) harmonia-play (release build, `--quiet --output snapcast://127.0.0.1:PORT/?buffer=1000`) feeding a "
        f"fresh private snapserver 0.26 (TCP source in server mode, sampleformat 48000:16:2, codec pcm, buffer "
        f"1000 ms, no client connected): the player resamples to 48 kHz (libsoxr) and paces the socket. "
        f"(b) the same player with `--output pulse` on the private PulseAudio server (a float32 48 kHz null sink; "
        f"the server resamples). (c) a fresh private MPD 0.23 (audio_output fifo, format 48000:16:2, software "
        f"mixer at 100, MPD's default resampler) feeding a fresh snapserver reading the FIFO "
        f"(`pipe:///FIFO?name=mpd&mode=read`, otherwise the same config): MPD's documented Snapcast set-up. "
        f"CPU time is user+sys: for the player its whole life (os.wait4's rusage: start-up, 30 s of playing, the "
        f"drain at the end — for snapcast:// the drain waits until snapserver's 1 s buffer has been heard); for "
        f"MPD utime+stime from /proc/PID/stat ({1000 / TICK:g} ms ticks) from `play` to the end of the song "
        f"(`idle player`, then `status`), the daemon already running with the file queued. 'From 1 s' leaves out "
        f"the first second of each window (process start-up for the player). The server column (snapserver or the "
        f"PulseAudio daemon, utime+stime over the same window) is for information, not in the ratios. Ratios are "
        f"ours-snapcast ÷ the row's set-up (lower is better); the issue sets no target.")
    out = {"part": "snapcast", "title": "Snapcast output: CPU time playing 30 s of FLAC in real time",
           "method": method,
           "columns": ["Set-up", "runs", "CPU time, whole window (s)", "CPU from 1 s (s)", "wall (s)",
                       "server CPU, same window (s)", "ratio ours-snapcast ÷ this", "ratio from 1 s"],
           "rows": rows, "headline": headline, "notes": notes, "runs": runs}
    write_table(out, a.out)
    log(f"wrote {a.out}")


if __name__ == "__main__":
    main()
