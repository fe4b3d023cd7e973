#!/usr/bin/env python3
"""Heard position against the sink's monitor, on the server PULSE_SERVER
names (PulseAudio, or PipeWire through pipewire-pulse).

harmonia-play plays a counter signal (each frame's sample names its index)
and answers `status` on its JSON control channel every 20 ms; parec records
the sink's monitor in 10 ms fragments, each stamped on arrival. The monitor's
timeline is the lower envelope of (arrival time, last frame index): the line
of slope RATE that 98 % of the fragments arrive after. The error of each status reply
is position x RATE - monitor(t) at the midpoint of its round trip. On PipeWire
the monitor trails the sink by one graph cycle (a recorder linked straight to
the stream sees every frame a cycle earlier), which this does not know: the
error against what the sink received is the figure less that cycle.

Usage: position_error.py HARMONIA_PLAY [--sink NAME] [--seconds S] [PLAYER-OPTIONS...]
Prints one JSON object: the median and extremes of the error in ms.
"""
import argparse, json, os, statistics, struct, subprocess, sys, tempfile, threading, time

RATE = 48000


def counter_wav(path, seconds):
    frames = int(RATE * seconds)
    data = bytearray()
    for i in range(frames):
        v = ((i % 30000) + 1) / 32768
        data += struct.pack("<ff", v, -v)
    with open(path, "wb") as f:
        f.write(b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVE")
        f.write(b"fmt " + struct.pack("<IHHIIHH", 16, 3, 2, RATE, RATE * 8, 8, 32))
        f.write(b"data" + struct.pack("<I", len(data)) + data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("harmonia_play")
    parser.add_argument("--sink", default="harmonia_null")
    parser.add_argument("--seconds", type=float, default=6)
    parser.add_argument("player_options", nargs="*")
    args = parser.parse_args()
    wav = tempfile.mktemp(suffix=".wav")
    counter_wav(wav, args.seconds + 2)

    parec = subprocess.Popen(["parec", "--raw", "--latency-msec=10", f"--device={args.sink}.monitor",
                              "--format=float32le", f"--rate={RATE}", "--channels=2"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    arrivals = []  # (time, frames recorded so far, last counter index seen or None)
    state = {"frames": 0, "last": None, "wraps": 0, "prev": None}

    def reader():
        pending = b""
        while True:
            chunk = parec.stdout.read1(65536)
            if not chunk:
                return
            now = time.monotonic()
            pending += chunk
            whole = len(pending) // 8 * 8
            block, pending = pending[:whole], pending[whole:]
            for (left, _) in struct.iter_unpack("<ff", block):
                state["frames"] += 1
                if left > 0:
                    c = round(left * 32768) - 1
                    if state["prev"] is not None and c < state["prev"]:
                        state["wraps"] += 1
                    state["prev"] = c
                    state["last"] = state["wraps"] * 30000 + c
            arrivals.append((now, len(block) // 8, state["last"]))

    threading.Thread(target=reader, daemon=True).start()
    while not arrivals:
        time.sleep(0.01)
    time.sleep(0.5)

    player = subprocess.Popen([args.harmonia_play, "--control", "stdin", "--quiet", "--device", args.sink]
                              + args.player_options + [wav],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    samples = []
    time.sleep(1.0)
    deadline = time.monotonic() + args.seconds - 1.5
    n = 0
    while time.monotonic() < deadline:
        n += 1
        sent = time.monotonic()
        player.stdin.write(json.dumps({"message_id": n, "command": "status"}) + "\n")
        player.stdin.flush()
        while True:
            line = player.stdout.readline()
            if not line:
                break
            reply = json.loads(line)
            if reply.get("message_id") == n:
                break
        received = time.monotonic()
        position = (reply.get("result") or {}).get("position")
        if isinstance(position, (int, float)):
            samples.append(((sent + received) / 2, position * RATE))
        time.sleep(0.02)
    player.stdin.write(json.dumps({"message_id": 0, "command": "quit"}) + "\n")
    player.stdin.flush()
    player.wait(timeout=5)
    parec.kill()
    os.unlink(wav)

    # The monitor's timeline: frame index f delivered by time t, lower envelope.
    points = [(t, last) for (t, _, last) in arrivals if last is not None]
    # A low percentile, not the minimum: one fragment whose counter was
    # misread (a wrap at the start) would otherwise shift the whole line.
    offsets = sorted(t - f / RATE for t, f in points)
    t0 = offsets[len(offsets) // 50]
    server = subprocess.run(["pactl", "info"], capture_output=True, text=True).stdout
    on_pipewire = "PipeWire" in server
    errors = [(heard - (t - t0) * RATE) / RATE * 1000 for (t, heard) in samples]
    print(json.dumps({
        "server": "PipeWire" if on_pipewire else "PulseAudio",
        "samples": len(errors),
        "error_ms": {"median": round(statistics.median(errors), 1), "min": round(min(errors), 1),
                     "max": round(max(errors), 1)},
    }))


if __name__ == "__main__":
    main()
