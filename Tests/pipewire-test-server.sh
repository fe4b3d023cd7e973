#!/usr/bin/env bash
# A private PipeWire for the tests: pipewire + WirePlumber + pipewire-pulse,
# each with its own runtime, config, state and data folders and its own
# session bus, a float32 48 kHz null sink declared in PipeWire's config (it
# belongs to the pipewire daemon and outlives a pipewire-pulse restart), and
# the PulseAudio socket at DIR/native — the same address as the PulseAudio
# test server's, so a test runs unchanged against either. It never touches a
# desktop's server. WirePlumber's state (restored stream volumes, default
# sink) starts empty each time.
# Usage: pipewire-test-server.sh start|stop|restart|kill DIR
#   start    starts what is not running; waits until the PulseAudio socket answers
#   stop     stops all of it (and forgets its state)
#   restart  stop, then start
#   kill     kills pipewire-pulse hard (tests: a lost server); `start` brings it back
set -euo pipefail
action=${1:?usage: $0 start|stop|restart|kill DIR}
dir=${2:?usage: $0 start|stop|restart|kill DIR}
address="unix:$dir/native"

export XDG_RUNTIME_DIR="$dir/runtime" XDG_CONFIG_HOME="$dir/config" XDG_STATE_HOME="$dir/state" \
       XDG_DATA_HOME="$dir/data" HOME="$dir/home" DBUS_SESSION_BUS_ADDRESS="unix:path=$dir/runtime/bus" \
       PIPEWIRE_RUNTIME_DIR="$dir/runtime" PULSE_SERVER="$address"
unset PIPEWIRE_REMOTE DISPLAY WAYLAND_DISPLAY

answers() { timeout 5 pactl info 2>/dev/null | grep -q 'PipeWire'; }
running() { local p; p=$(cat "$dir/$1.pid" 2>/dev/null) && [ -n "$p" ] && kill -0 "$p" 2>/dev/null; }

write_config() {
  mkdir -p "$dir/runtime" "$dir/config/pipewire/pipewire.conf.d" "$dir/config/pipewire/pipewire-pulse.conf.d" \
           "$dir/config/pulse" "$dir/state" "$dir/data" "$dir/home"
  chmod 0700 "$dir/runtime"
  # 44.1 and 48 kHz are both graph rates: a 44.1 kHz stream alone on the
  # graph plays unresampled, as on a desktop configured for it; the sink
  # itself is 48 kHz.
  cat >"$dir/config/pipewire/pipewire.conf.d/harmonia-test.conf" <<'EOF'
context.properties = {
    default.clock.allowed-rates = [ 44100 48000 ]
    # Locked in memory, as a desktop's real-time setup does: this machine's
    # proactive reclaim (kdamond) otherwise pages the graph out after heavy
    # work, and a graph cycle is lost to the page faults.
    mem.allow-mlock = true
    mem.mlock-all   = true
}
context.objects = [
    { factory = adapter
      args = {
          factory.name     = support.null-audio-sink
          node.name        = harmonia_null
          node.description = "HarmoniaCore test sink"
          media.class      = Audio/Sink
          object.linger    = true
          audio.format     = F32
          audio.rate       = 48000
          audio.channels   = 2
          audio.position   = [ FL FR ]
          priority.session = 2000
          priority.driver  = 2000
      }
    }
]
EOF
  cat >"$dir/config/pipewire/pipewire-pulse.conf.d/harmonia-test.conf" <<EOF
context.properties = {
    mem.allow-mlock = true
    mem.mlock-all   = true
}
pulse.properties = {
    server.address = [ "$address" ]
}
EOF
  printf 'autospawn = no\n' >"$dir/config/pulse/client.conf"
}

launch() {  # NAME COMMAND...: starts it in the background unless running; keeps its pid
  local name=$1; shift
  running "$name" && return 0
  # Without the descriptors this script inherited: a daemon holding the
  # caller's pipe open would keep the caller waiting for its end.
  ( for fd in /proc/$BASHPID/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
    exec setsid "$@" >>"$dir/$name.log" 2>&1 </dev/null ) &
  echo $! >"$dir/$name.pid"
}

wait_for() {  # CONDITION-COMMAND WHAT
  for _ in $(seq 1 100); do
    if "$1"; then return 0; fi
    sleep 0.1
  done
  echo "pipewire-test-server: $2 did not come up; see the logs in $dir" >&2
  return 1
}

show_logs() {  # the last lines each daemon wrote, for a failure far from this machine
  local name
  for name in pipewire wireplumber pipewire-pulse; do
    echo "--- $name ($(running "$name" && echo running || echo not running)), last lines of $dir/$name.log:" >&2
    tail -n 15 "$dir/$name.log" >&2 2>/dev/null || true
  done
}

pipewire_socket() { [ -S "$dir/runtime/pipewire-0" ]; }
sink_ready() { timeout 5 pactl list short sinks 2>/dev/null | grep -q harmonia_null; }

start() {
  if running pipewire && running wireplumber && running pipewire-pulse && answers; then return 0; fi
  write_config
  running dbus || {
    rm -f "$dir/runtime/bus"
    dbus-daemon --session --address="$DBUS_SESSION_BUS_ADDRESS" --fork --print-pid >"$dir/dbus.pid" 2>>"$dir/dbus.log" </dev/null
  }
  PIPEWIRE_DEBUG="${PIPEWIRE_DEBUG:-2,pw.node:3}" launch pipewire pipewire
  wait_for pipewire_socket "pipewire"
  launch wireplumber wireplumber
  # pipewire-pulse came up in ~0.2 s in every local run, yet once in CI it
  # did not answer within 10 s of a restart (its logs were gone with the
  # machine): a second launch, after a hard stop of the first, before giving
  # up, and the logs' tails on stderr when it does.
  local attempt
  for attempt in 1 2; do
    launch pipewire-pulse pipewire-pulse
    if wait_for answers "pipewire-pulse" 2>/dev/null; then break; fi
    if [ "$attempt" = 2 ] || ! running pipewire; then
      echo "pipewire-test-server: pipewire-pulse did not come up; see the logs in $dir" >&2
      show_logs; return 1
    fi
    echo "pipewire-test-server: pipewire-pulse did not answer within 10 s; launching it again" >&2
    stop_one pipewire-pulse
  done
  wait_for sink_ready "the null sink" || { show_logs; return 1; }
  pactl set-default-sink harmonia_null >/dev/null 2>&1 || true
}

stop_one() {
  local p; p=$(cat "$dir/$1.pid" 2>/dev/null || true)
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill "$p" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  fi
  rm -f "$dir/$1.pid"
}

stop() {
  stop_one pipewire-pulse; stop_one wireplumber; stop_one pipewire; stop_one dbus
  rm -rf "$dir/state" "$dir/runtime"
  rm -f "$dir/native"
}

case $action in
  start) start ;;
  stop) stop ;;
  restart) stop; start ;;
  kill) p=$(cat "$dir/pipewire-pulse.pid" 2>/dev/null || true)
        if [ -n "$p" ]; then
          kill -9 "$p" 2>/dev/null || true
          # Gone (or a zombie: its socket is closed) before `start` binds the
          # socket again; a process with locked memory takes a moment to die.
          for _ in $(seq 1 50); do
            [ -e "/proc/$p" ] && ! grep -q '^State:.*Z' "/proc/$p/status" 2>/dev/null || break
            sleep 0.1
          done
        fi
        rm -f "$dir/pipewire-pulse.pid" ;;
  *) echo "usage: $0 start|stop|restart|kill DIR" >&2; exit 2 ;;
esac
