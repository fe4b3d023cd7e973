#!/usr/bin/env bash
# A library of 100,000 tracks: harmonia-play serve vs MPD on the same generated
# FLAC and MP3 files (benchmarks/library-scale/: make_library.py writes them,
# library_scale_bench.py measures) -> benchmarks/results/library-scale.json.
# Env: SONGS (100000), RUNS (100: a p95 of 20 runs is their second slowest, which one scheduling delay on a shared machine decides).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/release-build.sh
ours=$(release_build harmonia-play)
[ -x /usr/bin/mpd ] || { echo "run-library-scale.sh: /usr/bin/mpd is missing (apt-get install mpd)" >&2; exit 1; }
mkdir -p benchmarks/.work benchmarks/results
/usr/bin/python3 benchmarks/library-scale/library_scale_bench.py --ours "$ours" --work benchmarks/.work \
  --out benchmarks/results/library-scale.json --songs "${SONGS:-100000}" --runs "${RUNS:-100}"
