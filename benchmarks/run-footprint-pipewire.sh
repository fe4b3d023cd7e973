#!/usr/bin/env bash
# Footprint on PipeWire: the footprint part again (benchmarks/footprint/footprint.py),
# on a private PipeWire + WirePlumber + pipewire-pulse started here for each run
# (Tests/pipewire-test-server.sh): CPU time of player + server (pipewire,
# pipewire-pulse and WirePlumber together) in steady playback of a 10-minute
# FLAC and MP3, harmonia-play vs MPD (and mpv when installed), and peak RSS.
# Writes benchmarks/results/footprint-pipewire.json.
# Env: FOOTPRINT_SECONDS (20), FOOTPRINT_ROUNDS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
. benchmarks/footprint/common.sh
command -v pipewire-pulse >/dev/null || { echo "run-footprint-pipewire: pipewire-pulse is not installed (make test installs it)" >&2; exit 1; }
release_harmonia_play
flac=$(make_flac footprint-10min.flac)
mp3=$(make_mp3 "$flac" footprint-10min.mp3)
# Every run on a new private PipeWire of its own (--fresh-server).
python3 benchmarks/footprint/footprint.py --ours "$HARMONIA_PLAY" --file "$flac" \
  --fresh-server "$root/Tests/pipewire-test-server.sh" \
  --mp3 "$mp3" --seconds "${FOOTPRINT_SECONDS:-20}" --rounds "${FOOTPRINT_ROUNDS:-3}" \
  --work benchmarks/.work --out benchmarks/results/footprint-pipewire.json --part footprint-pipewire
