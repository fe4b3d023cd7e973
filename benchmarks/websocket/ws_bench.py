#!/usr/bin/python3
"""WebSocket transport benchmark: `status` round trips over WebSocket while
100 other clients receive every event, against the same request over the
Unix socket's JSON lines (the same dispatcher, in the same process, in the
same run), and the engine's underruns on a real PulseAudio sink meanwhile.

    ws_bench.py --ours HARMONIA_PLAY --file AUDIO --work DIR --out RESULT.json [--runs N]

Needs the bench's private PulseAudio (PULSE_SERVER set by `make bench`).
"""
import argparse
import asyncio
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

import websockets

CLIENTS = 100
REQUESTS = 2000
WARMUP = 200
TICK_MS = 50


def percentile(samples, q):
    s = sorted(samples)
    return s[min(len(s) - 1, int(q * len(s)))]


def cpu_seconds(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def listeners(url, count, stop, received):
    async def one(i):
        async with websockets.connect(url, max_size=1 << 22) as ws:
            while not stop.is_set():
                try:
                    await asyncio.wait_for(ws.recv(), 0.5)
                    received[i] += 1
                except asyncio.TimeoutError:
                    pass
    return [asyncio.create_task(one(i)) for i in range(count)]


async def ws_round_trips(url, n):
    times = []
    async with websockets.connect(url, max_size=1 << 22) as ws:
        for i in range(n):
            t0 = time.perf_counter_ns()
            await ws.send(json.dumps({"message_id": i, "command": "status"}))
            while True:
                message = json.loads(await ws.recv())
                if message.get("message_id") == i:
                    break
            times.append(time.perf_counter_ns() - t0)
    return times


def unix_round_trips(path, n):
    times = []
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
        f = s.makefile("rwb", buffering=0)
        for i in range(n):
            t0 = time.perf_counter_ns()
            f.write(b'{"message_id": %d, "command": "status"}\n' % i)
            while True:
                message = json.loads(f.readline())
                if message.get("message_id") == i:
                    break
            times.append(time.perf_counter_ns() - t0)
    return times


class UnderrunCounter:
    """A Unix-socket client counting the player's `underrun` events."""

    def __init__(self, path):
        import threading
        self.count = 0
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(path)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.sock.makefile("rb"):
            if json.loads(line).get("event") == "underrun":
                self.count += 1

    def close(self):
        self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


def underruns(path):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
        f = s.makefile("rwb", buffering=0)
        f.write(b'{"message_id": "u", "command": "status"}\n')
        while True:
            message = json.loads(f.readline())
            if message.get("message_id") == "u":
                return message


async def one_run(a, run):
    sock = os.path.join(a.work, f"ws-bench-{run}.sock")
    err = open(os.path.join(a.work, f"ws-bench-{run}.stderr"), "w+")
    player = subprocess.Popen([a.ours, "--listen", "127.0.0.1:0", "--control", f"unix:{sock}", "--tick", str(TICK_MS),
                               "--output", "pulse", "--repeat", "one", "--no-mpris", "--quiet", a.file],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    try:
        deadline = time.monotonic() + 20
        port = None
        while port is None:
            if time.monotonic() > deadline or player.poll() is not None:
                raise RuntimeError("the player did not start: " + open(err.name).read())
            match = re.search(r"web remote on http://127.0.0.1:(\d+)/", open(err.name).read())
            port = int(match.group(1)) if match else None
            if port is None or not os.path.exists(sock):
                port = None
                await asyncio.sleep(0.05)
        url = f"ws://127.0.0.1:{port}/ws"
        result = {}
        # Alone: no listener.
        result["ws_alone"] = (await ws_round_trips(url, WARMUP + REQUESTS))[WARMUP:]
        result["unix_alone"] = (await asyncio.to_thread(unix_round_trips, sock, WARMUP + REQUESTS))[WARMUP:]
        # With 100 clients receiving every event.
        stop = asyncio.Event()
        received = [0] * CLIENTS
        tasks = await listeners(url, CLIENTS, stop, received)
        await asyncio.sleep(1)
        counter = UnderrunCounter(sock)
        cpu0, t0 = cpu_seconds(player.pid), time.monotonic()
        before = underruns(sock)
        result["ws_loaded"] = (await ws_round_trips(url, WARMUP + REQUESTS))[WARMUP:]
        result["unix_loaded"] = (await asyncio.to_thread(unix_round_trips, sock, WARMUP + REQUESTS))[WARMUP:]
        await asyncio.sleep(max(0, 10 - (time.monotonic() - t0)))  # at least 10 s of fan-out
        elapsed = time.monotonic() - t0
        result["cpu_per_s_loaded"] = (cpu_seconds(player.pid) - cpu0) / elapsed
        after = underruns(sock)
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        result["events_per_client_per_s"] = statistics.median(received) / (elapsed + 1)
        result["fanout_seconds"] = elapsed
        result["underrun_events"] = counter.count
        counter.close()
        result["state_before"], result["state_after"] = before["result"]["state"], after["result"]["state"]
        # Alone again, for CPU at rest.
        cpu1, t1 = cpu_seconds(player.pid), time.monotonic()
        await asyncio.sleep(5)
        result["cpu_per_s_alone"] = (cpu_seconds(player.pid) - cpu1) / (time.monotonic() - t1)
        return result
    finally:
        player.terminate()
        try:
            player.wait(10)
        except subprocess.TimeoutExpired:
            player.kill()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ours", required=True)
    p.add_argument("--file", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    runs = [asyncio.run(one_run(a, i)) for i in range(a.runs)]

    def med(key, q):
        return statistics.median(percentile(r[key], q) for r in runs) / 1000

    def ratio(x, y):
        return round(x / y, 2) if y else None

    rows = []
    for label, key in [("alone", "alone"), (f"{CLIENTS} clients receiving every event", "loaded")]:
        for q in (0.5, 0.99):
            ws, unix = med(f"ws_{key}", q), med(f"unix_{key}", q)
            rows.append([f"`status` round trip p{int(q * 100)}, {label} (µs)", round(ws), round(unix), ratio(ws, unix)])
    underrun_total = sum(r["underrun_events"] for r in runs)
    rows.append([f"underruns during {round(statistics.median(r['fanout_seconds'] for r in runs))} s of fan-out to {CLIENTS} clients, all runs",
                 underrun_total, None, None])
    rows.append(["events received per client per second (median)", round(statistics.median(r["events_per_client_per_s"] for r in runs), 1), None, None])
    cpu_l, cpu_a = statistics.median(r["cpu_per_s_loaded"] for r in runs), statistics.median(r["cpu_per_s_alone"] for r in runs)
    rows.append([f"player CPU, s per s: {CLIENTS} clients / none", round(cpu_l, 3), round(cpu_a, 3), ratio(cpu_l, cpu_a)])
    p99_loaded = ratio(med("ws_loaded", .99), med("unix_loaded", .99))
    out = {
        "part": "websocket",
        "title": "WebSocket transport",
        "method": (f"harmonia-play --listen --control unix: --tick {TICK_MS} --output pulse (bench's private PulseAudio), release build; "
                   f"{REQUESTS} `status` round trips after {WARMUP} warm-up, over WebSocket (python3-websockets) and over the "
                   f"Unix socket (the same dispatcher, same process, same run), alone and with {CLIENTS} clients connected "
                   f"receiving every event; underruns counted from the player's `underrun` events; medians of {a.runs} runs."),
        "columns": ["Measure", "WebSocket", "Unix socket (peer)", "ratio"],
        "rows": rows,
        "headline": [{"label": f"WebSocket ÷ Unix socket `status` p99 with {CLIENTS} listening clients", "ratio": p99_loaded,
                      "target": None, "lower_is_better": True}],
        "notes": ["Both transports go through one main loop; the difference is the framing and NIO's event-loop hop.",
                  "The client is Python: its own time is in every round trip, equally for both transports.",
                  f"Underruns: {underrun_total} in all runs (the real-time path never waits for a client)."],
    }
    json.dump(out, open(a.out, "w"), indent=1)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
