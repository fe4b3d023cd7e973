#!/usr/bin/python3
"""A scan of the whole 100,000-track library while `serve` plays, on a private
PulseAudio and a private PipeWire (Tests/pulse-test-server.sh,
Tests/pipewire-test-server.sh): the underruns the player reports.

`scan_while_playing.py --ours BIN --library DIR --work DIR --out JSON
[--servers pulseaudio,pipewire]`. For each sound server: a music folder
holding only a tone of 10 minutes is served with `--output pulse` and its
default settings; the tone is queued and played; once the control socket
says "playing", the library (make_library.py's folder) is hard-linked into
the music folder (the links take a few seconds, and are part of the load)
and `update` is sent; the run ends when `stats` counts every song. Counted:
the `underrun` events on the control socket before the update and during
the scan, the scan's time (from `update` until `stats` counts every song),
whether `status` still says play at the end, and on PipeWire the graph's
late cycles in its log (Tests/pipewire-test-server.sh logs them). Bounded:
every wait has a deadline, and the processes are stopped at the end.
"""
import argparse, json, os, re, shutil, socket, subprocess, sys, tempfile, threading, time

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
import server_bench as sb  # noqa: E402
sys.path.insert(0, os.path.join(HERE, ".."))
from results_file import write_table  # noqa: E402

SCAN_TIMEOUT = 600.0
START_TIMEOUT = 30.0
SERVER_SCRIPTS = {"pulseaudio": "Tests/pulse-test-server.sh", "pipewire": "Tests/pipewire-test-server.sh"}


def info(*parts):
    print("scan-while-playing:", *parts, file=sys.stderr, flush=True)


class EventLines:
    """The control socket's lines, read on a thread; `wait(pred)` is bounded."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.lines, self.cond, self.closed = [], threading.Condition(), False
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        buf = b""
        while True:
            try:
                chunk = self.sock.recv(65536)
            except OSError:
                chunk = b""
            if not chunk:
                with self.cond:
                    self.closed = True
                    self.cond.notify_all()
                return
            buf += chunk
            *whole, buf = buf.split(b"\n")
            with self.cond:
                self.lines += [line.decode(errors="replace") for line in whole]
                self.cond.notify_all()

    def count(self, text):
        with self.cond:
            return sum(1 for line in self.lines if text in line)

    def wait(self, text, timeout):
        deadline = time.monotonic() + timeout
        with self.cond:
            while not any(text in line for line in self.lines):
                left = deadline - time.monotonic()
                if left <= 0 or self.closed:
                    raise RuntimeError(f"no control line with {text!r} within {timeout} s")
                self.cond.wait(left)

    def close(self):
        self.sock.close()


def late_cycles(server_dir):
    """PipeWire's graph-lateness lines logged so far (0 without its log)."""
    log = os.path.join(server_dir, "pipewire.log")
    if not os.path.exists(log):
        return 0
    with open(log, errors="replace") as f:
        return sum(1 for line in f if "client too slow" in line or "XRun" in line)


def run_once(ours, library, songs, work, sound_server):
    server_dir = os.path.join(work, "sound-" + sound_server)
    script = os.path.join(ROOT, SERVER_SCRIPTS[sound_server])
    subprocess.run(["bash", script, "start", server_dir], check=True, timeout=120)
    env = dict(os.environ, PULSE_SERVER="unix:" + os.path.join(server_dir, "native"))
    folder = tempfile.mkdtemp(prefix="scanplay-", dir=work)
    music = os.path.join(folder, "music")
    os.makedirs(os.path.join(music, "long"))
    process = events = client = None
    try:
        subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=600",
                        "-ac", "2", os.path.join(music, "long", "tone.flac")], check=True, timeout=120)
        control = os.path.join(folder, "control.sock")
        stderr_path = os.path.join(folder, "stderr")
        argv = [ours, "serve", "--music-dir", music, "--database", os.path.join(folder, "library.sqlite"),
                "--store", os.path.join(folder, "offline"), "--state", "off", "--output", "pulse",
                "--control", "unix:" + control, "--mpd-listen", "127.0.0.1:0", "--listen", "off", "--quiet"]
        with open(stderr_path, "w") as err:
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                       env=env, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT
        port = None
        while port is None:
            with open(stderr_path, errors="replace") as f:
                m = re.search(r"MPD protocol on 127\.0\.0\.1:(\d+)", f.read())
            if m:
                port = int(m.group(1))
            elif process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"serve did not announce its port; see {stderr_path}")
            else:
                time.sleep(sb.POLL)
        client = sb.connect(port, time.monotonic() + START_TIMEOUT, process)
        sb.wait_scanned(client, 1, time.monotonic() + START_TIMEOUT)
        while not os.path.exists(control):
            if time.monotonic() > deadline:
                raise RuntimeError("no control socket")
            time.sleep(sb.POLL)
        events = EventLines(control)
        sb.pairs(client.command('add "long/tone.flac"'))
        sb.pairs(client.command("play"))
        events.wait('"state":"playing"', 20)
        late_before = late_cycles(server_dir)
        underruns_before = events.count('"event":"underrun"')
        started = time.monotonic()
        subprocess.run(["cp", "-al", library, os.path.join(music, "library")], check=True, timeout=300)
        linked = time.monotonic() - started
        scan_started = time.monotonic()
        sb.pairs(client.command("update"))
        sb.wait_scanned(client, songs + 1, time.monotonic() + SCAN_TIMEOUT)
        scan_seconds = time.monotonic() - scan_started
        state = sb.pairs(client.command("status")).get("state")
        return {
            "sound_server": sound_server,
            "songs": songs,
            "underruns_before_scan": underruns_before,
            "underruns_during_links_and_scan": events.count('"event":"underrun"') - underruns_before,
            "late_graph_cycles": late_cycles(server_dir) - late_before,
            "link_seconds": round(linked, 2),
            "scan_seconds": round(scan_seconds, 2),
            "state_after": state,
        }
    finally:
        if events:
            events.close()
        if client:
            client.sock.close()
        sb.stop_process(process)
        subprocess.run(["bash", script, "stop", server_dir], timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ours", required=True)
    parser.add_argument("--library", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--servers", default="pulseaudio,pipewire")
    args = parser.parse_args()
    songs = sum(1 for _, _, names in os.walk(args.library) for n in names if n.endswith((".flac", ".mp3")))
    results = []
    for sound_server in args.servers.split(","):
        result = run_once(os.path.abspath(args.ours), os.path.abspath(args.library), songs, os.path.abspath(args.work),
                          sound_server)
        info(json.dumps(result))
        results.append(result)
    rows = [[r["sound_server"], r["underruns_before_scan"], r["underruns_during_links_and_scan"], r["late_graph_cycles"],
             r["link_seconds"], r["scan_seconds"], r["state_after"]] for r in results]
    write_table({
        "part": "library-scan-playing",
        "title": f"Scanning {songs:,} tracks while playing",
        "method": __doc__.strip().split("\n\n", 1)[1].replace("\n", " ") + f" {os.cpu_count()} cores.",
        "columns": ["Sound server", "underruns before the scan", "underruns during the links and the scan",
                    "late graph cycles (PipeWire's log)", "links (s)", "scan (s)", "state after"],
        "rows": rows,
        "notes": ["A scan that starves playback shows underruns here; MPD is not run (its scan runs below its "
                  "player's threads too, and its output is not ours to count)."],
    }, args.out)
    bad = [r for r in results if r["underruns_during_links_and_scan"] or r["state_after"] != "play"]
    if bad:
        raise SystemExit(f"scan-while-playing: playback was disturbed: {bad}")

if __name__ == "__main__":
    main()
