#!/bin/bash
# Run inside the Debian machine that Tests/Install/boot_check.sh boots, by
# harmonia-boot-check.service once the system is up: issue 39's "Done when"
# under a real systemd. Each result is a line "BOOT-CHECK ok: ..." or
# "BOOT-CHECK FAIL: ..." on the serial console (and in
# /root/boot-check/result.txt); diagnostics are "BOOT-CHECK | ..." lines; the
# last line is "BOOT-CHECK done: N failed". Then the machine powers off.
# Every wait is a bounded poll of a condition (await), never a fixed sleep.
set -u
DIR=/root/boot-check
RESULT=$DIR/result.txt
MUSIC=/srv/music
USER_NAME=tester
failures=0
: > "$RESULT"
out() { tee -a "$RESULT" > /dev/ttyS0; }
say() { echo "BOOT-CHECK $*" | out; }
pass() { say "ok: $*"; }
fail() { say "FAIL: $*"; failures=$((failures + 1)); }
check() { local what=$1; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
show() { sed 's/^/BOOT-CHECK | /' | out; }
# await SECONDS COMMAND...: true as soon as COMMAND succeeds, false after SECONDS.
await() { local limit=$(( $1 * 5 )) i; shift; for ((i = 0; i < limit; i++)); do "$@" && return 0; sleep 0.2; done; return 1; }
prop() { systemctl show -P "$1" harmonia-play.service; }
journal() { journalctl -b -o cat --no-pager "$@"; }
# The user's service manager (lingering: started at boot, no login).
user_do() { runuser -u "$USER_NAME" -- env XDG_RUNTIME_DIR=/run/user/1000 DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus "$@"; }
finish() {
  say "done: $failures failed"
  sync
  systemctl poweroff --no-block
  exit 0
}

say "start: $(uname -r), $(systemctl --version | head -n 1), $(nproc) CPUs"
# This unit runs after multi-user.target, within the boot transaction: the
# system is "starting" until it ends, so the failed units are what tells.
say "| system: $(systemctl is-system-running 2>&1); failed units: $(systemctl --failed --no-legend --plain | awk '{print $1}' | tr '\n' ' ')"

# --- Install the package as a person would: apt on the .deb (its Depends were
# installed when the image was made, so no network is needed here).
deb=$(ls "$DIR"/harmonia-play_*.deb)
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$deb" > "$DIR/apt-install.log" 2>&1
check "apt-get install ./$(basename "$deb")" dpkg-query -W -f='${Status}' harmonia-play | grep -q 'install ok installed'
tail -n 3 "$DIR/apt-install.log" | show
say "| after install: harmonia-play.service is $(systemctl is-enabled harmonia-play.service 2>&1), $(systemctl is-active harmonia-play.service 2>&1)"
exposure=$(systemd-analyze security harmonia-play.service 2>/dev/null | sed -n 's/.*Overall exposure level for harmonia-play.service: \([0-9.]*\).*/\1/p')
check "systemd-analyze security (live, booted): exposure ${exposure:-?} <= 2.5" \
  awk -v e="$exposure" 'BEGIN { exit !(e != "" && e + 0 <= 2.5) }'

# --- The system unit on the package's config file (every setting commented
# out): what the default does. Its music folder is then ~/Music of the
# service, /var/lib/harmonia-play/Music, and its output the sound server.
mpd_up() { mpc -q -h 127.0.0.1 -p 6600 status >/dev/null 2>&1; }
ended_or_up() { mpd_up || [ "$(prop NRestarts)" -ge 1 ] || systemctl is-failed -q harmonia-play.service; }
systemctl start harmonia-play.service
await 30 ended_or_up
say "| default config: $(systemctl is-active harmonia-play.service), restarts $(prop NRestarts), last exit $(prop ExecMainStatus), MPD port $(mpd_up && echo answers || echo closed)"
journal _SYSTEMD_UNIT=harmonia-play.service | tail -n 6 | show
systemctl stop harmonia-play.service; systemctl reset-failed harmonia-play.service 2>/dev/null

# --- The system unit on a music folder, playing to the file output (no
# sound server is reachable by the service in this machine), enabled as
# `systemctl enable --now` does.
count=$(find "$MUSIC" -type f | wc -l)
cat > /etc/harmonia-play.conf <<EOF
# boot_check: the package's file replaced
music-dir = $MUSIC
output = file:/var/lib/harmonia-play/heard.f32
EOF
chmod 0600 /etc/harmonia-play.conf
check "systemctl enable --now harmonia-play" systemctl enable --now harmonia-play.service
check "the MPD port answers (within 60 s)" await 60 mpd_up
listed() { [ "$(mpc -h 127.0.0.1 -p 6600 listall 2>/dev/null | wc -l)" -eq "$1" ]; }
check "mpc listall lists the library: $count files, one only the audio group can read (within 120 s)" await 120 listed "$count"
mpc -h 127.0.0.1 -p 6600 listall 2>&1 | show
pid=$(prop MainPID)
say "| service process $pid: $(ps -o user=,group=,supgrp= -p "$pid"); $(grep -E '^(Uid|Gid|Groups|Seccomp|NoNewPrivs):' /proc/"$pid"/status | tr '\t\n' '  ')"
playing() { mpc -h 127.0.0.1 -p 6600 status 2>/dev/null | grep -q '^\[playing\]'; }
heard_size() { stat -c %s /var/lib/private/harmonia-play/heard.f32 2>/dev/null || echo 0; }
heard_grows() { [ "$(heard_size)" -gt "$1" ]; }
# The file output keeps one format per file (a 44.1 kHz stereo track then
# a mono one stops it with "cannot change to 44100 Hz, 1 ch mid-file"):
# the queue here is the 44.1 kHz stereo files.
mpc -q -h 127.0.0.1 -p 6600 clear
for f in flac_s16_stereo_44k.flac wav_s16_stereo_44k.wav mp3_cbr_stereo_44k.mp3 vorbis_stereo_44k.ogg aac_stereo_44k.m4a; do
  mpc -q -h 127.0.0.1 -p 6600 add "$f"
done
mpc -q -h 127.0.0.1 -p 6600 play
check "mpc play: [playing]" await 10 playing
check "the output file is written as the queue plays (within 20 s)" await 20 heard_grows 0
before=$(heard_size)
check "... and keeps growing (past $before bytes, within 20 s)" await 20 heard_grows "$before"
mpc -h 127.0.0.1 -p 6600 status 2>&1 | show

# --- systemctl reload: SIGHUP rescans (the service keeps its process).
mkdir -p "$MUSIC/added" && cp "$MUSIC/flac_s16_stereo_44k.flac" "$MUSIC/added/after-reload.flac"
check "systemctl reload harmonia-play" systemctl reload harmonia-play.service
new_listed() { mpc -h 127.0.0.1 -p 6600 listall 2>/dev/null | grep -qx added/after-reload.flac; }
check "after reload the new file is listed (within 60 s)" await 60 new_listed
check "reload kept the process ($pid)" test "$(prop MainPID)" = "$pid"

# --- systemctl stop: a clean end (SIGTERM, exit 143 counted as success).
check "systemctl stop harmonia-play" systemctl stop harmonia-play.service
check "stopped: inactive, result $(prop Result), exit status $(prop ExecMainStatus)" \
  bash -c '[ "$(systemctl is-active harmonia-play.service)" = inactive ] && [ "$(systemctl show -P Result harmonia-play.service)" = success ]'
# (stderr lines reach the journal at priority info: look at their words).
# Left out: libdispatch's "Failed to set thread priority for worker thread:
# ... errno=13", once at start: EACCES from setpriority (a nice value below
# the thread's own needs CAP_SYS_NICE), which the user unit prints too; a
# syscall the units' filter refused would be EPERM (errno=1).
problems=$(journal _SYSTEMD_UNIT=harmonia-play.service --since "@$(stat -c %Y /etc/harmonia-play.conf)" \
  | grep -v 'Failed to set thread priority for worker thread: .* errno=13$' \
  | grep -i -e error -e fail -e denied -e 'not permitted' -e 'read-only' -e warning -e 'errno=' | head -n 5)
check "the service's journal has no error, warning or denial on the configured run${problems:+: $problems}" test -z "$problems"
journal _SYSTEMD_UNIT=harmonia-play.service --since "@$(stat -c %Y /etc/harmonia-play.conf)" | tail -n 12 | show
journal -k | grep -i -e 'audit' -e 'seccomp' -e 'denied' | tail -n 5 | show
# Dynamic users are 61184-65519: every file such a user owns is in the state folder.
stray=$(find / -xdev \( -uid +61183 -a -uid -65520 \) -not -path '/var/lib/private/harmonia-play*' -print 2>/dev/null | head -n 5)
check "the service wrote only under /var/lib/private/harmonia-play${stray:+ (also: $stray)}" test -z "$stray"
say "| state folder: $(cd /var/lib/private/harmonia-play && find . -maxdepth 2 | LC_ALL=C sort | tr '\n' ' ')"

# --- The user unit: systemctl --user enable --now, on the user's own
# PulseAudio (started by its socket in the lingering user manager; this
# machine has no sound card, so its sink is PulseAudio's null sink).
user_manager_up() { user_do systemctl --user is-system-running 2>/dev/null | grep -q -e running -e degraded; }
if check "the lingering user manager of $USER_NAME runs (within 60 s)" await 60 user_manager_up; then
  check "systemctl --user enable --now harmonia-play" user_do systemctl --user enable --now harmonia-play.service
  check "user unit: the MPD port answers (within 60 s)" await 60 mpd_up
  ucount=$(find "/home/$USER_NAME/Music" -type f | wc -l)
  check "user unit: mpc listall lists ~/Music ($ucount files, within 120 s)" await 120 listed "$ucount"
  mpc -q -h 127.0.0.1 -p 6600 clear && mpc -q -h 127.0.0.1 -p 6600 add / && mpc -q -h 127.0.0.1 -p 6600 play
  check "user unit: mpc play: [playing]" await 10 playing
  stream() { user_do pactl list sink-inputs 2>/dev/null | grep -q -i 'application.name = "harmonia'; }
  check "user unit: its stream plays on the user's PulseAudio (pactl list sink-inputs)" await 20 stream
  user_do pactl list short sink-inputs 2>&1 | show
  user_do pactl info 2>&1 | grep -e 'Server Name' -e 'Default Sink' | show
  journal _SYSTEMD_USER_UNIT=harmonia-play.service | tail -n 6 | show
  check "systemctl --user stop harmonia-play" user_do systemctl --user stop harmonia-play.service
else
  user_do systemctl --user --failed 2>&1 | show
fi

# --- apt purge with the system service enabled and running: nothing left.
systemctl start harmonia-play.service
await 60 mpd_up
DEBIAN_FRONTEND=noninteractive apt-get purge -y harmonia-play > "$DIR/apt-purge.log" 2>&1
check "apt-get purge -y harmonia-play" test $? = 0
tail -n 3 "$DIR/apt-purge.log" | show
check "after purge: dpkg knows no harmonia-play (dpkg -L fails)" bash -c '! dpkg -L harmonia-play >/dev/null 2>&1'
check "after purge: the service stopped" bash -c '! systemctl is-active -q harmonia-play.service && ! pgrep -x harmonia-play >/dev/null'
left=$(find / -xdev -name '*harmonia*' -not -path "$DIR/*" -not -path "/home/$USER_NAME/*" -not -name 'harmonia-boot-check*' -print 2>/dev/null | LC_ALL=C sort | tr '\n' ' ')
check "after purge: no file named *harmonia* outside the user's home (/etc, /var/lib/private, /usr)${left:+ (left: $left)}" test -z "$left"
check "after purge: /etc/harmonia-play.conf, /var/lib/private/harmonia-play and /var/lib/harmonia-play are gone" \
  bash -c '[ ! -e /etc/harmonia-play.conf ] && [ ! -e /var/lib/private/harmonia-play ] && [ ! -e /var/lib/harmonia-play ]'
say "| left in the user's home (the user's own data, not the package's): $(cd /home/$USER_NAME && find . -path ./Music -prune -o -name '*harmonia*' -print | LC_ALL=C sort | tr '\n' ' ')"
finish
