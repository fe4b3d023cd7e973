#!/usr/bin/env bash
# Music server: harmonia-play serve vs MPD over MPD's protocol on scan.py's
# folder of 1,200 tagged files — full scan, unchanged rescan, status round
# trips with 50 idle clients, peak RSS (benchmarks/server/server_bench.py)
# -> benchmarks/results/server.json. mutagen's walk of the folder is timed for
# reference (installed from PyPI when missing, as run-scan.sh does).
# Env: RUNS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/release-build.sh
ours=$(release_build harmonia-play)
[ -x /usr/bin/mpd ] || { echo "run-server.sh: /usr/bin/mpd is missing (apt-get install mpd)" >&2; exit 1; }
python3 -c 'import mutagen' 2>/dev/null || python3 -m pip install --quiet mutagen >&2 ||
  python3 -m pip install --quiet --break-system-packages mutagen >&2
mkdir -p benchmarks/.work benchmarks/results
python3 benchmarks/server/server_bench.py --ours "$ours" --work benchmarks/.work \
  --out benchmarks/results/server.json --runs "${RUNS:-3}"
