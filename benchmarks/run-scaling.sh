#!/usr/bin/env bash
# Scaling: decode throughput with 1 decoder and with 2 concurrent decoders on
# different files. Writes benchmarks/results/scaling.json. Run from the
# repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
. benchmarks/release-build.sh
release_build decode-bench benchmarks >/dev/null
python3 benchmarks/harness.py generate
python3 benchmarks/harness.py scaling
