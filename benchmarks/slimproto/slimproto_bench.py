"""Sync between two members of a slimproto group (issue 40): ours+ours,
ours+squeezelite and squeezelite+squeezelite (Debian's squeezelite-pa) on
one PulseAudio null sink, started as Music Assistant starts a group (each
opened with autostart 0, each unpaused at one moment in its own jiffies) by
aioslimproto; the offset is read from a recording of the sink's monitor
(Tests/Slimproto/slimproto_player_test.py group_offset: the first member's
burst on the left channel, the second's on the right, 3 s in). The pairs
alternate, RUNS times each. Usage: slimproto_bench.py --ours BIN --runs N --out FILE"""
import argparse
import asyncio
import json
import os
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Slimproto"))
from slimproto_player_test import group_offset  # noqa: E402

PAIRS = (("ours", "ours"), ("ours", "squeezelite"), ("squeezelite", "squeezelite"))


async def measure(binary, runs):
    offsets = {pair: [] for pair in PAIRS}
    for _ in range(runs):
        for pair in PAIRS:
            try:
                offsets[pair].append(await group_offset(binary, pair))
            except Exception as error:  # one failed run is noted, not fatal
                print(f"slimproto_bench: {'+'.join(pair)}: {error}", file=sys.stderr)
    return offsets


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ours", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    offsets = asyncio.run(measure(args.ours, args.runs))
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
    out = {"part": "slimproto", "title": "Squeezebox group sync: offset between two members 3 s after the group's start",
           "method": "aioslimproto 3.3.0 starts two players as Music Assistant starts a group (autostart 0, STMl from both, "
                     "then `strm u` at one moment in each player's own jiffies); both play into one PulseAudio null sink, whose "
                     "monitor parec records; the first member's burst is on the left channel, the second's on the right, 3 s "
                     "into the track; the offset is the distance between the two onsets. Pairs alternate; median of |offset|.",
           "columns": ["pair", "runs", "median |offset| ms", "worst |offset| ms", "offsets ms (first member later: +)"],
           "rows": rows, "headline": headline,
           "notes": ["squeezelite is Debian's squeezelite-pa (PulseAudio build) 1.9.9.",
                     "Ours lines its heard position up with the start time after starting (exact skips, specs/slimproto.md §Sync); "
                     "squeezelite starts its output at the time and does not count its buffer."]}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)
    print(json.dumps({"median_abs_offset_ms": {"+".join(k): v for k, v in medians.items()}}))


if __name__ == "__main__":
    main()
