#!/usr/bin/env python3
"""Crossfade beside MPD 0.23 on the same queue (issue 41; README §Crossfade).

Makes 25 s tones of different albums (440 Hz, then 1000 Hz, 44.1 kHz
stereo FLAC, and a 1000 Hz one at 48 kHz, by the ffmpeg command line; MPD
never fades songs shorter than 20 s), plays them with `crossfade 3` through a
private MPD (a pipe output writing float32, paced by a real-time null
output) and through `harmonia-play --crossfade 3 --output file:`, and
measures each output from the tones alone: the amplitude of each tone in
10 ms windows, the incoming tone's rise fitted as equal-power (sin(pi/2 x))
and as MPD's (sin^2), the overlap's start and length from the better fit,
the largest |gOut^2 + gIn^2 - 1| (0 for equal power) and the total length.
Three cases: the natural end, a manual `next` while playing, and 44.1 -> 48
kHz (each output stays at 44.1 kHz). Not part of `make
test` (it is a comparison, not a check, and takes about 2.5 minutes of real
time); run it with
`python3 Tests/MPD/crossfade_compare.py --harmonia .build/debug/harmonia-play`.
"""
import argparse
import array
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mpd_diff import PrivateMPD, Connection  # noqa: E402

RATE = 44100
SECONDS = 25
FADE = 3
TONES = [("a.flac", 440, "First", RATE), ("b.flac", 1000, "Second", RATE), ("c48.flac", 1000, "Third", 48000)]
SKIP_AFTER = 8.0  # seconds of playing before the manual `next` (MPD, paced)
PLAY_TIMEOUT = 120.0  # seconds for a player to play the queue


def make_tones(folder):
    for name, frequency, album, rate in TONES:
        expression = f"0.5*sin(2*PI*{frequency}*t)"
        subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi",
                        "-i", f"aevalsrc={expression}|{expression}:s={rate}:d={SECONDS}",
                        "-metadata", f"album={album}", "-metadata", "track=1", "-metadata", f"title={name}",
                        "-c:a", "flac", os.path.join(folder, name)], check=True, timeout=60)


class PipeMPD(PrivateMPD):
    """The private MPD with a pipe output writing float32 stereo at 44.1 kHz to
    `out.raw`, beside a null output that plays in real time (`sync`): MPD's
    crossfade depends on its buffer, and unpaced (the pipe alone) it measured
    0.73 s for `crossfade 3`; a sound card paces it."""

    def config(self):
        null = 'audio_output {\n    type "null"\n    name "null"\n    mixer_type "software"\n}'
        paced = 'audio_output {\n    type "null"\n    name "clock"\n    sync "yes"\n}'
        pipe = ('audio_output {\n    type "pipe"\n    name "pipe"\n'
                f'    command "cat > {self.dir}/out.raw"\n    format "{RATE}:f:2"\n}}')
        return super().config().replace(null, paced + "\n" + pipe)


def play_mpd(music, second, skip_after=None):
    """Plays a.flac then `second` with crossfade; with `skip_after`, sends
    `next` that many seconds after the start. Returns the output and status's xfade line."""
    with PipeMPD(music) as mpd, Connection("127.0.0.1", mpd.port, timeout=PLAY_TIMEOUT) as c:
        for line in ["clear", f"crossfade {FADE}", "add a.flac", f"add {second}", "play 0"]:
            answer = c.command(line)
            if not answer or answer[-1] != "OK":
                raise RuntimeError(f"mpd: {line}: {answer}")
        xfade = [line for line in c.command("status") if line.startswith("xfade:")]
        if skip_after is not None:
            time.sleep(skip_after)  # a listener's press, in real time (a comparison, not a test)
            c.command("next")
        deadline = time.monotonic() + PLAY_TIMEOUT
        while time.monotonic() < deadline:
            if "state: stop" in c.command("status"):
                break
            c.command("idle player")  # returns at the next change of state or song
        else:
            raise RuntimeError("mpd did not finish the queue in time")
        mpd.stop()
        with open(os.path.join(mpd.dir, "out.raw"), "rb") as f:
            return f.read(), xfade


def play_harmonia(binary, music, folder, skip=False, second="b.flac"):
    """Plays a.flac then `second` with --crossfade; with `skip`, a `next` on the
    control channel as soon as it is read (the file output runs faster than
    real time, so where it lands varies; the measure finds it)."""
    out = os.path.join(folder, "harmonia.f32")
    command = [binary, "--quiet", "--output", "file:" + out, "--crossfade", str(FADE)]
    if skip:
        command += ["--control", "stdin"]
    command += [os.path.join(music, "a.flac"), os.path.join(music, second)]
    stdin = b'{"message_id":1,"command":"next"}\n' if skip else None
    subprocess.run(command, input=stdin, stdout=subprocess.DEVNULL, check=True, timeout=PLAY_TIMEOUT)
    with open(out, "rb") as f:
        return f.read()


def amplitudes(left, start, count, frequencies):
    """Least-squares amplitude of each tone in left[start:start+count]."""
    n = 2 * len(frequencies)
    normal = [[0.0] * (n + 1) for _ in range(n)]
    for i in range(start, start + count):
        t = i / RATE
        basis = []
        for f in frequencies:
            basis += [math.sin(2 * math.pi * f * t), math.cos(2 * math.pi * f * t)]
        y = left[i]
        for r in range(n):
            br = basis[r]
            row = normal[r]
            for k in range(n):
                row[k] += br * basis[k]
            row[n] += br * y
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(normal[r][col]))
        normal[col], normal[pivot] = normal[pivot], normal[col]
        for r in range(n):
            if r != col:
                factor = normal[r][col] / normal[col][col]
                for k in range(col, n + 1):
                    normal[r][k] -= factor * normal[col][k]
    solution = [normal[r][n] / normal[r][r] for r in range(n)]
    return [math.hypot(solution[2 * j], solution[2 * j + 1]) for j in range(len(frequencies))]


def line_fit(xs, ys):
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    residual = max(abs(y - (my + slope * (x - mx))) for x, y in zip(xs, ys))
    return slope, mx - my / slope, residual


def tone_levels(raw, first, seconds):
    """(time, outgoing, incoming) amplitudes relative to 0.5, in 10 ms windows from `first` s."""
    samples = array.array("f")
    samples.frombytes(raw[: len(raw) // 8 * 8])
    left = samples[0::2]
    window = RATE // 100
    points = []
    start = max(0, int(first * RATE))
    while start + window <= min(len(left), int((first + seconds) * RATE)):
        a, b = amplitudes(left, start, window, [440, 1000])
        points.append(((start + window / 2) / RATE, a / 0.5, b / 0.5))
        start += window
    return len(left), points


def fit_fade(points):
    """The overlap from the incoming tone's rise: start, length, curve, power dip;
    None when it rises within one window (a cut)."""
    middle = [(t, a, b) for t, a, b in points if 0.1 < b < 0.9]
    if len(middle) < 3:
        return None
    fits = {}
    for name, shape in (("equal-power sin", lambda g: math.asin(min(g, 1))),
                        ("sin^2", lambda g: math.asin(math.sqrt(min(g, 1))))):
        slope, start, residual = line_fit([p[0] for p in middle], [shape(p[2]) for p in middle])
        fits[name] = (residual, start, math.pi / 2 / slope)
    curve = min(fits, key=lambda k: fits[k][0])
    _, start, length = fits[curve]
    inside = [(a, b) for t, a, b in points if start + 0.05 < t < start + length - 0.05]
    power = max((abs(a * a + b * b - 1) for a, b in inside), default=float("nan"))
    return {"curve": curve, "start": start, "length": length, "power": power}


def measure(raw, first, seconds):
    frames, points = tone_levels(raw, first, seconds)
    return frames, fit_fade(points)


def describe(name, frames, fade, expected_start=None):
    text = f"{name}: total {frames / RATE:.4f} s ({frames} frames); "
    if fade is None:
        return text + "no overlap: the next track is at full level within 10 ms (no fade)"
    text += f"curve fits {fade['curve']}; overlap from {fade['start']:.4f} s"
    if expected_start is not None:
        text += f" ({(fade['start'] - expected_start) * 1000:+.1f} ms)"
    return text + f", {fade['length']:.4f} s long; max |gOut^2+gIn^2-1| = {fade['power']:.3f}"


def onset(raw):
    """Where the incoming tone first reaches 2 % (a coarse search, 10 ms windows)."""
    frames, points = tone_levels(raw, 0, 2 * SECONDS)
    return next((t for t, _, b in points if b > 0.02), None)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--harmonia", required=True, help="the harmonia-play binary")
    args = parser.parse_args()
    binary = os.path.abspath(args.harmonia)
    folder = tempfile.mkdtemp(prefix="crossfade-compare-")
    try:
        music = os.path.join(folder, "music")
        os.makedirs(music)
        make_tones(music)
        expected_start = SECONDS - FADE
        print(f"queue: {SECONDS} s tones (440 Hz, then 1000 Hz), different albums, crossfade {FADE} s")
        print(f"natural end (exact: overlap from {expected_start} s, {FADE} s long, total {2 * SECONDS - FADE} s):")
        mpd_raw, xfade = play_mpd(music, "b.flac")
        print(f"  mpd status after 'crossfade {FADE}': {xfade}")
        for name, raw in (("MPD 0.23", mpd_raw), ("harmonia-play", play_harmonia(binary, music, folder))):
            frames, fade = measure(raw, expected_start - 1, FADE + 2)
            print("  " + describe(name, frames, fade, expected_start))
        print(f"manual next while playing (MPD: {SKIP_AFTER} s after play; ours: as soon as the control line is read):")
        for name, raw in (("MPD 0.23", play_mpd(music, "b.flac", SKIP_AFTER)[0]),
                          ("harmonia-play", play_harmonia(binary, music, folder, skip=True))):
            start = onset(raw)
            if start is None:
                print(f"  {name}: the next track never sounded")
                continue
            frames, fade = measure(raw, max(0, start - 1), FADE + 2)
            print("  " + describe(name, frames, fade))
        print("44.1 -> 48 kHz (both outputs stay at 44.1 kHz and convert what follows):")
        for name, raw in (("MPD 0.23", play_mpd(music, "c48.flac")[0]),
                          ("harmonia-play", play_harmonia(binary, music, folder, second="c48.flac"))):
            frames, fade = measure(raw, expected_start - 1, FADE + 2)
            print("  " + describe(name, frames, fade, expected_start))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
