#!/usr/bin/env bash
# Library update as an MPD client sees it: harmonia-play serve vs MPD on a copy
# of scan.py's folder of 1,200 tagged files, unchanged and after 10 files
# touched and 2 deleted (benchmarks/update/update_bench.py)
# -> benchmarks/results/update.json. Env: RUNS (15).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/release-build.sh
ours=$(release_build harmonia-play)
[ -x /usr/bin/mpd ] || { echo "run-update.sh: /usr/bin/mpd is missing (apt-get install mpd)" >&2; exit 1; }
mkdir -p benchmarks/.work benchmarks/results
python3 benchmarks/update/update_bench.py --ours "$ours" --work benchmarks/.work \
  --out benchmarks/results/update.json --runs "${RUNS:-15}"
