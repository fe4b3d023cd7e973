#!/usr/bin/env bash
# Offline copies (issue 30): replay of a 10-minute FLAC from the offline store
# vs the same file played locally (first sound, CPU time), and
# `harmonia-play offline add` vs `curl -o` from the same local HTTP server
# (benchmarks/offline/offline_bench.py) -> benchmarks/results/offline.json.
# Env: RUNS (5), OFFLINE_SECONDS (20).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/footprint/common.sh
command -v curl >/dev/null || { echo "run-offline.sh: curl is missing (apt-get install curl)" >&2; exit 1; }
release_harmonia_play
flac=$(make_flac footprint-10min.flac)
ensure_pulse offline
trap stop_own_pulse EXIT
/usr/bin/python3 benchmarks/offline/offline_bench.py --ours "$HARMONIA_PLAY" --file "$flac" \
  --runs "${RUNS:-5}" --seconds "${OFFLINE_SECONDS:-20}" --work "$WORK/offline" --out "$RESULTS/offline.json"
