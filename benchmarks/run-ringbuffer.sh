#!/usr/bin/env bash
# Ring buffer: SPSCRingBuffer vs a mutex-guarded ring between two threads
# (ring-bench, alternating), and allocations per write/read counted by
# ordo-one/benchmark's malloc interposer (Benchmarks/RingBuffer).
# Writes benchmarks/results/ringbuffer.json. Run from the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
work=benchmarks/.work/ringbuffer
rm -rf "$work" && mkdir -p "$work"
. benchmarks/release-build.sh
"$(release_build ring-bench benchmarks)" --pairs 7 > "$work/ring.json"
# --no-progress: the plugin's progress bar is for terminals.
swift package --package-path benchmarks --allow-writing-to-package-directory \
    benchmark --target RingBuffer --format jmh --path "$work" --no-progress >&2
python3 benchmarks/harness.py ringbuffer "$work/ring.json" "$work/Current_run.jmh.json"
