#!/usr/bin/env python3
"""Latency through a real PulseAudio server, ours against the players people use.

One process holds one timeline (CLOCK_MONOTONIC): it loads a module-pipe-sink
(use_system_clock_for_timing=yes) on the server, reads its FIFO on a thread and
stamps every block it reads; the commands it sends are stamped on the same
clock. A frame is heard at its block's arrival plus its offset in the block
(a block plays from the moment the sink emits it, frame by frame at the sink's
rate); a command can only affect blocks that arrive after it was sent.

The test signal is a chirp (frequency rises linearly with the position in the
file), so the recording tells which position is playing: a seek is done when
the frequency of the new position is heard. Python 3 stdlib only.
"""
import argparse
import array
import bisect
import json
import math
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import wave

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from results_file import write_table  # noqa: E402 (benchmarks/, one level up)

RATE = 48000
SINK_CHANNELS = 8          # 32-byte frames: the pipe sink's 4 KiB block is 127 frames (2.6 ms)
DURATION = 30.0            # s, test file length
F0, SLOPE = 400.0, 100.0   # chirp: f(t) = F0 + SLOPE * t  (400 Hz … 3400 Hz)
AMP = 0.5
LOUD = 0.01                # |x| above this is sound (the sink scales stereo→8 ch by ≈0.707)
SEEKS = [20.0, 8.0, 25.0]  # seek targets, far apart in frequency
LIMITS_MS = {"pause": 5.0, "volume": 10.0, "next": 20.0}  # interaction targets at the default buffer (issue 15)


def now():
    return time.monotonic()


def freq_at(pos):
    return F0 + SLOPE * pos


# ---------------------------------------------------------------- test files

def make_files(work):
    """A 30 s stereo 16-bit 48 kHz WAV chirp (phase-continuous), and an MP3 of it."""
    os.makedirs(work, exist_ok=True)
    wav = os.path.join(work, "chirp.wav")
    mp3 = os.path.join(work, "chirp.mp3")
    if not os.path.exists(wav):
        n = int(DURATION * RATE)
        frames = array.array("h", bytes(4 * n))
        two_pi = 2 * math.pi
        for i in range(n):
            t = i / RATE
            v = int(round(32767 * AMP * math.sin(two_pi * (F0 * t + 0.5 * SLOPE * t * t))))
            frames[2 * i] = v
            frames[2 * i + 1] = v
        tmp = wav + ".tmp"
        with wave.open(tmp, "wb") as w:
            w.setnchannels(2)
            w.setsampwidth(2)
            w.setframerate(RATE)
            w.writeframes(frames.tobytes())
        os.replace(tmp, wav)
    if not os.path.exists(mp3) and shutil.which("ffmpeg"):
        tmp = mp3 + ".tmp.mp3"
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-i", wav, "-c:a", "libmp3lame",
                        "-b:a", "320k", tmp], check=True)
        os.replace(tmp, mp3)
    return wav, mp3


# ---------------------------------------------------------------- recorder

class Recorder:
    """A module-pipe-sink whose FIFO is read on a thread, every block stamped."""

    def __init__(self, env, work):
        self.env = env
        self.sink = "latency_pipe_%d" % os.getpid()
        self.fifo = os.path.join(work, self.sink + ".fifo")
        if os.path.exists(self.fifo):
            os.unlink(self.fifo)
        self.module = subprocess.check_output(
            ["pactl", "load-module", "module-pipe-sink", "file=" + self.fifo, "sink_name=" + self.sink,
             "format=float32le", "rate=%d" % RATE, "channels=%d" % SINK_CHANNELS,
             "use_system_clock_for_timing=yes"], env=env).decode().strip()
        self.lock = threading.Lock()
        self.chunks = []        # (arrival, first frame, bytes)
        self.arrivals = []      # arrival of every block, and its first frame (the whole run)
        self.firsts = []
        self.base_frame = 0     # frames before self.chunks[0] that were discarded
        self.frames = 0
        self.read_sizes = []    # frames per read of the FIFO: one sink block, or more when the reader was late
        self.fd = os.open(self.fifo, os.O_RDONLY)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        frame_bytes = 4 * SINK_CHANNELS
        pending = b""
        while True:
            try:
                b = os.read(self.fd, 1 << 16)
            except OSError:
                break
            t = now()
            if not b:
                break
            b = pending + b
            whole = len(b) // frame_bytes * frame_bytes
            b, pending = b[:whole], b[whole:]
            n = whole // frame_bytes
            with self.lock:
                first = self.frames
                self.chunks.append((t, first, b))
                self.arrivals.append(t)
                self.firsts.append(first)
                self.frames += n
                self.read_sizes.append(n)

    def block_frames(self):
        """The sink's block, in frames: the median read (a late reader gets several at once)."""
        with self.lock:
            return statistics.median(self.read_sizes) if self.read_sizes else None

    def frame_at(self, t):
        """The first frame mixed after time t: the first frame of the first block that arrived after t."""
        with self.lock:
            i = bisect.bisect_right(self.arrivals, t)
            if i < len(self.firsts):
                return self.firsts[i]
            return self.frames + max(0, int((t - self.arrivals[-1]) * RATE)) if self.arrivals else 0

    def time_of(self, frame):
        """When `frame` is heard: its block plays from the moment it arrived, frame by frame."""
        with self.lock:
            i = max(0, bisect.bisect_right(self.firsts, frame) - 1)
            return self.arrivals[i] + (frame - self.firsts[i]) / RATE

    def wait_for_frame(self, frame, timeout=2.0):
        end = now() + timeout
        while now() < end:
            with self.lock:
                if self.frames >= frame:
                    return True
            time.sleep(0.002)
        return False

    def samples(self, start, end):
        """Channel 0 of frames [start, end) as a list of floats (what is recorded of it)."""
        with self.lock:
            parts = [(f, b) for (_, f, b) in self.chunks if f + len(b) // (4 * SINK_CHANNELS) > start and f < end]
        out = array.array("f")
        first = None
        for f, b in parts:
            a = array.array("f", b)
            n = len(a) // SINK_CHANNELS
            lo = max(start, f) - f
            hi = min(end, f + n) - f
            if first is None:
                first = f + lo
            out.extend(a[lo * SINK_CHANNELS:hi * SINK_CHANNELS:SINK_CHANNELS])
        return (first if first is not None else start), out

    def discard_before(self, frame):
        with self.lock:
            self.chunks = [c for c in self.chunks if c[1] + len(c[2]) // (4 * SINK_CHANNELS) > frame]

    def close(self):
        try:
            subprocess.run(["pactl", "unload-module", self.module], env=self.env, timeout=10,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except Exception:
            pass
        self.thread.join(timeout=3)
        try:
            os.close(self.fd)
        except OSError:
            pass
        try:
            os.unlink(self.fifo)
        except OSError:
            pass


# ---------------------------------------------------------------- analysis

def half_cycles(first, x):
    """Runs of one strict sign: (start frame, end frame, peak |x|, crossing at start (fractional frame))."""
    out = []
    n = len(x)
    i = 0
    while i < n:
        v = x[i]
        s = (v > 0) - (v < 0)
        j = i + 1
        peak = abs(v)
        while j < n:
            w = x[j]
            if ((w > 0) - (w < 0)) != s:
                break
            if abs(w) > peak:
                peak = abs(w)
            j += 1
        cross = float(i)
        if i > 0 and s != 0:
            p = x[i - 1]
            if (p > 0) - (p < 0) == -s:
                cross = (i - 1) + p / (p - v)
        out.append((first + i, first + j, peak if s != 0 else 0.0, first + cross, s))
        i = j
    return out


def first_loud(first, x, thr=LOUD):
    for i, v in enumerate(x):
        if v > thr or v < -thr:
            return first + i
    return None


def window_freq(hc, k, count=8):
    """Frequency over half-cycles k … k+count-1 (all loud), from interpolated crossings; None if not loud."""
    if k + count >= len(hc):
        return None
    seg = hc[k:k + count + 1]
    if any(h[4] == 0 or h[2] < LOUD for h in seg[:count]) or seg[count][4] == 0:
        return None
    span = (seg[count][3] - seg[0][3]) / RATE
    if span <= 0:
        return None
    return count / 2.0 / span


def onset_at_position(rec, start_frame, target, limit_frames):
    """First frame ≥ start_frame where the content at `target` s (±) is heard."""
    first, x = rec.samples(start_frame, start_frame + limit_frames)
    hc = half_cycles(first, x)
    lo, hi = freq_at(target - 0.6), freq_at(target + 1.0)
    for k in range(len(hc)):
        f = window_freq(hc, k)
        if f is not None and lo <= f <= hi:
            # walk back over loud half-cycles of the new content (a partial first one included)
            m = k
            while m > 0 and hc[m - 1][4] != 0 and hc[m - 1][2] >= LOUD * 0.5:
                a, b = hc[m - 1][0], hc[m - 1][1]
                single = RATE / (2.0 * max(1, b - a))
                if not (0.5 * lo <= single <= 1.6 * hi) and m - 1 > 0 and hc[m - 2][4] != 0:
                    break
                m -= 1
            seg0 = hc[m][0]
            return first_loud(seg0, x[seg0 - first:], LOUD * 0.5) or seg0
    return None


def silence_onset(rec, start_frame, limit_frames, hold=int(0.05 * RATE)):
    """First frame ≥ start_frame after which the recording stays silent for `hold` frames."""
    first, x = rec.samples(start_frame, start_frame + limit_frames)
    last_loud = None
    run = 0
    for i, v in enumerate(x):
        if v > LOUD or v < -LOUD:
            last_loud = i
            run = 0
        else:
            run += 1
            if run >= hold:
                return first + (last_loud + 1 if last_loud is not None else 0)
    return None


def level_change(rec, start_frame, ref_level, limit_frames, factor=0.85):
    """First frame ≥ start_frame of a half-cycle whose peak is below factor × ref_level."""
    first, x = rec.samples(start_frame, start_frame + limit_frames)
    hc = half_cycles(first, x)
    for h in hc[1:]:
        if h[4] != 0 and h[1] - h[0] >= 2 and h[2] < factor * ref_level:
            return h[0]
    return None


def level_before(rec, end_frame, frames=int(0.02 * RATE)):
    first, x = rec.samples(end_frame - frames, end_frame)
    hc = half_cycles(first, x)
    peaks = [h[2] for h in hc[1:-1] if h[4] != 0]
    return statistics.median(peaks) if peaks else None


# ---------------------------------------------------------------- players

class Player:
    name = "?"
    controls = False      # seek / pause / volume supported

    def __init__(self, h):
        self.h = h
        self.proc = None

    def start(self, path):
        raise NotImplementedError

    def stop(self):
        p = self.proc
        if p and p.poll() is None:
            try:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=3)
            except Exception:
                p.kill()
                p.wait()

    def popen(self, argv, **kw):
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        kw.setdefault("stdin", subprocess.DEVNULL)
        return subprocess.Popen(argv, env=self.h.env, **kw)


def drain(stream):
    def run():
        try:
            for _ in stream:
                pass
        except Exception:
            pass
    threading.Thread(target=run, daemon=True).start()


class Ours(Player):
    name = "ours"
    controls = True
    latency_ms = None    # None: the default (500 ms)

    def start(self, path):
        argv = [self.h.ours, "--control", "stdin", "--tick", "0", "--output", "pulse",
                "--device", self.h.rec.sink, path, path]   # twice: `next` goes to the second
        if self.latency_ms:
            argv[1:1] = ["--latency", str(self.latency_ms)]
        t = now()
        self.proc = self.popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        drain(self.proc.stdout)
        self.mid = 0
        return t

    def _send(self, command, args=None):
        self.mid += 1
        line = json.dumps({"message_id": self.mid, "command": command, "args": args or {}}) + "\n"
        t = now()
        self.proc.stdin.write(line)
        self.proc.stdin.flush()
        return t

    def seek(self, pos):
        return self._send("seek", {"position": pos})

    def pause(self):
        return self._send("pause")

    def volume(self, level):
        return self._send("volume", {"level": level})

    def next(self):
        return self._send("next")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            try:
                self._send("quit")
                self.proc.stdin.close()
                self.proc.wait(timeout=3)
            except Exception:
                pass
        super().stop()


class Paplay(Player):
    name = "paplay"

    def start(self, path):
        t = now()
        self.proc = self.popen(["paplay", "-d", self.h.rec.sink, path])
        return t


class Ffplay(Player):
    name = "ffplay"

    def start(self, path):
        t = now()
        self.proc = self.popen(["ffplay", "-nodisp", "-autoexit", "-loglevel", "quiet", path])
        return t


class Mpg123(Player):
    name = "mpg123"
    mp3 = True

    def start(self, path):
        t = now()
        self.proc = self.popen(["mpg123", "-q", "-o", "pulse", "-a", self.h.rec.sink, path])
        return t


class Mpv(Player):
    name = "mpv"
    controls = True

    def start(self, path):
        self.sock_path = os.path.join(self.h.work, "mpv-%d.sock" % os.getpid())
        if os.path.exists(self.sock_path):
            os.unlink(self.sock_path)
        argv = ["mpv", "--no-config", "--no-video", "--no-terminal", "--ao=pulse",
                "--audio-device=pulse/" + self.h.rec.sink, "--input-ipc-server=" + self.sock_path, path, path]
        t = now()
        self.proc = self.popen(argv)
        self.sock = None
        return t

    def _connect(self):
        end = now() + 5
        while self.sock is None and now() < end:
            try:
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(self.sock_path)
                self.sock = s
                drain(s.makefile("r"))
            except OSError:
                time.sleep(0.01)
        if self.sock is None:
            raise RuntimeError("mpv: no IPC socket")

    def _send(self, command):
        self._connect()
        line = (json.dumps({"command": command}) + "\n").encode()
        t = now()
        self.sock.sendall(line)
        return t

    def seek(self, pos):
        return self._send(["seek", pos, "absolute"])

    def pause(self):
        return self._send(["set_property", "pause", True])

    def volume(self, level):
        return self._send(["set_property", "volume", level])

    def next(self):
        return self._send(["playlist-next"])

    def stop(self):
        try:
            if self.sock:
                self.sock.close()
        except OSError:
            pass
        super().stop()


class Mpd(Player):
    """MPD is a daemon: one private instance for the whole run; 'start' is `mpc play` on a loaded queue."""
    name = "mpd"
    controls = True
    daemon = None

    def setup(self):
        d = os.path.join(self.h.work, "mpd")
        music = os.path.join(d, "music")
        os.makedirs(music, exist_ok=True)
        for f in (self.h.wav,):
            dst = os.path.join(music, os.path.basename(f))
            if not os.path.exists(dst):
                shutil.copy(f, dst)
        self.sock_path = os.path.join(d, "socket")
        conf = os.path.join(d, "mpd.conf")
        with open(conf, "w") as c:
            c.write('music_directory "%s"\nplaylist_directory "%s"\ndb_file "%s"\nlog_file "%s"\n'
                    'pid_file "%s"\nbind_to_address "%s"\nauto_update "no"\n'
                    'audio_output {\n  type "pulse"\n  name "bench"\n  server "%s"\n  sink "%s"\n}\n'
                    % (music, d, os.path.join(d, "db"), os.path.join(d, "log"), os.path.join(d, "pid"),
                       self.sock_path, self.h.env["PULSE_SERVER"], self.h.rec.sink))
        try:  # a daemon left by an interrupted run of ours (its pid file, and it must be mpd)
            pid = int(open(os.path.join(d, "pid")).read().strip())
            if open("/proc/%d/comm" % pid).read().strip() == "mpd":
                os.kill(pid, signal.SIGTERM)
                time.sleep(0.5)
        except (OSError, ValueError):
            pass
        if os.path.exists(self.sock_path):
            os.unlink(self.sock_path)
        Mpd.daemon = subprocess.Popen(["mpd", "--no-daemon", conf], env=self.h.env,
                                      stdout=subprocess.DEVNULL, stderr=open(os.path.join(d, "stderr"), "w"))
        end = now() + 10
        while now() < end and not os.path.exists(self.sock_path):
            time.sleep(0.05)
        if not os.path.exists(self.sock_path):
            raise RuntimeError("mpd did not start (see %s)" % os.path.join(d, "log"))
        self.mpc("update", "--wait")
        self.mpc("clear")
        self.mpc("add", os.path.basename(self.h.wav))
        self.mpc("add", os.path.basename(self.h.wav))   # twice: `next` goes to the second
        self.mpc("volume", "100")

    def mpc(self, *args):
        return subprocess.run(["mpc", "-q", "--host", self.sock_path] + list(args), env=self.h.env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)

    def mpc_async(self, *args):
        t = now()
        p = subprocess.Popen(["mpc", "-q", "--host", self.sock_path] + list(args), env=self.h.env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        threading.Thread(target=p.wait, daemon=True).start()
        return t

    def start(self, path):
        if Mpd.daemon is None:
            self.setup()
        self.mpc("stop")
        self.mpc("volume", "100")
        return self.mpc_async("play", "1")

    def seek(self, pos):
        return self.mpc_async("seek", "%d" % int(pos))

    def pause(self):
        return self.mpc_async("pause")

    def volume(self, level):
        return self.mpc_async("volume", "%d" % int(level))

    def next(self):
        return self.mpc_async("next")

    def stop(self):
        self.mpc("stop")

    @staticmethod
    def shutdown():
        if Mpd.daemon and Mpd.daemon.poll() is None:
            Mpd.daemon.terminate()
            try:
                Mpd.daemon.wait(timeout=5)
            except subprocess.TimeoutExpired:
                Mpd.daemon.kill()


# ---------------------------------------------------------------- one session

class Harness:
    def __init__(self, args):
        self.args = args
        self.work = os.path.abspath(args.work)
        self.env = dict(os.environ, PULSE_SERVER=args.server)
        self.ours = args.ours
        self.wav, self.mp3 = make_files(self.work)
        self.rec = Recorder(self.env, self.work)
        self.env["PULSE_SINK"] = self.rec.sink
        self.env["SDL_AUDIODRIVER"] = "pulseaudio"
        self.rec.wait_for_frame(RATE // 10)

    def server_alive(self):
        try:
            return subprocess.run(["pactl", "info"], env=self.env, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, timeout=5).returncode == 0 and self.rec.thread.is_alive()
        except Exception:
            return False

    def wait_silent(self, seconds=0.15, timeout=3.0):
        """Waits until the last `seconds` of the recording are silent."""
        end = now() + timeout
        while now() < end:
            f = self.rec.frame_at(now()) - 200
            first, x = self.rec.samples(f - int(seconds * RATE), f)
            if len(x) >= int(seconds * RATE) - 200 and first_loud(first, x) is None:
                return True
            time.sleep(0.03)
        return False

    def wait_until(self, t):
        d = t - now()
        if d > 0:
            time.sleep(d)

    def session(self, player, path, full):
        """Plays `path` with `player`; returns {metric: ms} (None = not detected)."""
        out = {}
        self.wait_silent()
        t0 = player.start(path)
        f0 = self.rec.frame_at(t0)
        onset = None
        end = now() + 5
        while now() < end and onset is None:
            time.sleep(0.01)
            first, x = self.rec.samples(f0, self.rec.frames)
            onset = first_loud(first, x)
        out["first_sound"] = (self.rec.time_of(onset) - t0) * 1000 if onset is not None else None
        if onset is None or not full:
            player.stop()
            return out
        t_next = self.rec.time_of(onset) + 0.6
        seeks, gaps = [], []
        for target in SEEKS:
            self.wait_until(t_next)
            tc = player.seek(target)
            fc = self.rec.frame_at(tc)
            self.rec.wait_for_frame(fc + int(0.5 * RATE), 2)
            hit = onset_at_position(self.rec, fc, target, int(0.5 * RATE))
            seeks.append((self.rec.time_of(hit) - tc) * 1000 if hit is not None else None)
            stop = silence_onset(self.rec, fc, int(0.5 * RATE), hold=int(0.005 * RATE))
            if hit is not None and stop is not None and stop < hit:
                gaps.append(((self.rec.time_of(stop) - tc) * 1000, (hit - stop) / RATE * 1000))
            t_next = tc + 0.5
        out["seek"] = seeks
        out["seek_gap"] = gaps     # (old audio stops, ms after the command; silence before the new audio, ms)
        # volume 100 → 50: the first half-cycle below 85 %% of the level before the command
        self.wait_until(t_next)
        tc = player.volume(50)
        fc = self.rec.frame_at(tc)
        ref = level_before(self.rec, fc)
        self.rec.wait_for_frame(fc + int(0.4 * RATE), 2)
        hit = level_change(self.rec, fc, ref, int(0.4 * RATE)) if ref else None
        out["volume"] = (self.rec.time_of(hit) - tc) * 1000 if hit is not None else None
        # next track (the same chirp again): the command → the first sound of position 0 (400 Hz; the
        # first track is near 26 s, 3000 Hz, so the two cannot be confused)
        self.wait_until(tc + 0.4)
        tc = player.next()
        fc = self.rec.frame_at(tc)
        self.rec.wait_for_frame(fc + int(0.5 * RATE), 2)
        hit = onset_at_position(self.rec, fc, 0.0, int(0.5 * RATE))
        out["next"] = (self.rec.time_of(hit) - tc) * 1000 if hit is not None else None
        # pause: the end of sound
        self.wait_until(tc + 0.4)
        tc = player.pause()
        fc = self.rec.frame_at(tc)
        self.rec.wait_for_frame(fc + int(0.5 * RATE), 2)
        hit = silence_onset(self.rec, fc, int(0.5 * RATE))
        out["pause"] = (self.rec.time_of(hit) - tc) * 1000 if hit is not None else None
        player.stop()
        self.rec.discard_before(self.rec.frame_at(now()) - 2 * RATE)
        return out


def granted_latency(env, sink):
    """Buffer latency of the sink inputs on `sink` (µs) as pactl reports them, or None."""
    try:
        text = subprocess.run(["pactl", "list", "sink-inputs"], env=env, capture_output=True, text=True,
                              timeout=5).stdout
    except Exception:
        return None
    vals = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Buffer Latency:"):
            try:
                vals.append(float(line.split()[2]))
            except (IndexError, ValueError):
                pass
    return vals[0] if vals else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--ours", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--peers", default="paplay,ffplay,mpg123,mpv,mpd")
    args = ap.parse_args()
    sys.setswitchinterval(0.0002)   # the reader thread stamps blocks promptly even while we analyse
    h = Harness(args)
    notes = []
    classes = {"paplay": Paplay, "ffplay": Ffplay, "mpg123": Mpg123, "mpv": Mpv, "mpd": Mpd}
    binaries = {"paplay": "paplay", "ffplay": "ffplay", "mpg123": "mpg123", "mpv": "mpv", "mpd": "mpd"}
    peers = []
    for name in [p for p in args.peers.split(",") if p]:
        if not shutil.which(binaries[name]) or (name == "mpd" and not shutil.which("mpc")):
            notes.append("%s is not installed: not measured." % name)
            continue
        if name == "mpg123" and not os.path.exists(h.mp3):
            notes.append("mpg123: no MP3 test file (ffmpeg missing): not measured.")
            continue
        peers.append(classes[name](h))
    ours = Ours(h)
    results = {p.name: {"ours": [], "peer": []} for p in peers}
    failed = set()
    latency_us = None
    extra = {}
    server_lost = False
    try:
        for run in range(args.runs):
            for p in peers:
                if p.name in failed or server_lost:
                    continue
                path = h.mp3 if getattr(p, "mp3", False) else h.wav
                for who, player in (("ours", ours), ("peer", p)):
                    try:
                        r = h.session(player, path, p.controls)
                    except Exception as e:  # a player that breaks is a note, not a crash
                        player.stop()
                        if not h.server_alive():
                            server_lost = True
                            notes.append("The PulseAudio server was lost in run %d (%s, %s: %s): the figures are "
                                         "from the runs before." % (run + 1, p.name, who, e))
                        elif who == "peer":
                            failed.add(p.name)
                            notes.append("%s failed in run %d: %s: not measured further." % (p.name, run + 1, e))
                        else:
                            notes.append("ours failed in run %d (paired with %s): %s." % (run + 1, p.name, e))
                        break
                    results[p.name][who].append(r)
                    print("run %d %s/%s: %s" % (run + 1, p.name, who, json.dumps(r)), file=sys.stderr)
        Mpd.shutdown()
        # Where the time goes, measured: ours at a 20 ms target (seek and volume follow the buffer?) …
        if not server_lost:
            small = Ours(h)
            small.latency_ms = 20
            try:
                extra["small"] = [h.session(small, h.wav, True) for _ in range(3)]
            except Exception as e:
                small.stop()
                notes.append("ours with --latency 20 failed: %s." % e)
    finally:
        Mpd.shutdown()
    # … and the cost of starting the process at all: `--help` exits before any audio work.
    starts = []
    for _ in range(5):
        t = now()
        subprocess.run([args.ours, "--help"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        starts.append((now() - t) * 1000)
    extra["help_ms"] = statistics.median(starts)
    # … and the floor under it: a C program that links libavformat and does nothing.
    floor = start_up_floor(args.work, args.ours)
    if floor:
        extra["floor_ms"], extra["help_pair_ms"] = floor
    extra["libs"] = {}
    for name, path in (("ours", args.ours), ("paplay", shutil.which("paplay")), ("mpg123", shutil.which("mpg123"))):
        if path:
            try:
                text = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=10).stdout
                extra["libs"][name] = sum(1 for line in text.splitlines() if "=>" in line)
            except Exception:
                pass
    # the latency the server granted to ours (one short session, pactl while it plays)
    try:
        proc = subprocess.Popen([args.ours, "--quiet", "--output", "pulse", "--device", h.rec.sink, h.wav],
                                env=h.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.8)
        latency_us = granted_latency(h.env, h.rec.sink)
        proc.terminate()
        proc.wait(timeout=5)
    except Exception:
        pass
    h.rec.close()
    write_results(args, results, notes, latency_us, h, extra)


def start_up_floor(work, ours, pairs=9):
    """(median ms to start and exit a C program that only links libavformat,
    median ms of `ours --help`), alternating; None without a C compiler."""
    source = os.path.join(work, "floor.c")
    binary = os.path.join(work, "floor")
    with open(source, "w") as f:
        f.write("#include <libavformat/avformat.h>\nint main(void) { return avformat_version() == 0; }\n")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libavformat"], capture_output=True, text=True)
    for cc in ("cc", "gcc", "clang"):
        if shutil.which(cc) and flags.returncode == 0 and subprocess.run(
                [cc, "-O2", source, "-o", binary] + flags.stdout.split(), capture_output=True).returncode == 0:
            break
    else:
        return None
    floor, ours_ms = [], []
    for _ in range(pairs):
        for command, into in (([binary], floor), ([ours, "--help"], ours_ms)):
            t = now()
            subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            into.append((now() - t) * 1000)
    return statistics.median(floor), statistics.median(ours_ms)


def med(values):
    v = [x for x in values if x is not None]
    return statistics.median(v) if v else None


def rnd(x, nd=1):
    return None if x is None else round(x, nd)


def write_results(args, results, notes, latency_us, h, extra):
    rows = []
    headline = []
    metrics = [("first_sound", "process start → first sound"), ("seek", "seek → sound at the new position"),
               ("pause", "pause → silence"), ("volume", "volume 100→50 → level changes"),
               ("next", "next track → its first sound")]
    medians = {}
    for peer, r in results.items():
        for key, label in metrics:
            def collect(sessions):
                vals = []
                for s in sessions:
                    v = s.get(key)
                    if isinstance(v, list):
                        vals.extend(v)
                    else:
                        vals.append(v)
                return vals
            o, p = collect(r["ours"]), collect(r["peer"])
            if not any(x is not None for x in p) and key != "first_sound":
                continue
            mo, mp = med(o), med(p)
            missed = sum(1 for x in o + p if x is None)
            if missed:
                notes.append("%s, %s: %d of %d measurements not detected (left out of the medians)."
                             % (label, peer, missed, len(o) + len(p)))
            medians[(key, peer)] = (mo, mp)
            ratio = round(mo / mp, 2) if mo and mp else None
            target, met = None, None
            if ratio is not None and (key == "seek" or (key == "first_sound" and peer != "mpd")):
                target, met = "< 1.0", ratio < 1.0
            if key in LIMITS_MS and mo is not None:
                target, met = "ours ≤ %g ms" % LIMITS_MS[key], mo <= LIMITS_MS[key]
            name = peer if not (peer == "mpd" and key == "first_sound") else "mpd (mpc play, daemon running)"
            rows.append([label, name, rnd(mo), rnd(mp), ratio, target, met])
    # headlines: vs the fastest peer
    for key, label in (("first_sound", "First sound vs fastest peer"), ("seek", "Seek → sound vs fastest peer")):
        cands = [(mp, peer, mo) for (k, peer), (mo, mp) in medians.items()
                 if k == key and mp is not None and mo is not None and not (key == "first_sound" and peer == "mpd")]
        if cands:
            mp, peer, mo = min(cands)
            headline.append({"label": "%s (%s)" % (label, peer), "ratio": round(mo / mp, 2), "target": 1.0,
                             "lower_is_better": True})
    # Interaction at the 500 ms default buffer (issue 15): absolute targets, as ours ÷ target.
    for key, label in (("pause", "Pause → silence"), ("volume", "Volume change → heard"),
                       ("next", "Next track → sound")):
        limit = LIMITS_MS[key]
        v = med([x for r in results.values() for s in r["ours"] for x in [s.get(key)]])
        if v is not None:
            headline.append({"label": "%s vs %g ms (ours %.1f ms)" % (label, limit, v),
                             "ratio": round(v / limit, 3), "target": 1.0, "lower_is_better": True})
    granted = ("while ours plays at the default 500 ms target, pactl reports %.1f ms buffered in its stream (the sink "
                "input's buffer latency: what the server holds, i.e. the buffer a seek or volume change waits out)"
               % (latency_us / 1000) if latency_us else "the buffer the server holds for ours could not be read")
    method = (
        "A private PulseAudio 16 server gets a module-pipe-sink (float32, 48 kHz, 8 channels, "
        "use_system_clock_for_timing=yes) as the players' sink: it writes exactly what the server mixed, paced by "
        "the system clock, in 127-frame (2.6 ms) blocks, which is the resolution of every figure. We record it instead of the null sink's monitor because "
        "the monitor drops the start (up to a few hundred frames, as this project measured) of every new stream, "
        "which would bias time-to-first-sound. One Python harness reads the FIFO on a thread and stamps each block with "
        "CLOCK_MONOTONIC; a frame is heard at its block's arrival plus its offset in the block (as a device with no "
        "latency of its own would play it), and commands are stamped on the same clock just before they are "
        "written, so every figure is causal (a command can only change blocks mixed after it). The test signal is a 30 s "
        "phase-continuous chirp, 400 Hz + 100 Hz per second of position, at −6 dBFS, as 16-bit WAV (MP3 320k for "
        "mpg123; ours plays the same file as the peer it is paired with): the frequency heard (interpolated zero "
        "crossings over 4 cycles) tells the position. First sound: process start (Popen) → first sample above "
        "−40 dBFS; for MPD, a daemon, it is `mpc play` → first sound with the daemon already running, so it is "
        "reported but not a target. Seek: the command (ours: --control stdin JSON seek; mpv: JSON IPC seek "
        "absolute; MPD: mpc seek) → the first sample of the new position (targets 20, 8, 25 s per session). "
        "Pause: the command → the last sample above −40 dBFS before 50 ms of silence. Volume 100 → 50: the "
        "command → the first half-cycle whose peak falls below 85 %% of the level before it. Next track: every "
        "player has the chirp queued twice; the command (ours: JSON next; mpv: playlist-next; MPD: mpc next), "
        "sent near 26 s of the first, → the first sample of position 0 of the second. Each session plays "
        "one process (ours: --control stdin --tick 0, default --latency 500 ms); ours and each peer alternate, "
        "%d runs each; figures are medians in ms; ratio = ours ÷ peer, lower is better. Times exclude a real "
        "device's own latency (the same for every player); %s." % (args.runs, granted))
    data = {"part": "latency", "title": "Latency through PulseAudio", "method": method,
            "columns": ["Measure", "Peer", "ours (ms)", "peer (ms)", "ratio", "target", "met"],
            "rows": rows, "headline": headline, "notes": notes}
    for key, label in (("first_sound", "First sound"), ("seek", "Seek → sound")):
        ms = [(mp, peer, mo) for (k, peer), (mo, mp) in medians.items() if k == key and mp and mo
              and not (key == "first_sound" and peer == "mpd")]
        slower = [(peer, mo, mp) for mp, peer, mo in ms if mo >= mp]
        for peer, mo, mp in slower:
            notes.append("%s: target missed against %s: ours %.1f ms vs %.1f ms (%.1f ms, ×%.2f slower)."
                         % (label, peer, mo, mp, mo - mp, mo / mp))
        # Closer than half a sink block either way: neither is measurably faster.
        block = h.rec.block_frames()
        block_ms = block / RATE * 1000 if block else None
        for mp, peer, mo in ms:
            if block_ms and abs(mo - mp) < block_ms / 2:
                notes.append("%s against %s: ours %.1f ms vs %.1f ms, less than half a sink block apart (a block is %.1f ms): "
                             "a tie at this measurement's resolution, whichever way the ratio falls."
                             % (label, peer, mo, mp, block_ms))
    for peer, r in results.items():
        for who, sessions in (("ours", r["ours"]), (peer, r["peer"])):
            gaps = [g for s in sessions for g in s.get("seek_gap", [])]
            if gaps:
                notes.append("Seek, %s%s: the old audio stops %.1f ms after the command, then %.1f ms of silence "
                             "before the new position (medians of %d seeks)."
                             % (who, " (paired with %s)" % peer if who == "ours" else "",
                                statistics.median(g[0] for g in gaps), statistics.median(g[1] for g in gaps),
                                len(gaps)))
    fs = med([s.get("first_sound") for r in results.values() for s in r["ours"]])
    if fs is not None and extra.get("help_ms") is not None:
        libs = extra.get("libs", {})
        notes.append("First sound, ours: of the %.1f ms, %.1f ms is starting the process at all (`harmonia-play "
                     "--help`, start to exit, no audio work: dynamic linking of %s shared libraries, FFmpeg's "
                     "among them, and the Swift runtime)%s." % (
                         fs, extra["help_ms"], libs.get("ours", "?"),
                         "; paplay links %s, mpg123 %s" % (libs.get("paplay", "?"), libs.get("mpg123", "?"))
                         if libs.get("paplay") or libs.get("mpg123") else ""))
    if extra.get("floor_ms") is not None:
        notes.append("The floor for any program on Debian's FFmpeg: a C program that only links libavformat "
                     "(it calls avformat_version() and exits) takes %.1f ms to start and exit here, against "
                     "%.1f ms for `harmonia-play --help` in the same run (medians of 9, alternating). paplay "
                     "and mpg123 do not link FFmpeg; mpv and ffplay do, and ours starts sounding before them."
                     % (extra["floor_ms"], extra["help_pair_ms"]))
    small = extra.get("small") or []
    ours_all = [s for r in results.values() for s in r["ours"]]
    measures = (("seek → sound", lambda s: s.get("seek", [])), ("volume → level", lambda s: [s.get("volume")]),
                ("pause → silence", lambda s: [s.get("pause")]))
    figures = []
    for label, values in measures:
        at20 = med([x for s in small for x in values(s)])
        at_default = med([x for s in ours_all for x in values(s)])
        if at20 is None or at_default is None:
            continue
        # Follows the buffer when 25 times less buffer makes it clearly faster.
        follows = at20 < 0.6 * at_default
        figures.append("%s %.1f ms (%.1f ms at the default 500 ms: %s)"
                       % (label, at20, at_default, "follows the output buffer" if follows else "does not follow the buffer"))
    if figures:
        notes.append("Ours with --latency 20 (3 sessions): " + "; ".join(figures) + ".")
    write_table(data, args.out)


if __name__ == "__main__":
    main()
