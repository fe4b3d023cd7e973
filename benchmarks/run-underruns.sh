#!/usr/bin/env bash
# Underruns of harmonia-play at 10, 20 and 50 ms target latency while busy
# loops load every core (benchmarks/footprint/underruns.py).
# Writes benchmarks/results/underruns.json. Env: UNDERRUNS_SECONDS (20), UNDERRUNS_ROUNDS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/footprint/common.sh
release_harmonia_play
flac=$(make_flac footprint-10min.flac)
ensure_pulse underruns
trap stop_own_pulse EXIT
python3 benchmarks/footprint/underruns.py --ours "$HARMONIA_PLAY" --file "$flac" \
  --seconds "${UNDERRUNS_SECONDS:-20}" --rounds "${UNDERRUNS_ROUNDS:-3}" \
  --out benchmarks/results/underruns.json
