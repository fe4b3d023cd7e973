#!/usr/bin/env bash
# Footprint: CPU time (player + PulseAudio server) and peak RSS over 20 s of
# real-time playback of a 10-minute FLAC and MP3, harmonia-play vs mpv and MPD
# (benchmarks/footprint/footprint.py), each run on a new private PulseAudio.
# Writes benchmarks/results/footprint.json. Env: FOOTPRINT_SECONDS (20), FOOTPRINT_ROUNDS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/footprint/common.sh
release_harmonia_play
flac=$(make_flac footprint-10min.flac)
mp3=$(make_mp3 "$flac" footprint-10min.mp3)
# Every run on a new private PulseAudio of its own (--fresh-server).
python3 benchmarks/footprint/footprint.py --ours "$HARMONIA_PLAY" --file "$flac" --mp3 "$mp3" \
  --fresh-server Tests/pulse-test-server.sh \
  --seconds "${FOOTPRINT_SECONDS:-20}" --rounds "${FOOTPRINT_ROUNDS:-3}" \
  --work benchmarks/.work --out benchmarks/results/footprint.json
