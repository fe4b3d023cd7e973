#!/usr/bin/env bash
# Latency through a real PulseAudio server, ours against paplay, ffplay, mpg123,
# mpv and MPD (issue 6, part 3) → benchmarks/results/latency.json.
# Run from the repository root. Uses $PULSE_SERVER if set (make bench starts a
# private server); otherwise starts a private one (Tests/pulse-test-server.sh)
# and stops it at the end. RUNS=N sets the runs per program (default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
SWIFT=${SWIFT:-$(command -v swift 2>/dev/null || echo /opt/swift/usr/bin/swift)}
work=$root/benchmarks/.work/latency
out=$root/benchmarks/results/latency.json
mkdir -p "$work" "$root/benchmarks/results"

# Peers from Debian: install what is missing (a failure is reported in the results, not fatal).
missing=()
for pair in paplay:pulseaudio-utils ffplay:ffmpeg mpg123:mpg123 mpv:mpv mpd:mpd mpc:mpc python3:python3; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
  echo "run-latency: installing ${missing[*]}" >&2
  { $sudo apt-get install -y --no-install-recommends "${missing[@]}" ||
    { $sudo apt-get update && $sudo apt-get install -y --no-install-recommends "${missing[@]}"; }; } >&2 ||
    echo "run-latency: could not install some of ${missing[*]}; those peers are reported as not measured" >&2
fi
command -v python3 >/dev/null || { echo "run-latency: python3 is required" >&2; exit 1; }

# Our release build.
. "$root/benchmarks/release-build.sh"
ours=$(release_build harmonia-play "$root")

# A private PulseAudio server unless make bench gave us one.
pulse_dir=""
cleanup() { if [ -n "$pulse_dir" ]; then bash "$root/Tests/pulse-test-server.sh" stop "$pulse_dir" || true; rm -rf "$pulse_dir"; fi; }
trap cleanup EXIT
if [ -z "${PULSE_SERVER:-}" ]; then
  pulse_dir=$(mktemp -d /tmp/harmonia-bench-latency.XXXXXX)
  bash "$root/Tests/pulse-test-server.sh" start "$pulse_dir"
  export PULSE_SERVER="unix:$pulse_dir/native"
fi

python3 "$root/benchmarks/latency/harness.py" --server "$PULSE_SERVER" --ours "$ours" \
  --work "$work" --out "$out" --runs "${RUNS:-5}"
echo "run-latency: wrote $out" >&2
