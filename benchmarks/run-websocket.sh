#!/usr/bin/env bash
# WebSocket transport: `status` round trips p50/p99 over WebSocket vs the Unix
# socket (same dispatcher, same process), alone and with 100 clients receiving
# every event, and underruns on the bench's PulseAudio meanwhile
# (benchmarks/websocket/ws_bench.py) -> benchmarks/results/websocket.json.
# Env: RUNS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/release-build.sh
ours=$(release_build harmonia-play)
mkdir -p benchmarks/.work benchmarks/results
/usr/bin/python3 benchmarks/websocket/ws_bench.py --ours "$ours" --file Tests/Fixtures/audio/flac_s16_stereo_44k.flac \
  --work benchmarks/.work --out benchmarks/results/websocket.json --runs "${RUNS:-3}"
