#!/usr/bin/env python3
"""Heard position against what the sink received, for harmonia-play and mpv,
on the server PULSE_SERVER names (PulseAudio, or PipeWire through
pipewire-pulse).

Each player plays a counter signal (every frame names its own index: the
left sample its index modulo 30,000, the right sample the quotient, so a
recording that starts late still reads absolute frames) and is asked for its
position every 20 ms: harmonia-play `status` on its JSON control channel, mpv
`time-pos` on its IPC socket. The reference is a tap on the player's own
stream (`parec --monitor-stream`, a capture linked straight to the stream's
output, which on PipeWire takes each graph cycle in the same cycle as the
sink; on PulseAudio what the sink input rendered into the sink), every
fragment stamped on arrival. Its timeline is the lower envelope of (arrival
time, newest frame): the line of slope RATE that 98 % of the fragments arrive
after. The error of a reply is position × RATE − tap(t) at the midpoint of its
round trip, in ms: negative when the player reports less than the sink had.

The tap is a node of the graph too, and on PipeWire the graph's cycle is the
shortest latency any node asks for: `--tap-latency 10` shortens it (another
client with a short latency, as a browser or a call has), 100 leaves the
player's own. On PipeWire the cycle in force is read from `pw-profiler` during
the run (its median period).

Usage: position_error.py HARMONIA_PLAY [--sink NAME] [--seconds S] [--runs N]
           [--tap-latency MS] [--pipewire-runtime DIR]
Prints one JSON object: per player the median and extremes of every run's
median error, and every run's figures.
"""
import argparse, json, os, shutil, socket, statistics, struct, subprocess, tempfile, threading, time

RATE = 48000


def counter_wav(path, seconds):
    frames = int(RATE * seconds)
    data = bytearray()
    for i in range(frames):
        data += struct.pack("<ff", (i % 30000 + 1) / 32768, -(i // 30000 + 1) / 32768)
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE")
        f.write(b"fmt " + struct.pack("<IHHIIHH", 16, 3, 2, RATE, RATE * 8, 8, 32))
        f.write(b"data" + struct.pack("<I", len(data)) + data)


class Tap:
    """parec on one sink input's output: (arrival, newest frame index) pairs."""

    def __init__(self, sink_input, latency_ms):
        self.process = subprocess.Popen(["parec", "--raw", f"--latency-msec={latency_ms}", f"--monitor-stream={sink_input}",
                                         "--format=float32le", f"--rate={RATE}", "--channels=2"],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.arrivals = []
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        pending = b""
        while True:
            chunk = self.process.stdout.read1(65536)
            if not chunk:
                return
            now = time.monotonic()
            pending += chunk
            whole = len(pending) // 8 * 8
            block, pending = pending[:whole], pending[whole:]
            newest = None
            for (left, right) in struct.iter_unpack("<ff", block):
                low, high = round(left * 32768) - 1, round(-right * 32768) - 1
                if 0 <= low < 30000 and 0 <= high:
                    newest = high * 30000 + low
            if newest is not None:
                self.arrivals.append((now, newest))

    def stop(self):
        self.process.kill()
        self.process.wait()

    def origin(self):
        """t0 such that frame f reached the tap at t0 + f / RATE (lower envelope)."""
        offsets = sorted(t - f / RATE for t, f in self.arrivals)
        if len(offsets) < 20:
            raise RuntimeError("the tap recorded too little")
        return offsets[len(offsets) // 50]


def sink_input_of(sink, before, timeout=10.0):
    """The index of the sink input that appeared on `sink` since `before`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        inputs = json.loads(subprocess.run(["pactl", "-f", "json", "list", "sink-inputs"], capture_output=True, text=True).stdout or "[]")
        sinks = json.loads(subprocess.run(["pactl", "-f", "json", "list", "sinks"], capture_output=True, text=True).stdout or "[]")
        ours = {s["index"] for s in sinks if s.get("name") == sink}
        fresh = [i["index"] for i in inputs if i.get("sink") in ours and i["index"] not in before]
        if fresh:
            return fresh[-1]
        time.sleep(0.02)
    raise RuntimeError("the player's stream never appeared")


def existing_inputs():
    inputs = json.loads(subprocess.run(["pactl", "-f", "json", "list", "sink-inputs"], capture_output=True, text=True).stdout or "[]")
    return {i["index"] for i in inputs}


class Harmonia:
    def __init__(self, binary, sink, wav):
        self.process = subprocess.Popen([binary, "--control", "stdin", "--quiet", "--no-mpris", "--device", sink, wav],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.n = 0

    def position(self):
        self.n += 1
        self.process.stdin.write(json.dumps({"message_id": self.n, "command": "status"}) + "\n")
        self.process.stdin.flush()
        while True:
            line = self.process.stdout.readline()
            if not line:
                return None
            reply = json.loads(line)
            if reply.get("message_id") == self.n:
                value = (reply.get("result") or {}).get("position")
                return value if isinstance(value, (int, float)) else None

    def stop(self):
        try:
            self.process.stdin.write(json.dumps({"message_id": 0, "command": "quit"}) + "\n")
            self.process.stdin.flush()
            self.process.wait(timeout=5)
        except Exception:
            self.process.kill()
            self.process.wait()


class Mpv:
    def __init__(self, sink, wav):
        self.folder = tempfile.mkdtemp(prefix="position-mpv-")
        path = os.path.join(self.folder, "ipc")
        self.process = subprocess.Popen(["mpv", "--no-config", "--really-quiet", "--no-video", "--ao=pulse",
                                         f"--audio-device=pulse/{sink}", f"--input-ipc-server={path}", wav],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not os.path.exists(path):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("mpv did not start")
            time.sleep(0.01)
        self.socket = socket.socket(socket.AF_UNIX)
        self.socket.connect(path)
        self.lines = self.socket.makefile("rb")
        self.n = 0

    def position(self):
        self.n += 1
        self.socket.sendall(json.dumps({"command": ["get_property", "time-pos"], "request_id": self.n}).encode() + b"\n")
        while True:
            line = self.lines.readline()
            if not line:
                return None
            reply = json.loads(line)
            if reply.get("request_id") == self.n:
                value = reply.get("data")
                return value if isinstance(value, (int, float)) else None

    def stop(self):
        self.process.kill()
        self.process.wait()
        self.socket.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def graph_cycle_ms(runtime, seconds):
    """The median period of PipeWire's graph over `seconds`, from pw-profiler."""
    if not runtime or not shutil.which("pw-profiler"):
        return None
    folder = tempfile.mkdtemp(prefix="position-profiler-")
    log = os.path.join(folder, "profiler.log")
    profiler = subprocess.Popen(["env", f"PIPEWIRE_RUNTIME_DIR={runtime}", "pw-profiler", "-o", log],
                                cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    profiler.terminate()
    profiler.wait()
    periods = []
    try:
        with open(log) as f:
            for line in f:
                fields = line.split("\t")
                if len(fields) > 3 and fields[3].strip().isdigit():
                    periods.append(int(fields[3]))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return round(statistics.median(periods) / 1000, 2) if periods else None


def measure(make_player, sink, seconds, tap_latency, runtime):
    wav = tempfile.mktemp(suffix=".wav")
    counter_wav(wav, seconds + 2)
    before = existing_inputs()
    player = make_player(wav)
    tap = None
    try:
        tap = Tap(sink_input_of(sink, before), tap_latency)
        time.sleep(1.0)
        cycle = {}
        profiler = threading.Thread(target=lambda: cycle.setdefault("ms", graph_cycle_ms(runtime, 2.0)), daemon=True)
        profiler.start()
        samples = []
        deadline = time.monotonic() + seconds - 1.5
        while time.monotonic() < deadline:
            sent = time.monotonic()
            position = player.position()
            received = time.monotonic()
            if position is not None:
                samples.append(((sent + received) / 2, position * RATE))
            time.sleep(0.02)
        profiler.join()
    finally:
        player.stop()
        if tap:
            tap.stop()
        os.unlink(wav)
    t0 = tap.origin()
    errors = [(heard - (t - t0) * RATE) / RATE * 1000 for (t, heard) in samples]
    return {"samples": len(errors), "median_ms": round(statistics.median(errors), 1),
            "min_ms": round(min(errors), 1), "max_ms": round(max(errors), 1), "graph_cycle_ms": cycle.get("ms"),
            # About four errors a second, in order: how the error moves within the run.
            "trace_ms": [round(e, 1) for e in errors[::max(1, int(len(errors) / max(seconds - 1.5, 1) / 4))]]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("harmonia_play")
    parser.add_argument("--sink", default="harmonia_null")
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--tap-latency", type=int, default=100)
    parser.add_argument("--pipewire-runtime")
    args = parser.parse_args()
    players = {"harmonia-play": lambda wav: Harmonia(args.harmonia_play, args.sink, wav)}
    if shutil.which("mpv"):
        players["mpv"] = lambda wav: Mpv(args.sink, wav)
    runs = {name: [] for name in players}
    for _ in range(args.runs):  # interleaved
        for name, make in players.items():
            runs[name].append(measure(make, args.sink, args.seconds, args.tap_latency, args.pipewire_runtime))
    server = subprocess.run(["pactl", "info"], capture_output=True, text=True).stdout
    summary = {"server": next((line.split(":", 1)[1].strip() for line in server.splitlines() if line.startswith("Server Name")), "?"),
               "tap_latency_ms": args.tap_latency}
    for name, results in runs.items():
        medians = [r["median_ms"] for r in results]
        summary[name] = {"median_ms": statistics.median(medians), "runs": results}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
