"""What the UPnP test scripts share: `harmonia-play serve --upnp` started
with its standard error in WORK/serve.log, waited on by the lines it
writes, stopped with SIGTERM; the renderer on loopback with its control
socket and MPD port; the fixtures' file server; waiting on a control
point's events; raw GENA requests; and the checks, one line each, counted."""
import asyncio
import json
import math
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
import wave

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

passed = 0


def check(condition, what):
    """Counts a check that holds; raises AssertionError for one that does not."""
    global passed
    if not condition:
        raise AssertionError(what)
    passed += 1
    print(f"ok: {what}", flush=True)


def run_checks(main):
    """Runs the coroutine `main()` and prints 'N passed, 0 failed' (exit 0)
    or the failed check and 'N passed, 1 failed' (exit 1). SIGTERM (the
    caller's `timeout`) leaves through `main`'s finally blocks."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(124))
    try:
        asyncio.run(main())
    except AssertionError as failure:
        print(f"FAILED: {failure}", flush=True)
        print(f"{passed} passed, 1 failed", flush=True)
        sys.exit(1)
    print(f"{passed} passed, 0 failed", flush=True)


class ServeProcess:
    def __init__(self, binary, work, arguments):
        os.makedirs(os.path.join(work, "music"), exist_ok=True)
        # The renderer writes its own open file; we read through another. One
        # shared file (and offset) let our seek(0) make its next line
        # overwrite the first, and the line we waited for never came.
        log_path = os.path.join(work, "serve.log")
        self.log_writer = open(log_path, "w")
        self.log = open(log_path)
        self.proc = subprocess.Popen(
            [binary, "serve", "--music-dir", os.path.join(work, "music"), "--database", os.path.join(work, "db.sqlite"),
             "--state", os.path.join(work, "state", "state.json"), "--mpd-listen", "127.0.0.1:0", "--listen", "off",
             "--upnp", "--upnp-name", "Harmonia test"] + arguments,
            stdout=subprocess.DEVNULL, stderr=self.log_writer, stdin=subprocess.DEVNULL)
        self.work = work

    def wait_line(self, pattern, timeout=30):
        """The first group of `pattern` in the log, once a line has it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.log.seek(0)
            found = re.search(pattern, self.log.read())
            if found:
                return found.group(1)
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)  # polling a log file: the condition is the line
        self.log.seek(0)
        raise AssertionError(f"no line {pattern!r}; log:\n{self.log.read()[-2000:]}")

    def read_log(self):
        self.log.seek(0)
        return self.log.read()

    def device_uuid(self):
        return open(os.path.join(self.work, "state", "upnp-uuid")).read().strip()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        self.log_writer.close()


def sine_wav(path, seconds, rate=44100):
    """A 16-bit stereo 440 Hz sine: long enough to pause, seek and watch the position."""
    frames = int(seconds * rate)
    one = bytes(b"".join(struct.pack("<hh", int(8000 * math.sin(2 * math.pi * 440 * i / rate)), 0) for i in range(rate)))
    with wave.open(path, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(rate)
        for _ in range(frames // rate):
            w.writeframes(one)


def serve_files(root, log):
    """The fixtures over http on 127.0.0.1 (Range, lengths): the process and its base URL."""
    # Its stderr to a file, not ours: a process left behind must not hold the
    # caller's pipes open (the caller reads them to their end).
    files = subprocess.Popen([sys.executable, os.path.join(ROOT, "Tests", "Network", "fault_server.py"), "--root", root,
                              "--log", log], stdout=subprocess.PIPE, stderr=open(log + ".stderr", "w"),
                             stdin=subprocess.DEVNULL, text=True)
    return files, f"http://127.0.0.1:{int(files.stdout.readline())}"


class Renderer(ServeProcess):
    def __init__(self, binary, work, ssdp_port, output="null"):
        self.control_path = os.path.join(work, "control.sock")
        super().__init__(binary, work, ["--output", output, "--upnp-listen", "127.0.0.1:0",
                                        "--upnp-ssdp-port", str(ssdp_port or "off"), "--control", "unix:" + self.control_path])
        try:
            self.location = self.wait_line(r"UPnP renderer \"Harmonia test\" on (http://\S+)")
            self.mpd_port = int(self.wait_line(r"MPD protocol on 127\.0\.0\.1:(\d+)"))
            self.uuid = self.device_uuid()
        except BaseException:
            self.stop()  # not left running after a failed start
            raise

    def control(self, command):
        """One control-protocol request on the JSON-lines socket: its reply's result (events skipped)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(10)
            s.connect(self.control_path)
            f = s.makefile("rwb")
            f.write((json.dumps({"message_id": 1, "command": command}) + "\n").encode())
            f.flush()
            for _ in range(1000):
                reply = json.loads(f.readline())
                if reply.get("message_id") == 1:
                    return reply.get("result")
            raise AssertionError(f"no reply to {command}")

    def mpd(self, *commands):
        """One MPD connection: each command's answer lines."""
        with socket.create_connection(("127.0.0.1", self.mpd_port), timeout=10) as s:
            f = s.makefile("rwb")
            f.readline()
            answers = []
            for command in commands:
                f.write((command + "\n").encode())
                f.flush()
                lines = []
                while True:
                    line = f.readline().decode().rstrip("\n")
                    if line == "OK" or line.startswith("ACK"):
                        lines.append(line)
                        break
                    lines.append(line)
                answers.append(lines)
            return answers


async def until(dmr, predicate, what, timeout=10, poll=True):
    """Waits for `predicate()` on events, polling the device between them."""
    changed = asyncio.Event()
    previous = dmr.on_event
    dmr.on_event = lambda service, variables: (previous and previous(service, variables), changed.set())
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if predicate():
                return
            changed.clear()
            if poll:
                await dmr.async_update()
                if predicate():
                    return
            try:
                await asyncio.wait_for(changed.wait(), min(0.25, max(0.01, deadline - time.monotonic())))
            except asyncio.TimeoutError:
                pass
        raise AssertionError(f"timed out waiting for {what}")
    finally:
        dmr.on_event = previous


def start_renderer(binary, work, ssdp_port, files):
    """The renderer (Renderer); should it fail to start, the file server
    `files` is stopped too, so nothing is left holding the test's pipes."""
    try:
        return Renderer(binary, work, ssdp_port)
    except BaseException:
        files.terminate()
        files.wait()
        raise


def gena(location, method, service, **headers):
    """One SUBSCRIBE or UNSUBSCRIBE: the status and the answer's headers."""
    host, port = location.split("//")[1].split("/")[0].rsplit(":", 1)
    lines = [f"{method} /upnp/{service}/event HTTP/1.1", f"HOST: {host}:{port}"]
    lines += [f"{name.upper()}: {value}" for name, value in headers.items()]
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        answer = s.makefile("rb")
        status = answer.readline().decode().split(" ")[1]
        fields = {}
        for line in iter(lambda: answer.readline().decode().rstrip("\r\n"), ""):
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        return status, fields
