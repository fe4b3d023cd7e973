"""What the UPnP test scripts share: `harmonia-play serve --upnp` started
with its standard error in WORK/serve.log, waited on by the lines it
writes, stopped with SIGTERM; and the checks, one line each, counted."""
import asyncio
import os
import re
import signal
import subprocess
import sys
import time

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
