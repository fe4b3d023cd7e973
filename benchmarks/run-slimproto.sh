#!/usr/bin/env bash
# Squeezebox player (issue 40) beside squeezelite (Debian's squeezelite-pa),
# driven by aioslimproto on one PulseAudio null sink
# (benchmarks/slimproto/slimproto_bench.py) -> benchmarks/results/slimproto.json:
# the offset between two members of a group (ours+ours, ours+squeezelite,
# squeezelite+squeezelite) at the start and over a minute (a burst every
# 10 s), the first sound after `strm s` with autostart
# (ours minus squeezelite's, sent at one moment), and each player's steady
# CPU and resident memory while playing (ratios from the same run), and
# ours alone started at a time (unpause at T): how far from T its first
# frame is heard, over 2×RUNS (at least 10) starts; ours' first sound after
# `strm s` taken apart from its debug lines (part timeline); with PARTS
# including clocks, each pair on two pipe sinks whose clocks run 500 ppm apart.
# Env: RUNS (5), PARTS (start,timeline,sync,minute,footprint).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/footprint/common.sh

dpkg-query -W -f='${Status}' squeezelite-pa 2>/dev/null | grep -q "install ok installed" ||
  { echo "run-slimproto.sh: squeezelite-pa is missing (apt-get install squeezelite-pa)" >&2; exit 1; }
# The server: aioslimproto in the tests' virtual environment (make slimproto-server).
make --no-print-directory slimproto-server >&2
release_harmonia_play
ensure_pulse slimproto
trap stop_own_pulse EXIT
timeout 1800 .build/python-slimproto/bin/python3 benchmarks/slimproto/slimproto_bench.py \
  --ours "$HARMONIA_PLAY" --runs "${RUNS:-5}" --parts "${PARTS:-start,timeline,sync,minute,footprint}" \
  --out "$RESULTS/slimproto.json"
