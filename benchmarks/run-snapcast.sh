#!/usr/bin/env bash
# Snapcast: CPU time of harmonia-play playing a 30 s 44.1 kHz FLAC in real time
# to a private snapserver (--output snapcast://, resampled to 48 kHz by us),
# against the same player on PulseAudio (--output pulse) and MPD 0.23's fifo
# output into the same kind of snapserver (benchmarks/snapcast/snapcast_bench.py)
# -> benchmarks/results/snapcast.json. Env: RUNS (3).
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/footprint/common.sh
for tool in /usr/bin/snapserver /usr/bin/mpd; do
  [ -x "$tool" ] || { echo "run-snapcast.sh: $tool is missing (apt-get install snapserver mpd)" >&2; exit 1; }
done
release_harmonia_play
# The same music as footprint's (a chord with tremolo over quiet pink noise), 30 s.
flac=$WORK/snapcast-30s.flac
if [ ! -s "$flac" ]; then
  ffmpeg -nostdin -hide_banner -loglevel error -y \
    -f lavfi -i "aevalsrc=0.2*sin(2*PI*220*t)*(0.6+0.4*sin(2*PI*0.3*t))+0.15*sin(2*PI*330*t)+0.1*sin(2*PI*440.5*t):s=44100:d=30" \
    -f lavfi -i "anoisesrc=d=30:c=pink:r=44100:a=0.05" \
    -filter_complex "[0][1]amix=inputs=2:normalize=0,aformat=channel_layouts=stereo" \
    -c:a flac -sample_fmt s16 "$flac.tmp.flac"
  mv "$flac.tmp.flac" "$flac"
fi
ensure_pulse snapcast
trap stop_own_pulse EXIT
/usr/bin/python3 benchmarks/snapcast/snapcast_bench.py --ours "$HARMONIA_PLAY" --file "$flac" --length 30 \
  --runs "${RUNS:-3}" --work "$WORK/snapcast" --out "$RESULTS/snapcast.json"
