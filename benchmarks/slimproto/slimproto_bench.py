"""Ours beside squeezelite (Debian's squeezelite-pa) as slimproto players
(issue 40), driven by aioslimproto on one PulseAudio null sink:

- sync: the offset between two members of a group, ours+ours,
  ours+squeezelite and squeezelite+squeezelite, started as Music Assistant
  starts a group (each opened with autostart 0, each unpaused at one moment
  in its own jiffies); read from a recording of the sink's monitor
  (Tests/Slimproto/slimproto_player_test.py group_offset: the first member's
  burst on the left channel, the second's on the right, 3 s in);
- over a minute: the same group, once per pair, with a burst every 10 s
  from 3 s to 63 s: the offset at each, and how far it moved;
- start and footprint: both players connected at once, each sent `strm s`
  with autostart (aioslimproto's play_url) at the same moment, ours a
  track with sound from its first frame on the left channel, squeezelite the
  same on the right; the difference between their first sounds in the
  monitor's recording, then each one's CPU time over 20 s of steady
  playback and its resident memory, from /proc;
- first sound taken apart (part `timeline`): ours alone, `--log-level
  debug`, sent `strm s` with autostart as above, RUNS times: when each
  step came, in ms after the send on CLOCK_MONOTONIC (time.monotonic, the
  clock of jiffies and of the player's debug lines): `strm s` received,
  STMc back, the HTTP request at the media server, the stream opened and
  its decoder ready, RESP, the output started, the first frame heard
  (jiffies less elapsed of an STMt), STMs back;
- two clocks (part `clocks`, not a default): each pair on two
  module-pipe-sinks read 500 ppm apart (clocked_sinks.py): the offset at
  bursts 10 s apart over a minute and each member's elapsed against what
  its sink played;
- start at a time: ours alone, a tone opened with autostart 0 and
  unpaused at jiffies T 300 ms ahead, 2×RUNS (at least 10) times: the
  heard position (elapsed) of the first STMt after STMs minus the time
  since T (jiffies), so 0 when the first frame was heard at T; the same
  1.5 s later, and the corrections the player logged after the start.

Each part RUNS times, alternating. Usage: slimproto_bench.py --ours BIN --runs N --out FILE"""
import argparse
import asyncio
import functools
import http.server
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Slimproto"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "slimproto"))
from slimproto_player_test import (first_sounds, group_offset, group_offsets, hook, member_command, new_server,  # noqa: E402
                                   free_port, ours_beats, start_http, start_offsets, tear_down, wait_for)
from process_usage import cpu_seconds, memory_kib  # noqa: E402
from clocked_sinks import clocked_group  # noqa: E402

# Bursts over a minute: at 3 s, then every 10 s.
MINUTE_BURSTS = 7

# Steady playback measured for this long, after this long from the later first sound.
STEADY_SECONDS = 20.0
SETTLE_SECONDS = 5.0


async def start_and_footprint(binary, ours_first):
    """One run of the second part: returns (ours' first sound minus
    squeezelite's, ms, after `strm s`; {kind: (cpu %, RSS MiB, peak RSS MiB)};
    {kind: first sound, ms after its `strm s` was sent}). The absolute times:
    ours from its own heard position (an STMt: jiffies, CLOCK_MONOTONIC ms
    as Python's time.monotonic, less elapsed, is when its first frame was
    heard, read from the sound server's reports); squeezelite's from ours
    and the distance between the two first sounds in the recording."""
    pulse_server = os.environ.get("PULSE_SERVER") or f"unix:{os.environ['HARMONIA_PULSE_DIR']}/native"
    work = tempfile.mkdtemp(prefix="harmonia-slimproto-footprint-")
    seconds = SETTLE_SECONDS + STEADY_SECONDS + 15
    # Sounds like music (a chord with tremolo over noise), from its first frame, on one channel.
    music = "(0.2*sin(2*PI*220*t)*(0.6+0.4*sin(2*PI*0.3*t))+0.15*sin(2*PI*330*t)+0.1*sin(2*PI*440.5*t)+0.05*(random(0)-0.5))"
    for name, channels in (("left", f"{music}|0"), ("right", f"0|{music}")):
        subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"aevalsrc='{channels}':s=44100:d={seconds}",
                        "-sample_fmt", "s16", os.path.join(work, f"{name}.flac")], check=True)
    http_server = start_http(work)
    base = f"http://127.0.0.1:{http_server.server_address[1]}"
    port = free_port()
    server = await new_server(port)
    env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state"), PULSE_SERVER=pulse_server)
    macs = {"ours": "02:11:22:33:44:77", "squeezelite": "02:11:22:33:44:88"}
    log = os.path.join(work, "ours.log")
    with open(log, "w") as ours_log:
        procs = {kind: subprocess.Popen(member_command(kind, binary, port, mac) + (["--log-level", "debug"] if kind == "ours" else []),
                                        stdout=subprocess.DEVNULL, stderr=ours_log if kind == "ours" else subprocess.DEVNULL,
                                        stdin=subprocess.DEVNULL, env=env)
                 for kind, mac in macs.items()}
    # A 10 ms stream of silence keeps the null sink rendering in small
    # blocks, so a new stream is taken within about 10 ms of its first
    # audio (idle, the sink renders up to ~2 s ahead and takes a new
    # stream only at its next block: specs/slimproto.md §Sync).
    keeper = subprocess.Popen(["pacat", "--playback", "--latency-msec=10", "--format=s16le", "--rate=48000",
                               "--channels=2", "/dev/zero"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    recording = os.path.join(work, "monitor.f32")
    recorder = subprocess.Popen(["parec", "--device=harmonia_null.monitor", "--raw", "--format=float32le", "--rate=48000",
                                 "--channels=2", "--latency-msec=10", recording], env=env)
    try:
        for mac in macs.values():
            await wait_for(lambda: server.get_player(mac) is not None and server.get_player(mac).connected, f"{mac}'s HELO")
        players = {kind: server.get_player(mac) for kind, mac in macs.items()}
        await asyncio.sleep(1)  # the server's volume and display frames on connect are done
        order = ["ours", "squeezelite"] if ours_first else ["squeezelite", "ours"]
        sent, seen = {}, {}
        for name in ("stms", "stmo"):
            hook(players["ours"], name, lambda _p, name=name: seen.setdefault(name, time.monotonic()))
        for kind in order:
            sent[kind] = time.monotonic()
            await players[kind].play_url(f"{base}/{'left' if kind == 'ours' else 'right'}.flac", autostart=True)
        # Ours' heard position read as soon as its first frame is heard: a
        # later reading would move the first sound by any silence inserted
        # since (an underrun is not counted as heard; the recording's parse
        # below is heavy on 2 cores).
        await wait_for(lambda: "stms" in seen, "ours' STMs")
        jiffies, elapsed = await ours_beats(players["ours"]).ask()
        await wait_for(lambda: first_sounds(recording) is not None, "both first sounds in the recording", timeout=20)
        ours_frame, lite_frame = first_sounds(recording)
        start_difference = (ours_frame - lite_frame) / 48 - (sent["ours"] - sent["squeezelite"]) * 1000
        since_send = ((jiffies - elapsed) - round(sent["ours"] * 1000)) & 0xFFFFFFFF
        first_sound = {"ours": since_send if since_send < 1 << 31 else since_send - (1 << 32)}
        first_sound["squeezelite"] = (first_sound["ours"] + sent["ours"] * 1000 + (lite_frame - ours_frame) / 48
                                      - sent["squeezelite"] * 1000)
        # Where ours' went (its debug lines), beside squeezelite.
        first_sound["ours_steps"] = dict(marked_steps(log, 0, sent["ours"]), **{"first frame heard": first_sound["ours"]})
        await asyncio.sleep(SETTLE_SECONDS)
        before = {kind: cpu_seconds(proc.pid) for kind, proc in procs.items()}
        began = time.monotonic()
        await asyncio.sleep(STEADY_SECONDS)
        spent = time.monotonic() - began
        footprint = {}
        for kind, proc in procs.items():
            peak, rss = memory_kib(proc.pid)
            footprint[kind] = ((cpu_seconds(proc.pid) - before[kind]) / spent * 100, rss / 1024, peak / 1024)
        return start_difference, footprint, first_sound
    finally:
        await tear_down(list(procs.values()) + [keeper, recorder], server, http_server, work)

# The player's debug lines (`SlimprotoPlayer.mark`): "slimproto: at MS ms: STEP".
MARK = re.compile(r"slimproto: at ([0-9.]+) ms: (.*)$")
TIMELINE_STEPS = ("strm s received", "STMc back", "HTTP request at the media server", "stream opened, decoder ready",
                  "RESP", "output started", "first frame heard", "STMs back")


def marked_steps(log, skip, sent):
    """{step: ms after `sent`} from the player's debug lines in `log` past
    its first `skip` lines."""
    steps = {}
    with open(log) as f:
        for line in f.readlines()[skip:]:
            found = MARK.search(line)
            if not found:
                continue
            at, what = float(found.group(1)) - sent * 1000, found.group(2)
            for prefix, step in (("strm s", "strm s received"), ("stream opened", "stream opened, decoder ready"),
                                 ("RESP", "RESP"), ("output started", "output started")):
                if what.startswith(prefix):
                    steps.setdefault(step, at)
    return steps


async def first_sound_timeline(binary, runs):
    """Ours alone, `--log-level debug`, on the tests' private server with a
    10 ms stream keeping the null sink in small blocks: `runs` times a
    track with sound from its first frame sent with `strm s` autostart
    (aioslimproto's play_url, as `start_and_footprint`), then stopped.
    Returns, per run, {step: ms after the send} (TIMELINE_STEPS)."""
    pulse_server = os.environ.get("PULSE_SERVER") or f"unix:{os.environ['HARMONIA_PULSE_DIR']}/native"
    work = tempfile.mkdtemp(prefix="harmonia-slimproto-timeline-")
    music = "(0.2*sin(2*PI*220*t)+0.05*(random(0)-0.5))"
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"aevalsrc='{music}|{music}':s=44100:d=8",
                    "-sample_fmt", "s16", os.path.join(work, "track.flac")], check=True)
    requests = []

    class Handler(http.server.SimpleHTTPRequestHandler):
        def do_GET(self):
            requests.append(time.monotonic())
            super().do_GET()

        def log_message(self, *args):
            pass

    import threading
    http_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=work))
    threading.Thread(target=http_server.serve_forever, daemon=True).start()
    port = free_port()
    server = await new_server(port)
    env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state"), PULSE_SERVER=pulse_server)
    mac = "02:11:22:33:44:99"
    log = os.path.join(work, "player.log")
    with open(log, "w") as err:
        proc = subprocess.Popen(member_command("ours", binary, port, mac) + ["--log-level", "debug"], stdout=subprocess.DEVNULL,
                                stderr=err, stdin=subprocess.DEVNULL, env=env)
    keeper = subprocess.Popen(["pacat", "--playback", "--latency-msec=10", "--format=s16le", "--rate=48000",
                               "--channels=2", "/dev/zero"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    timelines = []
    try:
        await wait_for(lambda: server.get_player(mac) is not None and server.get_player(mac).connected, "the player's HELO")
        player = server.get_player(mac)
        await asyncio.sleep(1)  # the server's volume and display frames on connect are done
        arrivals = {}
        for name, step in (("stmc", "STMc back"), ("stms", "STMs back")):
            hook(player, name, lambda _p, step=step: arrivals.setdefault(step, time.monotonic()))
        beats = ours_beats(player)
        for _ in range(runs):
            arrivals.clear()
            requests.clear()
            with open(log) as f:
                skip = len(f.readlines())
            sent = time.monotonic()
            await player.play_url(f"http://127.0.0.1:{http_server.server_address[1]}/track.flac", autostart=True)
            await wait_for(lambda: "STMs back" in arrivals, "STMs")
            jiffies, elapsed = await beats.ask()
            steps = {step: (at - sent) * 1000 for step, at in arrivals.items()}
            if requests:
                steps["HTTP request at the media server"] = (requests[0] - sent) * 1000
            heard = ((jiffies - elapsed) - round(sent * 1000)) & 0xFFFFFFFF
            steps["first frame heard"] = heard if heard < 1 << 31 else heard - (1 << 32)
            await asyncio.sleep(0.3)  # the debug lines written
            steps.update(marked_steps(log, skip, sent))
            timelines.append(steps)
            await player.stop()
            await asyncio.sleep(0.5)
        return timelines
    finally:
        await tear_down([proc, keeper], server, http_server, work)

PAIRS = (("ours", "ours"), ("ours", "squeezelite"), ("squeezelite", "squeezelite"))


async def measure(binary, runs, parts):
    offsets = {pair: [] for pair in PAIRS}
    starts, footprints, minute, first_sounds_ms = [], [], {}, []
    start_at, timelines, clocks = None, [], {}
    for pair in PAIRS if "clocks" in parts else ():
        try:
            clocks[pair] = await clocked_group(binary, pair)
        except Exception as error:
            print(f"slimproto_bench: {'+'.join(pair)} on two clocks: {error}", file=sys.stderr)
    if "timeline" in parts:
        try:
            timelines = await first_sound_timeline(binary, max(5, runs))
        except Exception as error:
            print(f"slimproto_bench: first sound taken apart: {error}", file=sys.stderr)
    if "start" in parts:
        try:
            start_at = await start_offsets(binary, max(10, 2 * runs))
        except Exception as error:
            print(f"slimproto_bench: start at a time: {error}", file=sys.stderr)
    for pair in PAIRS if "minute" in parts else ():
        try:
            minute[pair] = await group_offsets(binary, pair, bursts=MINUTE_BURSTS)
        except Exception as error:
            print(f"slimproto_bench: {'+'.join(pair)} over a minute: {error}", file=sys.stderr)
    for run in range(runs):
        for pair in PAIRS if "sync" in parts else ():
            try:
                offsets[pair].append(await group_offset(binary, pair))
            except Exception as error:  # one failed run is noted, not fatal
                print(f"slimproto_bench: {'+'.join(pair)}: {error}", file=sys.stderr)
        if "footprint" in parts:
            try:
                difference, footprint, first_sound = await start_and_footprint(binary, ours_first=run % 2 == 0)
                starts.append(difference)
                footprints.append(footprint)
                first_sounds_ms.append(first_sound)
            except Exception as error:
                print(f"slimproto_bench: start and footprint: {error}", file=sys.stderr)
    return offsets, starts, footprints, minute, start_at, first_sounds_ms, timelines, clocks


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ours", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", required=True)
    parser.add_argument("--parts", default="start,timeline,sync,minute,footprint",
                        help="start, timeline, sync, minute, footprint, clocks (comma-separated; clocks is not a default)")
    args = parser.parse_args()
    offsets, starts, footprints, minute, start_at, first_sounds_ms, timelines, clocks = asyncio.run(measure(args.ours, args.runs, args.parts.split(",")))
    rows, medians = [], {}
    for pair, values in offsets.items():
        spread = [abs(v) for v in values]
        medians[pair] = statistics.median(spread) if spread else None
        rows.append(["+".join(pair), len(values), medians[pair], max(spread) if spread else None,
                     ", ".join(f"{v:+.1f}" for v in values)])
    ours, peer = medians[("ours", "ours")], medians[("squeezelite", "squeezelite")]
    headline = []
    if ours is not None and peer:
        headline = [{"label": "slimproto group: start offset between two members, ours+ours vs squeezelite+squeezelite",
                     "ratio": ours / peer, "target": 1.0, "lower_is_better": True}]
    summary = {}
    for pair, values in minute.items():
        drift = max(values) - min(values) if values else None
        summary[f"minute_drift_ms_{'+'.join(pair)}"] = drift
        rows.append([f"{'+'.join(pair)} over a minute: offset moved by (ms)", len(values), drift, max(values, key=abs) if values else None,
                     ", ".join(f"{v:+.1f}" for v in values)])
    if start_at:
        pairs, lines = start_at
        corrections = [line for line in lines if "corrected" in line]
        for index, label in ((0, "first STMt after STMs"), (1, "1.5 s later")):
            values = [pair[index] for pair in pairs]
            spread = [abs(v) for v in values]
            summary[f"start_at_time_{'first' if index == 0 else 'later'}_median_abs_ms"] = statistics.median(spread)
            summary[f"start_at_time_{'first' if index == 0 else 'later'}_worst_abs_ms"] = max(spread)
            rows.append([f"start at a time, {label}: heard minus time since T (ms); {len(corrections)} corrections logged",
                         len(values), statistics.median(spread), max(spread), ", ".join(f"{v:+d}" for v in values)])
        summary["start_at_time_corrections"] = len(corrections)
    for pair, (group, errors, jitter) in clocks.items():
        rows.append([f"{'+'.join(pair)} on two sinks 500 ppm apart: offset at each burst (ms)", len(group),
                     max(group) - min(group) if group else None, max(group, key=abs) if group else None,
                     ", ".join(f"{v:+.1f}" for v in group)])
        for kind, member_errors in zip(pair, errors):
            rows.append([f"{'+'.join(pair)} on two clocks, {kind}: elapsed minus heard at each burst (ms; readers' lateness "
                         f"median {jitter[0]:.2f}, p99 {jitter[1]:.2f})", len(member_errors),
                         max(member_errors, key=abs) if member_errors else None, None, ", ".join(f"{v:+.1f}" for v in member_errors)])
    for step in TIMELINE_STEPS if timelines else ():
        values = [t[step] for t in timelines if step in t]
        if values:
            summary[f"timeline_ms_{step}"] = statistics.median(values)
            rows.append([f"first sound taken apart: {step} (ms after strm s was sent)", len(values), statistics.median(values),
                         max(values), ", ".join(f"{v:.1f}" for v in values)])
    if starts:
        summary["first_sound_ours_minus_squeezelite_ms"] = statistics.median(starts)
        rows.append(["first sound after strm s: ours minus squeezelite (ms)", len(starts), statistics.median(starts),
                     max(starts, key=abs), ", ".join(f"{v:+.1f}" for v in starts)])
    if first_sounds_ms:
        for kind in ("ours", "squeezelite"):
            values = [f[kind] for f in first_sounds_ms]
            summary[f"first_sound_after_strm_s_ms_{kind}"] = statistics.median(values)
            rows.append([f"first sound after strm s, {kind} (ms, absolute)", len(values), statistics.median(values),
                         max(values), ", ".join(f"{v:.1f}" for v in values)])
        for step in TIMELINE_STEPS:
            values = [f["ours_steps"][step] for f in first_sounds_ms if step in f.get("ours_steps", {})]
            if values:
                rows.append([f"first sound beside squeezelite, ours taken apart: {step} (ms after its strm s)", len(values),
                             statistics.median(values), max(values), ", ".join(f"{v:.1f}" for v in values)])
    if footprints:
        for index, label in ((0, "steady CPU %"), (1, "RSS MiB"), (2, "peak RSS MiB")):
            ratios = [f["ours"][index] / f["squeezelite"][index] for f in footprints if f["squeezelite"][index] > 0]
            values = "; ".join(f"{f['ours'][index]:.2f} vs {f['squeezelite'][index]:.2f}" for f in footprints)
            rows.append([f"{label}: ours / squeezelite", len(ratios), statistics.median(ratios) if ratios else None,
                         max(ratios) if ratios else None, values])
            if ratios and index < 2:
                summary[f"{'cpu' if index == 0 else 'rss'}_ratio_ours_to_squeezelite"] = statistics.median(ratios)
                headline.append({"label": f"slimproto player: {label} while playing, ours / squeezelite",
                                 "ratio": statistics.median(ratios), "target": 1.0, "lower_is_better": True})
    out = {"part": "slimproto", "title": "Squeezebox player beside squeezelite: group sync, first sound, CPU and memory",
           "method": "aioslimproto 3.3.0 starts two players as Music Assistant starts a group (autostart 0, STMl from both, "
                     "then `strm u` at one moment in each player's own jiffies); both play into one PulseAudio null sink, whose "
                     "monitor parec records; the first member's burst is on the left channel, the second's on the right, 3 s "
                     "into the track; the offset is the distance between the two onsets. Pairs alternate; median of |offset|. "
                     f"Over a minute: once per pair, {MINUTE_BURSTS} bursts 10 s apart from 3 s; the offset at each, and "
                     "the most it moved (largest minus smallest). "
                     "First sound, CPU, RSS: both players connected to one server, each sent `strm s` with autostart "
                     "(aioslimproto's play_url: threshold 200 KB, output threshold 2 s) at the same moment, the order "
                     "alternating; ours' track on the left channel, squeezelite's on the right, sound from the first frame; "
                     "a 10 ms stream of silence keeps the null sink in small blocks; the difference between the first "
                     "sounds in the monitor's recording (less the difference between the sends); then utime+stime over "
                     f"{STEADY_SECONDS:.0f} s of steady playback ({SETTLE_SECONDS:.0f} s after the later first sound) and "
                     "VmRSS/VmHWM at its end, from /proc. Ratios from the same run; median over the runs. "
                     "First sound as an absolute time: ours from an STMt asked as soon as its STMs arrived (jiffies, "
                     "CLOCK_MONOTONIC ms, less elapsed, its heard position from the sound server's reports) minus the "
                     "moment its `strm s` was sent (time.monotonic); squeezelite's from ours and the distance between the "
                     "two first sounds in the recording; ours taken apart from its --log-level debug lines (part timeline: "
                     "ours alone). Two clocks (part clocks): each member on its own module-pipe-sink, read by a thread "
                     "here at 48 kHz and 500 ppm faster; bursts every 10 s. "
                     "Start at a time: ours alone, a tone opened with autostart 0, unpaused at jiffies T 300 ms ahead; "
                     "the first STMt after STMs and one 1.5 s later: elapsed minus the time since T.",
           "columns": ["pair", "runs", "median |offset| ms", "worst |offset| ms", "offsets ms (first member later: +)"],
           "rows": rows, "headline": headline,
           "notes": ["squeezelite is Debian's squeezelite-pa (PulseAudio build) 1.9.9.",
                     "Ours lines its heard position up with the start time after starting (exact skips, specs/slimproto.md §Sync); "
                     "squeezelite starts its output at the time and does not count its buffer."]}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps({"median_abs_offset_ms": {"+".join(k): v for k, v in medians.items()}, **summary}))


if __name__ == "__main__":
    main()
