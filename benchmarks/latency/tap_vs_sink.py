#!/usr/bin/env python3
"""Does a tap on the player's stream deliver a frame when the sink receives it?
One run on the server PULSE_SERVER names, sink harmonia_null: harmonia-play
plays a counter signal; its position's error against a tap on its stream
(`parec --monitor-stream`, lower envelope of arrivals) is measured over 100
`status` replies; then `pause`, and the sink's monitor shows how many frames
past the position at the pause ever sounded. A pause cannot unplay what the
sink had received, so if fewer frames sounded than the tap put the sink
ahead of the position, the tap delivers frames before the sink receives them
(specs/realtime.md §PipeWire (through pipewire-pulse)).

Usage: tap_vs_sink.py TAP_LATENCY_MS HARMONIA_PLAY   (prints one JSON line)
"""
import os, sys, time, json, subprocess, tempfile, threading, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import position_error as pe
lat = int(sys.argv[1]); binary = sys.argv[2]
wav = tempfile.mktemp(suffix=".wav"); pe.counter_wav(wav, 10)
class Rec(pe.Tap):
    def __init__(self, args):
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.arrivals = []
        threading.Thread(target=self.read, daemon=True).start()
mon = Rec(["parec", "--raw", f"--latency-msec={lat}", "--device=harmonia_null.monitor", "--format=float32le", "--rate=48000", "--channels=2"])
time.sleep(0.5)
before = pe.existing_inputs()
p = subprocess.Popen([binary, "--control", "stdin", "--quiet", "--no-mpris", "--device", "harmonia_null", wav], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
tap = Rec(["parec", "--raw", f"--latency-msec={lat}", f"--monitor-stream={pe.sink_input_of('harmonia_null', before)}", "--format=float32le", "--rate=48000", "--channels=2"])
def ask(n, cmd):
    p.stdin.write(json.dumps({"message_id": n, "command": cmd}) + "\n"); p.stdin.flush()
    while True:
        r = json.loads(p.stdout.readline())
        if r.get("message_id") == n: return r
time.sleep(2.5)
samples = []
for n in range(10, 110):
    s = time.monotonic(); r = ask(n, "status"); e = time.monotonic()
    samples.append(((s + e) / 2, r["result"]["position"] * 48000)); time.sleep(0.02)
at_pause = ask(200, "status")["result"]["position"] * 48000
ask(201, "pause")
time.sleep(1.0)
ask(0, "quit"); p.wait()
time.sleep(0.3); tap.stop(); mon.stop(); os.unlink(wav)
t0 = tap.origin()
err = statistics.median((h - (t - t0) * 48000) / 48 for t, h in samples)
last = max(f for _, f in mon.arrivals)
print(json.dumps({"tap_ms": lat, "position_minus_tap_ms": round(err, 1), "tap_claims_sink_ahead_frames": round(-err * 48),
                  "played_past_pause_position_frames": round(last - at_pause)}))
