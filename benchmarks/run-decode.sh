#!/usr/bin/env bash
# Decode throughput: our DecoderPort loop (decode-bench) vs ffmpeg -threads 1,
# per format, on 10-minute files generated once into benchmarks/.work/.
# Writes benchmarks/results/decode.json. Run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
. benchmarks/release-build.sh
release_build decode-bench benchmarks >/dev/null
python3 benchmarks/harness.py generate
python3 benchmarks/harness.py decode
