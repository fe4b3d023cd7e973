#!/usr/bin/env bash
# The whole pipeline: harmonia-play FILE --output file:/dev/null --quiet vs
# ffmpeg -threads 1, per format, on the files run-decode.sh generates.
# Writes benchmarks/results/pipeline.json. Run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
. benchmarks/release-build.sh
release_build harmonia-play >/dev/null
python3 benchmarks/harness.py generate
python3 benchmarks/harness.py pipeline
