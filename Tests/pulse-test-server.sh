#!/usr/bin/env bash
# A private PulseAudio daemon for the tests: its own runtime/state folder and
# socket, no D-Bus, no autospawn, a float32 null sink as default. It never
# touches a desktop's server. Usage: pulse-test-server.sh start|stop|restart|kill DIR
#   start    starts it unless it already answers; waits until it does
#   stop     stops it (and forgets it)        kill  kills it hard (tests: a lost server)
# The server's address is unix:DIR/native.
set -euo pipefail
action=${1:?usage: $0 start|stop|restart|kill DIR}
dir=${2:?usage: $0 start|stop|restart|kill DIR}
export PULSE_RUNTIME_PATH="$dir/runtime" PULSE_STATE_PATH="$dir/state"
address="unix:$dir/native"

answers() { PULSE_SERVER="$address" timeout 5 pactl info >/dev/null 2>&1; }
pid() { cat "$dir/runtime/pid" 2>/dev/null || true; }

start() {
  if answers; then return 0; fi
  mkdir -p "$dir/runtime" "$dir/state"
  rm -f "$dir/native"
  pulseaudio --daemonize=yes --exit-idle-time=-1 -n --disallow-exit --use-pid-file=yes \
    --log-target="file:$dir/daemon.log" \
    --load="module-null-sink sink_name=harmonia_null format=float32le rate=48000 channels=2" \
    --load="module-native-protocol-unix auth-anonymous=1 socket=$dir/native" \
    >>"$dir/start.log" 2>&1 || true
  for _ in $(seq 1 100); do
    if answers; then return 0; fi
    sleep 0.1
  done
  echo "pulse-test-server: the daemon did not start; see $dir/daemon.log and $dir/start.log" >&2
  return 1
}

stop() {
  local p; p=$(pid)
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill "$p" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  fi
  rm -f "$dir/runtime/pid" "$dir/native"
}

case $action in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  kill) p=$(pid); [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; rm -f "$dir/runtime/pid" ;;
  *) echo "usage: $0 start|stop|restart|kill DIR" >&2; exit 2 ;;
esac
