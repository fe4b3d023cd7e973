#!/usr/bin/env python3
"""Folds run-pipewire.sh's measurements (first_sound.py, position_error.py on
both servers) into one results file for benchmarks/report.py."""
import json, os, sys

work = sys.argv[1]


def read(name):
    with open(os.path.join(work, name)) as f:
        return json.load(f)


first = {"PulseAudio": read("first-pa.json"), "PipeWire": read("first-pw.json")}
position = {"PulseAudio, 10 ms tap": read("pos-pa.json"), "PipeWire, 10 ms tap": read("pos-pw-10.json"),
            "PipeWire, 100 ms tap": read("pos-pw-100.json")}
rows = []
for server, d in first.items():
    for player in ("harmonia-play engine", "harmonia-play", "paplay", "pw-play", "mpv"):
        if player in d:
            rows.append([f"first sound, {server}: {player}", d[player]["median_ms"], "ms"])
for label, d in position.items():
    cycles = [r.get("graph_cycle_ms") for r in d["harmonia-play"]["runs"] if r.get("graph_cycle_ms")]
    cycle = f" (graph cycle {cycles[0]} ms)" if cycles else ""
    for player in ("harmonia-play", "mpv"):
        if player in d:
            rows.append([f"position − tap, {label}{cycle}: {player}", d[player]["median_ms"], "ms"])
engine, paplay = first["PipeWire"]["harmonia-play engine"]["median_ms"], first["PipeWire"]["paplay"]["median_ms"]
out = {
    "part": "pipewire",
    "title": "PipeWire beside PulseAudio: first sound and heard position",
    "method": ("Release build. First sound: exec (or, for the engine, `play` on its control socket) to the first non-silent "
               "10 ms fragment on the sink's monitor (benchmarks/latency/first_sound.py), medians of interleaved runs. "
               "Position: `status` (mpv: `time-pos`) every 20 ms against the lower envelope of a tap on the player's own "
               "stream (parec --monitor-stream; benchmarks/latency/position_error.py), medians of runs; on PipeWire the "
               "sink takes a frame one graph cycle after the tap delivers it (specs/realtime.md §PipeWire)."),
    "columns": ["Measure", "value", "unit"],
    "rows": rows,
    "headline": [{"label": "first sound on PipeWire: harmonia-play engine ÷ paplay", "ratio": round(engine / paplay, 2),
                  "target": 1.3, "lower_is_better": True}],
    "notes": ["harmonia-play from exec pays for loading Debian's FFmpeg (~150 libraries); the engine figure is what an app "
              "embedding it, and `serve`, see.",
              "Against what the sink received, add one graph cycle to the PipeWire position figures."],
}
print(json.dumps(out, indent=1))
