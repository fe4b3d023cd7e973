#!/usr/bin/env bash
# Measures what PA_STREAM_VARIABLE_RATE and pa_stream_update_sample_rate do on
# the tests' private PulseAudio server (a float32 48 kHz null sink), for
# specs/services.md §Crossfade ("Not on PulseAudio"). Not part of make test
# or make bench: about 35 s of real time. Needs gcc, libpulse-dev,
# pulseaudio-utils (parec) and python3-numpy.
#   rate_probe write|read MS   2 s of 1 kHz at 44.1 kHz, then 2 s of 1 kHz at
#                              48 kHz; the rate changed when the first 48 kHz
#                              frame is written, or when the server's read
#                              index reaches it (polled every 2 ms); MS: tlength
#   same_probe fixed|var       1 s of noise at the sink's rate, with or without
#                              PA_STREAM_VARIABLE_RATE
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/harmonia-variable-rate.XXXXXX)
trap 'bash "$here/../../Tests/pulse-test-server.sh" stop "$work/pa"; rm -rf "$work"' EXIT
gcc -O1 -o "$work/rate_probe" "$here/rate_probe.c" -lpulse -lm
gcc -O1 -o "$work/same_probe" "$here/same_probe.c" -lpulse
bash "$here/../../Tests/pulse-test-server.sh" start "$work/pa"
export PULSE_SERVER="unix:$work/pa/native"
cd "$work"
record() {  # record CHANNELS FILE COMMAND...: the monitor while COMMAND plays
  local channels=$1 file=$2; shift 2
  parec -d harmonia_null.monitor --format=float32le --rate=48000 --channels="$channels" --latency-msec=10 >"$file" &
  local recorder=$!
  sleep 0.3  # the recorder running before the probe starts (a measurement tool, not a test)
  "$@"
  sleep 0.3
  kill "$recorder"; wait "$recorder" 2>/dev/null || true
}
for mode in write read; do
  for latency in 500 50; do
    echo "== rate change on $mode, tlength asked $latency ms"
    record 1 "rate-$mode-$latency.raw" ./rate_probe "$mode" "$latency"
    python3 "$here/analyse.py" rate "rate-$mode-$latency.raw"
  done
done
for mode in fixed var; do
  echo "== 48 kHz on the 48 kHz sink, $mode rate"
  record 2 "same-$mode.raw" ./same_probe "$mode"
  python3 "$here/analyse.py" same "same-$mode.raw"
done
