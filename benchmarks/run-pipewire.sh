#!/usr/bin/env bash
# PipeWire beside PulseAudio: first sound (harmonia-play's engine and its exec,
# paplay, pw-play, mpv) and the heard position against a tap on the player's
# own stream (harmonia-play and mpv), on the bench's private PulseAudio
# ($PULSE_SERVER, from make bench) and on a private PipeWire + WirePlumber +
# pipewire-pulse started here (Tests/pipewire-test-server.sh) — issue 21,
# specs/realtime.md §PipeWire -> benchmarks/results/pipewire.json.
# Env: RUNS (first sound, 7), POSITION_RUNS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
. benchmarks/release-build.sh
ours=$(release_build harmonia-play)
work=$root/benchmarks/.work/pipewire
mkdir -p "$work" benchmarks/results
[ -n "${PULSE_SERVER:-}" ] || { echo "run-pipewire: PULSE_SERVER must name the bench's PulseAudio (make bench sets it)" >&2; exit 1; }
pw_dir=$(mktemp -d /tmp/harmonia-bench-pipewire.XXXXXX)
cleanup() { bash "$root/Tests/pipewire-test-server.sh" stop "$pw_dir" >/dev/null 2>&1 || true; rm -rf "$pw_dir"; }
trap cleanup EXIT
bash "$root/Tests/pipewire-test-server.sh" start "$pw_dir"

# A 2 s 440 Hz sine at 48 kHz, the file every player opens for first sound.
/usr/bin/python3 - "$work/sine.wav" <<'PY'
import math, struct, sys
rate, frames = 48000, 96000
data = b"".join(struct.pack("<hh", s, s) for s in (int(8000 * math.sin(2 * math.pi * 440 * i / rate)) for i in range(frames)))
with open(sys.argv[1], "wb") as f:
    f.write(b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 2, rate, rate * 4, 4, 16)
            + b"data" + struct.pack("<I", len(data)) + data)
PY

pa=$PULSE_SERVER pw=unix:$pw_dir/native
fs_runs=${RUNS:-7} pos_runs=${POSITION_RUNS:-3}
PULSE_SERVER=$pa /usr/bin/python3 benchmarks/latency/first_sound.py "$ours" "$work/sine.wav" --runs "$fs_runs" > "$work/first-pa.json"
PULSE_SERVER=$pw /usr/bin/python3 benchmarks/latency/first_sound.py "$ours" "$work/sine.wav" --runs "$fs_runs" \
  --pipewire-runtime "$pw_dir/runtime" > "$work/first-pw.json"
PULSE_SERVER=$pa /usr/bin/python3 benchmarks/latency/position_error.py "$ours" --runs "$pos_runs" --tap-latency 10 > "$work/pos-pa.json"
for tap in 10 100; do
  PULSE_SERVER=$pw /usr/bin/python3 benchmarks/latency/position_error.py "$ours" --runs "$pos_runs" --tap-latency "$tap" \
    --pipewire-runtime "$pw_dir/runtime" > "$work/pos-pw-$tap.json"
done
/usr/bin/python3 benchmarks/latency/pipewire_report.py "$work" > benchmarks/results/pipewire.json
echo "run-pipewire: wrote benchmarks/results/pipewire.json" >&2
