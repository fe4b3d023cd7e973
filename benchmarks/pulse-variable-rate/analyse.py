# Reads the recordings of run.sh's probes (specs/services.md §Crossfade,
# "Not on PulseAudio"):
#   analyse.py rate FILE   a 1000 Hz probe per 5 ms window: how long it sounded
#                          at 1088.4 Hz (44.1 kHz frames played at 48 kHz), at
#                          918.75 Hz (48 kHz frames at 44.1 kHz), or silent
#   analyse.py same FILE   whether same_probe's noise (same-source.raw) came
#                          through the sink's monitor bit-exact
import sys
import numpy as np


def rate(path):
    x = np.fromfile(path, dtype=np.float32)
    sample_rate, win = 48000, 240
    loud = np.nonzero(np.abs(x) > 0.05)[0]
    x = x[loud[0]:loud[-1]]
    targets = {"1000": 1000.0, "1088": 1088.4, "919": 918.75}
    counts = {"1000": 0, "1088": 0, "919": 0, "silent": 0, "other": 0}
    for i in range(0, len(x) - win, win):
        w = x[i:i + win]
        if np.sqrt(np.mean(w * w)) < 0.05:
            kind = "silent"
        else:
            signs = np.signbit(w)
            idx = np.nonzero(signs[1:] != signs[:-1])[0]
            kind = "other"
            if len(idx) >= 3:
                f = (len(idx) - 1) / 2 / ((idx[-1] - idx[0]) / sample_rate)
                near = min(targets, key=lambda k: abs(targets[k] - f))
                if abs(targets[near] - f) <= 30:
                    kind = near
        counts[kind] += 1
    print("length %.3f s; per 5 ms window:" % (len(x) / sample_rate),
          ", ".join("%s %d ms" % (k, v * 5) for k, v in counts.items()))


def same(path):
    src = np.fromfile("same-source.raw", dtype=np.float32).reshape(-1, 2)[:, 0]
    rec = np.fromfile(path, dtype=np.float32).reshape(-1, 2)[:, 0]
    for h in np.nonzero(rec == src[0])[0]:
        seg = rec[h:h + len(src)]
        if len(seg) == len(src) and np.array_equal(seg, src):
            print("bit-exact: all %d frames equal" % len(src))
            return
    c = np.correlate(rec, src[:4800], mode="valid")
    k = int(np.argmax(c))
    seg = rec[k:k + len(src)]
    n = min(len(seg), len(src))
    print("not bit-exact: largest |difference| %.3g, %d of %d frames differ"
          % (np.max(np.abs(seg[:n] - src[:n])), int(np.sum(seg[:n] != src[:n])), n))


{"rate": rate, "same": same}[sys.argv[1]](sys.argv[2])
