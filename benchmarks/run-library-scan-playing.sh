#!/usr/bin/env bash
# The 100,000-track library scanned while serve plays, on a private PulseAudio
# and a private PipeWire (benchmarks/library-scale/scan_while_playing.py;
# the library from make_library.py, made by run-library-scale.sh or here)
# -> benchmarks/results/library-scan-playing.json. Env: SONGS (100000).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/release-build.sh
ours=$(release_build harmonia-play)
mkdir -p benchmarks/.work benchmarks/results
library=benchmarks/.work/library-scale-${SONGS:-100000}
/usr/bin/python3 -c "import sys; sys.path.insert(0, 'benchmarks/library-scale'); from make_library import make_library; make_library('$library', ${SONGS:-100000})"
/usr/bin/python3 benchmarks/library-scale/scan_while_playing.py --ours "$ours" --library "$library" \
  --work benchmarks/.work --out benchmarks/results/library-scan-playing.json
