#!/usr/bin/env python3
"""Time to first sound: from a player's exec to its first non-silent frame
on the sink, for harmonia-play and paplay (and mpv where installed), on the
sound server PULSE_SERVER names (PulseAudio, or PipeWire's pipewire-pulse);
on PipeWire also for pw-play, a native PipeWire client (--pipewire-runtime
names the folder of the server's pipewire-0 socket).

The sink's monitor is recorded by parec in 10 ms fragments from before the
player starts; each fragment is stamped with the monotonic time it arrived.
The first sound is the arrival of the first fragment holding a non-zero
sample, less the exec time. The monitor's own delay (a fragment; on PipeWire
one graph cycle) is the same for every player, so the ratio between two
players in one run is the figure to read; the absolute values include it.

"harmonia-play engine" is the engine alone, as an app embedding it (or
`serve`) has it: a player already running with `--control unix:`, the file
queued; the clock starts when `play` is written to its socket.

Usage: first_sound.py HARMONIA_PLAY FILE.wav [--runs N] [--sink NAME] [--pipewire-runtime DIR]
Prints one JSON object: medians and every run, in milliseconds.
"""
import argparse, json, os, shutil, socket, statistics, subprocess, tempfile, threading, time

RATE, CHANNELS = 48000, 2
FRAGMENT = RATE // 100 * CHANNELS * 4


def first_sound(command, sink, timeout=10.0):
    parec = subprocess.Popen(["parec", "--raw", "--latency-msec=10", f"--device={sink}.monitor",
                              "--format=float32le", f"--rate={RATE}", f"--channels={CHANNELS}"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    arrivals = []  # (monotonic time, loud)
    started = threading.Event()

    def reader():
        while True:
            chunk = parec.stdout.read1(FRAGMENT) if hasattr(parec.stdout, "read1") else parec.stdout.read(FRAGMENT)
            if not chunk:
                return
            loud = any(b != 0 for b in chunk)
            arrivals.append((time.monotonic(), loud))
            started.set()

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    try:
        if not started.wait(timeout):
            raise RuntimeError("the monitor recorded nothing")
        time.sleep(0.5)  # the monitor's start-up is over
        if callable(command):
            player = command()  # ready; it sounds when told
            begin = time.monotonic()
            player.go()
        else:
            begin = time.monotonic()
            player = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = begin + timeout
        heard = None
        while heard is None and time.monotonic() < deadline:
            for stamp, loud in list(arrivals):
                if loud and stamp >= begin:
                    heard = stamp
                    break
            time.sleep(0.002)
        player.kill()
        player.wait()
        if heard is None:
            raise RuntimeError(f"no sound within {timeout} s from {command[0]}")
        return (heard - begin) * 1000
    finally:
        parec.kill()
        parec.wait()


class RunningEngine:
    """harmonia-play with --control unix:, started and given the file before the clock starts."""

    def __init__(self, binary, sink, file):
        self.folder = tempfile.mkdtemp(prefix="first-sound-")
        path = os.path.join(self.folder, "control")
        self.process = subprocess.Popen([binary, "--quiet", "--no-mpris", "--device", sink, "--control", f"unix:{path}"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while not os.path.exists(path):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise RuntimeError("the engine did not start")
            time.sleep(0.01)
        self.socket = socket.socket(socket.AF_UNIX)
        self.socket.connect(path)
        self.lines = self.socket.makefile("rb")
        self.request(b'{"message_id": 1, "command": "queue/add", "args": {"uri": %s}}' % json.dumps(os.path.abspath(file)).encode())

    def request(self, line):
        self.socket.sendall(line + b"\n")
        while b'"message_id"' not in self.lines.readline():
            pass

    def go(self):
        self.socket.sendall(b'{"message_id": 2, "command": "play"}\n')

    def kill(self):
        self.process.kill()

    def wait(self):
        self.process.wait()
        self.socket.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("harmonia_play")
    parser.add_argument("file")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--sink", default="harmonia_null")
    parser.add_argument("--pipewire-runtime")
    args = parser.parse_args()
    players = {
        "harmonia-play": [args.harmonia_play, "--quiet", "--device", args.sink, args.file],
        "harmonia-play engine": lambda: RunningEngine(args.harmonia_play, args.sink, args.file),
        "paplay": ["paplay", "-d", args.sink, args.file],
    }
    if shutil.which("mpv"):
        players["mpv"] = ["mpv", "--no-config", "--really-quiet", "--ao=pulse", f"--audio-device=pulse/{args.sink}", args.file]
    if args.pipewire_runtime and shutil.which("pw-play"):
        players["pw-play"] = ["env", f"PIPEWIRE_RUNTIME_DIR={args.pipewire_runtime}", "pw-play", "--target", args.sink, args.file]
    results = {name: [] for name in players}
    for _ in range(args.runs):  # interleaved, so drift hits every player alike
        for name, command in players.items():
            results[name].append(round(first_sound(command, args.sink), 1))
    summary = {name: {"median_ms": statistics.median(runs), "runs_ms": runs} for name, runs in results.items()}
    server = subprocess.run(["pactl", "info"], capture_output=True, text=True).stdout
    summary["server"] = next((line.split(":", 1)[1].strip() for line in server.splitlines() if line.startswith("Server Name")), "?")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
