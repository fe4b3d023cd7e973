#!/usr/bin/env bash
# Library scan: harmonia-play info --json on a folder of 1,200 small tagged
# files vs mutagen (benchmarks/scan/scan.py) -> benchmarks/results/scan.json.
# Installs mutagen from PyPI when it is missing. Env: RUNS (5).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/release-build.sh
ours=$(release_build harmonia-play)
python3 -c 'import mutagen' 2>/dev/null || python3 -m pip install --quiet mutagen >&2 ||
  python3 -m pip install --quiet --break-system-packages mutagen >&2
mkdir -p benchmarks/.work benchmarks/results
python3 benchmarks/scan/scan.py --ours "$ours" --work benchmarks/.work \
  --out benchmarks/results/scan.json --runs "${RUNS:-5}"
