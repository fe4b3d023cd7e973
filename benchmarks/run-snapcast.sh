#!/usr/bin/env bash
# Snapcast: CPU time of harmonia-play playing a 30 s 44.1 kHz FLAC in real time
# to a private snapserver (--output snapcast://, resampled to 48 kHz by us),
# against the same player on PulseAudio (--output pulse) and MPD 0.23's fifo
# output into the same kind of snapserver (benchmarks/snapcast/snapcast_bench.py)
# -> benchmarks/results/snapcast.json. Env: RUNS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/footprint/common.sh
for tool in /usr/bin/snapserver /usr/bin/mpd; do
  [ -x "$tool" ] || { echo "run-snapcast.sh: $tool is missing (apt-get install snapserver mpd)" >&2; exit 1; }
done
release_harmonia_play
# The same music as footprint's (a chord with tremolo over quiet pink noise), 30 s.
flac=$(make_flac snapcast-30s.flac 30)
ensure_pulse snapcast
trap stop_own_pulse EXIT
/usr/bin/python3 benchmarks/snapcast/snapcast_bench.py --ours "$HARMONIA_PLAY" --file "$flac" --length 30 \
  --runs "${RUNS:-3}" --work "$WORK/snapcast" --out "$RESULTS/snapcast.json"
