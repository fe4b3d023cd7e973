#!/usr/bin/env python3
"""Runs harmonia-play over hostile files — specs/hardening.md §Tests.

    run_hostile.py HARMONIA_PLAY FILES_DIR [--jobs N] [--only SUBSTRING]

For every file listed in FILES_DIR/manifest.json (hostile_files.py) it runs
`info`, `info --json`, `decode` and `play --output file:` and fails a run that
- dies by a signal (a Swift trap is SIGILL/SIGTRAP) or exits other than 0/1;
- is still running after the deadline (a hang);
- peaks above the memory bound (maximum resident set, from wait4);
- fails without exactly one `harmonia-play: PATH: CATEGORY: message` line
  per failed input, or prints anything else on stderr but warnings;
- breaks a per-file check from the manifest (a tag that must be absent,
  NaN samples, a negative duration, a message that must say what is wrong).
Prints one line per failure and a summary; exits 1 when anything failed.
"""
import array
import concurrent.futures
import json
import math
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time

DEADLINE_SECONDS = 60
MEMORY_BOUND_KB = 300 * 1024
CATEGORIES = "notFound|ioError|unsupported|decodeError|invalidArgument|invalidState|outputError"
ERROR_LINE = re.compile(r"^harmonia-play: (.+): (" + CATEGORIES + r"): \S.*$")
WARNING_LINE = re.compile(r"^harmonia-play: warning: \S.*$")


def run(argv):
    """(status or -signal, stdout, stderr, max RSS KiB, timed out)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + DEADLINE_SECONDS
        timed_out = False
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                timed_out = True
                process.kill()
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.02)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return process.returncode, out.read(), err.read(), usage.ru_maxrss, timed_out


def check_stderr(stderr, status, problems):
    lines = stderr.decode("utf-8", "replace").splitlines()
    errors = [l for l in lines if ERROR_LINE.match(l)]
    others = [l for l in lines if not ERROR_LINE.match(l) and not WARNING_LINE.match(l)]
    if others:
        problems.append(f"stderr lines not in the error/warning form: {others[:2]!r}")
    if status == 1 and not errors:
        problems.append("exit 1 without a categorised error line")
    if status == 0 and errors:
        problems.append(f"exit 0 with an error line: {errors[0]!r}")
    return errors


def check_file(binary, folder, entry):
    path = os.path.join(folder, entry["name"])
    checks = entry["checks"]
    failures = []
    with tempfile.TemporaryDirectory() as scratch:
        pcm = os.path.join(scratch, "out.f32")
        commands = {
            "info": [binary, "info", path],
            "info --json": [binary, "info", "--json", path],
            "decode": [binary, "decode", "-o", pcm, path],
            "play": [binary, "play", "--output", f"file:{pcm}"]
            + (["--replaygain", "track"] if "replaygain" in checks else []) + [path],
        }
        for label, argv in commands.items():
            if os.path.exists(pcm):
                os.remove(pcm)
            status, stdout, stderr, rss, timed_out = run(argv)
            problems = []
            if timed_out:
                problems.append(f"still running after {DEADLINE_SECONDS} s (a hang)")
            elif status < 0:
                problems.append(f"killed by {signal.Signals(-status).name}")
            elif status not in (0, 1):
                problems.append(f"exit status {status}")
            if rss > MEMORY_BOUND_KB:
                problems.append(f"peak RSS {rss // 1024} MiB > {MEMORY_BOUND_KB // 1024} MiB")
            if not timed_out and status >= 0:
                errors = check_stderr(stderr, status, problems)
                text = stderr.decode("utf-8", "replace")
                for check in checks:
                    if check.startswith("message_mentions:") and errors:
                        word = check.split(":", 1)[1]
                        if word not in text:
                            problems.append(f"the message does not mention {word}: {errors[0]!r}")
                if label == "info --json" and status == 0:
                    try:
                        obj = json.loads(stdout.decode("utf-8").splitlines()[0])
                    except Exception as e:  # noqa: BLE001 — any failure is the finding
                        problems.append(f"stdout is not a JSON line ({e})")
                        obj = {}
                    for check in checks:
                        if check.startswith("no_tag:") and check[7:] in obj:
                            problems.append(f"{check[7:]} = {obj[check[7:]]!r}; an absurd tag must be absent")
                    duration = obj.get("duration")
                    if duration is not None and (not isinstance(duration, (int, float)) or duration < 0):
                        problems.append(f"duration {duration!r}")
                if label == "info" and status == 0 and "not_live" in checks and "live" in stdout.decode("utf-8", "replace"):
                    problems.append("reported as a live stream")
                if label in ("play", "decode") and "no_nan" in checks and os.path.exists(pcm):
                    samples = array.array("f")
                    with open(pcm, "rb") as f:
                        samples.frombytes(f.read())
                    if any(not math.isfinite(s) for s in samples):
                        problems.append("NaN or infinite samples in the output")
            for problem in problems:
                failures.append(f"{entry['name']} [{label}]: {problem}")
    return failures


def main():
    args = sys.argv[1:]
    jobs = os.cpu_count() or 2
    only = None
    if "--jobs" in args:
        i = args.index("--jobs")
        jobs = int(args[i + 1])
        del args[i:i + 2]
    if "--only" in args:
        i = args.index("--only")
        only = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        raise SystemExit(__doc__)
    binary, folder = args
    with open(os.path.join(folder, "manifest.json")) as f:
        entries = [e for e in json.load(f) if only is None or only in e["name"]]
    started = time.monotonic()
    failures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        for result in pool.map(lambda e: check_file(binary, folder, e), entries):
            for line in result:
                print(line, flush=True)
            failures += result
    failed_files = len({line.split(" [", 1)[0] for line in failures})
    print(f"run_hostile.py: {len(entries)} files, {len(entries) * 4} runs, {len(failures)} failed runs "
          f"({failed_files} files) in {time.monotonic() - started:.0f} s")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
