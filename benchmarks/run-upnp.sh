#!/usr/bin/env bash
# UPnP/DLNA renderer (issue 33): time from SetAVTransportURI+Play to first
# sound, `harmonia-play serve --upnp` against gmediarender (Debian's
# gmrender-resurrect, GStreamer's pulsesink), on the same PulseAudio sink, with
# async-upnp-client as the control point (benchmarks/upnp/upnp_bench.py)
# -> benchmarks/results/upnp.json. Env: RUNS (5).
#
# libupnp (gmediarender's UPnP stack) refuses a loopback interface, so the
# driver runs in a private network namespace (unshare --net) holding lo and a
# veth pair with no route out; gmediarender listens on the veth's address, our
# renderer and the file server on 127.0.0.1; PulseAudio is reached through its
# Unix socket. Needs root or unprivileged user namespaces; without either
# gmediarender is reported as not measured.
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/footprint/common.sh

# The peer from Debian (make bench installs it: BENCH_APT_PACKAGES) and GStreamer's pulsesink.
for p in gmediarender gstreamer1.0-pulseaudio gstreamer1.0-plugins-good; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    { echo "run-upnp.sh: $p is missing (apt-get install gmediarender gstreamer1.0-pulseaudio gstreamer1.0-plugins-good)" >&2; exit 1; }
done
# The control point: async-upnp-client in the tests' virtual environment (make upnp-client).
make --no-print-directory upnp-client >&2
python=$PWD/.build/python-upnp/bin/python

release_harmonia_play
# A short FLAC with sound from its first frame: footprint's chord over quiet pink noise, 10 s.
flac=$(make_flac upnp-10s.flac 10)
ensure_pulse upnp
trap stop_own_pulse EXIT

args=(benchmarks/upnp/upnp_bench.py --ours "$HARMONIA_PLAY" --file "$flac" --runs "${RUNS:-5}"
      --work "$WORK/upnp" --out "$RESULTS/upnp.json")
# The namespace: lo up, veth hb0 (10.253.0.1/24) paired with hb1, a default route into the pair (SSDP's
# multicast ends there). It lives as long as the driver; every process in it is the driver's, stopped by it.
netns_setup='ip link set lo up && ip link add hb0 type veth peer name hb1 && ip addr add 10.253.0.1/24 dev hb0 &&
  ip link set hb1 up && ip link set hb0 up && ip route add default dev hb0'
if [ "$(id -u)" -eq 0 ]; then unshare=(unshare --net); else unshare=(unshare --net --map-root-user); fi
if "${unshare[@]}" sh -c "$netns_setup" 2>/dev/null; then
  timeout 1800 "${unshare[@]}" bash -c "$netns_setup"' && exec "$@"' bash "$python" "${args[@]}" --gmr-address 10.253.0.1
else
  echo "run-upnp: no private network namespace here; gmediarender is not measured" >&2
  timeout 1800 "$python" "${args[@]}"
fi
