"""Two sinks with clocks of their own (issue 40, specs/slimproto.md
§Benchmarks): a group of two players, each on its own PulseAudio
module-pipe-sink, each sink's FIFO read by a thread here at its own pace —
one at 48,000 frames a second by CLOCK_MONOTONIC, the other `ppm` faster.
The pipe sink writes as fast as its FIFO takes audio, so the reader is the
sink's clock, as a sound card's crystal is. Each block read is stamped on
CLOCK_MONOTONIC (time.monotonic, the clock of jiffies): a frame is heard
when the reader takes it.

The two members are started as Music Assistant starts a group (autostart
0, STMl from both, `strm u` at one moment in each one's jiffies), each
playing a burst every 10 s from 3 s; aioslimproto sends no sync
corrections of its own (Music Assistant's sync loop lives in its player
provider). Returns, per burst, the offset between the two members (ms,
first minus second) and, per member, its elapsed at each burst's onset
(read from STMt every 250 ms, interpolated) minus the burst's place in the
track: how far what the player reports is from what its sink played.
A measurement; asserts nothing."""
import asyncio
import os
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "Tests", "Slimproto"))
from slimproto_player_test import free_port, new_server, start_group, start_http, tear_down  # noqa: E402

RATE = 48_000
BLOCK = 480  # frames read at a time: 10 ms
FRAME_BYTES = 8  # float32 stereo


class PacedSink:
    """A module-pipe-sink `name` whose FIFO a thread reads at RATE × (1 + ppm/1e6) frames a second."""

    def __init__(self, env, name, ppm, work):
        self.env, self.name, self.factor = env, name, 1 + ppm / 1e6
        self.path = os.path.join(work, f"{name}.fifo")
        os.mkfifo(self.path)
        out = subprocess.run(["pactl", "load-module", "module-pipe-sink", f"file={self.path}", f"sink_name={name}",
                              "format=float32le", f"rate={RATE}", "channels=2"], env=env, capture_output=True, text=True, check=True)
        self.module = out.stdout.strip()
        self.fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        os.set_blocking(self.fd, True)
        self.data = bytearray()
        self.stamps = []  # time.monotonic() at which block i was due (the sink's clock)
        self.lateness = []  # how late block i was taken (s): the reader's own jitter
        self.running = True
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        start = time.monotonic()
        period = BLOCK / (RATE * self.factor)
        block = 0
        while self.running:
            due = start + block * period
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            chunk = b""
            while len(chunk) < BLOCK * FRAME_BYTES and self.running:
                chunk += os.read(self.fd, BLOCK * FRAME_BYTES - len(chunk))
            self.stamps.append(due)
            self.lateness.append(time.monotonic() - due)
            self.data += chunk
            block += 1

    def onsets(self, quiet_frames=RATE // 4):
        """The times (time.monotonic) at which bursts begin on either channel:
        above -54 dBFS after at least `quiet_frames` below."""
        import array
        samples = array.array("f", bytes(self.data[:len(self.data) // FRAME_BYTES * FRAME_BYTES]))
        found, last_loud = [], -quiet_frames - 1
        for frame in range(len(samples) // 2):
            if abs(samples[2 * frame]) > 0.002 or abs(samples[2 * frame + 1]) > 0.002:
                if frame - last_loud > quiet_frames:
                    block = frame // BLOCK
                    if block < len(self.stamps):
                        found.append(self.stamps[block] + (frame % BLOCK) / (RATE * self.factor))
                last_loud = frame
        return found

    def close(self):
        self.running = False
        subprocess.run(["pactl", "unload-module", self.module], env=self.env, capture_output=True)
        self.thread.join(2)
        os.close(self.fd)


def member(kind, binary, port, mac, sink):
    if kind == "ours":
        return [binary, "slimproto", "--server", f"127.0.0.1:{port}", "--mac", mac, "--output", "pulse", "--device", sink, "--quiet"]
    # Debian's squeezelite-pa is the PortAudio build: its device list is
    # PortAudio's (ALSA's pulse device); libpulse takes the sink from PULSE_SINK.
    return ["env", f"PULSE_SINK={sink}", "squeezelite", "-s", f"127.0.0.1:{port}", "-m", mac, "-n", f"squeezelite {mac[-2:]}"]


async def clocked_group(binary, members=("ours", "ours"), ppm=500, bursts=7, every=10.0, burst_at=3.0):
    """See the module's text. Returns (offsets ms per burst, [elapsed minus heard, ms per burst] per
    member, the readers' lateness in taking a block: median, 99th percentile, worst, ms)."""
    pulse_server = os.environ.get("PULSE_SERVER") or f"unix:{os.environ['HARMONIA_PULSE_DIR']}/native"
    work = tempfile.mkdtemp(prefix="harmonia-slimproto-clocked-")
    burst = "+".join(f"if(between(t,{burst_at + n * every},{burst_at + n * every + 0.5}),0.5*sin(2*PI*1000*t),0)"
                     for n in range(bursts))
    length = burst_at + (bursts - 1) * every + 1
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"aevalsrc='{burst}|{burst}':s=48000:d={length}",
                    os.path.join(work, "bursts.flac")], check=True)
    http_server = start_http(work)
    url = f"http://127.0.0.1:{http_server.server_address[1]}/bursts.flac"
    port = free_port()
    server = await new_server(port)
    env = dict(os.environ, XDG_STATE_HOME=os.path.join(work, "state"), PULSE_SERVER=pulse_server)
    sinks = [PacedSink(env, f"harmonia_clock{i}", rate_ppm, work) for i, rate_ppm in enumerate((0, ppm))]
    macs = ("02:11:22:33:44:a1", "02:11:22:33:44:a2")
    procs = [subprocess.Popen(member(kind, binary, port, mac, sink.name), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL, env=env) for kind, mac, sink in zip(members, macs, sinks)]
    try:
        _, beats, target = await start_group(server, macs, [url, url])
        # (jiffies, elapsed) of each member every 250 ms until the track's end.
        readings = [[], []]
        end = target + length + 1
        while time.monotonic() < end:
            for index, beat in enumerate(beats):
                readings[index].append(await beat.ask())
            await asyncio.sleep(0.25)
        # The readers' lateness counts from the start to here: before it an
        # idle sink may be suspended (the reader waits), after it the parse
        # below holds the interpreter.
        measured_until = time.monotonic()
        onsets = [sink.onsets() for sink in sinks]
        offsets = [(a - b) * 1000 for a, b in zip(*onsets)]
        errors = []
        for index in range(2):
            member_errors = []
            for n, at in enumerate(onsets[index][:bursts]):
                moment = at * 1000  # ms, the clock of jiffies
                # The two readings around the onset, elapsed interpolated between them.
                pairs = [(j if j < 1 << 31 else j, e) for j, e in readings[index]]
                before = [p for p in pairs if p[0] <= moment]
                after = [p for p in pairs if p[0] > moment]
                if not before or not after:
                    continue
                (j0, e0), (j1, e1) = before[-1], after[0]
                elapsed = e0 + (e1 - e0) * (moment - j0) / (j1 - j0) if j1 != j0 else e0
                member_errors.append(elapsed - (burst_at + n * every) * 1000)
            errors.append(member_errors)
        lateness = sorted(late for sink in sinks for late, due in zip(sink.lateness, sink.stamps)
                          if target <= due < measured_until)
        jitter = (lateness[len(lateness) // 2] * 1000, lateness[int(len(lateness) * 0.99)] * 1000, lateness[-1] * 1000)
        return offsets, errors, jitter
    finally:
        await tear_down(procs, server, http_server, None)
        for sink in sinks:
            sink.close()
        import shutil
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    kinds = tuple(sys.argv[2].split("+")) if len(sys.argv) > 2 else ("ours", "ours")
    ppm = float(sys.argv[3]) if len(sys.argv) > 3 else 500
    offsets, errors, jitter = asyncio.run(clocked_group(sys.argv[1], kinds, ppm))
    print("offsets (ms, first minus second):", " ".join(f"{v:+.1f}" for v in offsets))
    print("readers' lateness taking a block (ms): median %.2f, p99 %.2f, worst %.2f" % jitter)
    for kind, member_errors in zip(kinds, errors):
        print(f"{kind}: elapsed minus heard at each burst (ms):", " ".join(f"{v:+.1f}" for v in member_errors))
