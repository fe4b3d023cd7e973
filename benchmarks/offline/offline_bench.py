#!/usr/bin/env python3
"""Offline copies (issue 30): (a) replaying a 10-minute FLAC from the offline
store against the same file played locally — first sound and CPU time; (b)
downloading it with `harmonia-play offline add` against `curl -o` from the
same local HTTP server (Tests/Network/fault_server.py, on loopback).

(a) first sound: from exec to the first non-silent fragment on the sink's
monitor (benchmarks/latency/first_sound.py's measure), for
`harmonia-play --store STORE http://127.0.0.1:PORT/FILE` (its copy complete:
no request is made, checked in the server's log) and `harmonia-play FILE`.
CPU: user+sys of each player's whole life (os.wait4's rusage) playing the
first SECONDS of the file in real time (`--end SECONDS`) to the same sink.
(b) wall time of each download into a fresh store (ours: SQLite index,
fsync, SHA-256) or a fresh file (curl); throughput = size / time.

Runs alternate (ours, peer, ours, peer…) so drift hits both alike; figures
are medians; ratios are ours ÷ peer. Writes the contract's JSON
(benchmarks/results/offline.json). Standard library only; every process
started here is stopped in a finally block; every wait is bounded.
"""
import argparse, json, os, shutil, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "latency"))
from results_file import write_table  # noqa: E402
from first_sound import first_sound  # noqa: E402


def log(text):
    print("offline_bench: " + text, file=sys.stderr, flush=True)


class Server:
    """fault_server.py serving one folder on loopback; its request log read back."""

    def __init__(self, root, work):
        self.log_path = os.path.join(work, "requests.jsonl")
        if os.path.exists(self.log_path):
            os.remove(self.log_path)
        script = os.path.join(HERE, "..", "..", "Tests", "Network", "fault_server.py")
        self.process = subprocess.Popen([sys.executable, script, "--root", root, "--log", self.log_path],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError("the HTTP server did not start")
        self.port = int(line)

    def url(self, name):
        return f"http://127.0.0.1:{self.port}/{name}"

    def requests(self):
        try:
            with open(self.log_path) as f:
                return sum(1 for _ in f)
        except FileNotFoundError:
            return 0

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def timed(command, timeout):
    """(wall seconds, user+sys CPU seconds) of one run of `command`, which must succeed."""
    start = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = start + timeout
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{command[0]} took more than {timeout} s")
            time.sleep(0.005)
        wall = time.monotonic() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            raise RuntimeError(f"{' '.join(command)}: exit {process.returncode}: {process.stderr.read().decode()[-400:]}")
        return wall, usage.ru_utime + usage.ru_stime
    finally:
        if process.returncode is None:
            process.kill()
            process.wait()


def median(values):
    return round(statistics.median(values), 4)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ours", required=True)
    p.add_argument("--file", required=True, help="the 10-minute FLAC")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--seconds", type=float, default=20, help="seconds played for the CPU figure")
    p.add_argument("--sink", default="harmonia_null")
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)
    a = p.parse_args()
    os.makedirs(a.work, exist_ok=True)
    root = os.path.join(a.work, "root")
    os.makedirs(root, exist_ok=True)
    name = os.path.basename(a.file)
    served = os.path.join(root, name)
    if not os.path.exists(served):
        shutil.copyfile(a.file, served)
    size = os.path.getsize(served)
    local = os.path.abspath(served)
    server = Server(root, a.work)
    try:
        url = server.url(name)
        # (b) downloads, alternating; the last store is kept for (a).
        store = os.path.join(a.work, "store")
        download = {"harmonia-play offline add": [], "curl -o": []}
        for _ in range(a.runs):
            shutil.rmtree(store, ignore_errors=True)
            download["harmonia-play offline add"].append(timed([a.ours, "offline", "add", "--store", store, url], 300)[0])
            target = os.path.join(a.work, "curl.out")
            if os.path.exists(target):
                os.remove(target)
            download["curl -o"].append(timed(["curl", "-sS", "-f", "-o", target, url], 300)[0])
            if os.path.getsize(target) != size:
                raise RuntimeError("curl fetched a short file")
        # (a) replay from the store vs the local file.
        before = server.requests()
        players = {
            "offline copy": [a.ours, "--quiet", "--no-mpris", "--device", a.sink, "--store", store, url],
            "local file": [a.ours, "--quiet", "--no-mpris", "--device", a.sink, local],
        }
        sound = {n: [] for n in players}
        cpu = {n: [] for n in players}
        for _ in range(a.runs):
            for n, command in players.items():
                sound[n].append(round(first_sound(command, a.sink), 1))
            for n, command in players.items():
                cpu[n].append(timed(command[:1] + ["--end", str(a.seconds)] + command[1:], a.seconds + 60)[1])
        requests = server.requests() - before
    finally:
        server.stop()
    if requests:
        raise RuntimeError(f"replaying the offline copy made {requests} request(s) to the server")

    mb = size / 1e6
    ours_t, curl_t = median(download["harmonia-play offline add"]), median(download["curl -o"])
    throughput_ratio = round(curl_t / ours_t, 3)  # ours' throughput ÷ curl's
    sound_ratio = round(statistics.median(sound["offline copy"]) / statistics.median(sound["local file"]), 3)
    cpu_ratio = round(statistics.median(cpu["offline copy"]) / statistics.median(cpu["local file"]), 3)
    rows = [
        ["first sound (ms)", median(sound["offline copy"]), median(sound["local file"]), sound_ratio],
        [f"CPU time, {a.seconds:g} s played (s)", median(cpu["offline copy"]), median(cpu["local file"]), cpu_ratio],
        [f"download of {mb:.1f} MB (s)", ours_t, curl_t, round(ours_t / curl_t, 3)],
        ["download throughput (MB/s)", round(mb / ours_t, 1), round(mb / curl_t, 1), throughput_ratio],
    ]
    headline = [
        {"label": "Offline replay: first sound vs the local file", "ratio": sound_ratio, "target": 1.1, "lower_is_better": True},
        {"label": "Offline replay: CPU time vs the local file", "ratio": cpu_ratio, "target": 1.1, "lower_is_better": True},
        {"label": "offline add throughput vs curl -o", "ratio": throughput_ratio, "target": 0.9, "lower_is_better": False,
         "met": throughput_ratio >= 0.9},
    ]
    method = (
        f"One 10-minute stereo 44.1 kHz 16-bit FLAC ({mb:.1f} MB, generated with ffmpeg) served by "
        f"Tests/Network/fault_server.py on 127.0.0.1 (Python's threading HTTP server, Range and ETag). "
        f"(a) harmonia-play (release build, `--quiet --no-mpris --device {a.sink}`) playing the URL with "
        f"`--store` holding its complete copy (0 requests reached the server: checked in its log) against the same "
        f"player on the local file. First sound: exec to the first non-silent 10 ms fragment on the null sink's "
        f"monitor (benchmarks/latency/first_sound.py). CPU: user+sys of the player's whole life (os.wait4) playing "
        f"the first {a.seconds:g} s in real time (`--end {a.seconds:g}`). (b) wall time of "
        f"`harmonia-play offline add --store FRESH URL` (index, fsync, SHA-256 included) and of "
        f"`curl -sS -f -o FILE URL`, from the same server. {a.runs} runs each, alternating; medians. Ratios: "
        f"first sound and CPU offline ÷ local (goal ≤ 1.1, within 10 %); throughput ours ÷ curl (goal ≥ 0.9).")
    out = {"part": "offline", "title": "Offline copies: replay vs a local file, offline add vs curl",
           "method": method, "columns": ["Measure", "ours (offline / offline add)", "peer (local file / curl)", "ratio ours ÷ peer"],
           "rows": rows, "headline": headline, "notes": [],
           "runs": {"first_sound_ms": sound, "cpu_s": cpu, "download_s": download}}
    write_table(out, a.out)
    log(f"wrote {a.out}")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
