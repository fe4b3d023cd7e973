# Shared by run-footprint.sh and run-underruns.sh (sourced, from the repository root).
# SWIFT, a release harmonia-play, a 10-minute FLAC (and MP3), and a PulseAudio server:
# the one in PULSE_SERVER when it answers (make bench starts a private one),
# otherwise a private one of our own, stopped on exit.
SWIFT=${SWIFT:-$(command -v swift 2>/dev/null || echo /opt/swift/usr/bin/swift)}
WORK=benchmarks/.work
RESULTS=benchmarks/results
mkdir -p "$WORK" "$RESULTS"

. benchmarks/release-build.sh
release_harmonia_play() {
  HARMONIA_PLAY=$(release_build harmonia-play)
  test -x "$HARMONIA_PLAY"
}

# A stereo 44.1 kHz 16-bit FLAC: a chord with slow tremolo over quiet pink
# noise (compresses like music, not like a pure sine), sound from its first
# frame. $1 = file name in .work, $2 = seconds (default 600, 10 minutes).
make_flac() {
  local out="$WORK/$1" seconds=${2:-600}
  if [ ! -s "$out" ]; then
    ffmpeg -nostdin -hide_banner -loglevel error -y \
      -f lavfi -i "aevalsrc=0.2*sin(2*PI*220*t)*(0.6+0.4*sin(2*PI*0.3*t))+0.15*sin(2*PI*330*t)+0.1*sin(2*PI*440.5*t):s=44100:d=$seconds" \
      -f lavfi -i "anoisesrc=d=$seconds:c=pink:r=44100:a=0.05" \
      -filter_complex "[0][1]amix=inputs=2:normalize=0,aformat=channel_layouts=stereo" \
      -c:a flac -sample_fmt s16 "$out.tmp.flac"
    mv "$out.tmp.flac" "$out"
  fi
  printf '%s\n' "$out"
}

# The same music as a 192 kbit/s MP3 (LAME): $1 = the FLAC, $2 = file name in .work.
make_mp3() {
  local out="$WORK/$2"
  if [ ! -s "$out" ]; then
    ffmpeg -nostdin -hide_banner -loglevel error -y -i "$1" -c:a libmp3lame -b:a 192k "$out.tmp.mp3"
    mv "$out.tmp.mp3" "$out"
  fi
  printf '%s\n' "$out"
}

OWN_PULSE_DIR=""
ensure_pulse() {
  if [ -n "${PULSE_SERVER:-}" ] && PULSE_SERVER="$PULSE_SERVER" timeout 5 pactl info >/dev/null 2>&1; then
    return 0
  fi
  OWN_PULSE_DIR=/tmp/harmonia-pulse-$(id -u)-bench-$1-$$
  bash Tests/pulse-test-server.sh start "$OWN_PULSE_DIR" >&2
  export PULSE_SERVER="unix:$OWN_PULSE_DIR/native"
}
stop_own_pulse() {
  if [ -n "$OWN_PULSE_DIR" ]; then bash Tests/pulse-test-server.sh stop "$OWN_PULSE_DIR" || true; rm -rf "$OWN_PULSE_DIR"; fi
}
