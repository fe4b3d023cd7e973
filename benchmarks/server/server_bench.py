#!/usr/bin/env python3
"""Music server: `harmonia-play serve` against MPD on the same library, over MPD's protocol.

The library is scan.py's folder of 1,200 small tagged files (240 each of MP3,
FLAC, M4A, Opus and WAV; made once with ffmpeg, shared with the scan part).
Each run starts each server afresh, one after the other (the order alternates
from run to run), with an empty database in a new folder: ours is
`harmonia-play serve --state off --output null --mpd-listen 127.0.0.1:0` with a
new SQLite file (it announces its port on stderr); MPD is /usr/bin/mpd
--no-daemon with a private configuration (null output, 127.0.0.1, a free port,
its own db_file, state_file, pid_file and log_file, zeroconf off, auto_update
no: the ideas and the client of Tests/MPD/mpd_diff.py). Both scan a new
database by themselves at start (had one been neither scanning nor complete at
the first `status`, `update` would have been sent). (1) Full scan: wall time
from just before the process is started until `status` has no `updating_db`
and `stats` shows all 1,200 songs, waiting in `idle update` between looks;
also the time to the first answer and the CPU time (user + system) the process
used by the end. mutagen's walk of the same folder (scan.py's, one Python
process) is timed for reference. (2) Unchanged rescan: `update` on the scanned,
unchanged library, one untimed, then RESCANS times per run timed as a client
sees it (timed_update: until the idle event that ends the job, the `status`
after it saying so; a server that does not know `update`: a restart proxy,
see the notes).
(3) Round trips: 50 clients connect and stay (every other one in `idle`, the
rest silent), then one more client sends WARMUP `status` requests untimed and
REQUESTS timed ones, one at a time, then as many `ping`s; p50 and p99 as this
Python client sees them (its own parsing included, the same for both servers).
Then all of it again with every thread of the server and the client pinned to
one core (sched_setaffinity): the cost of the path without cross-core wake-ups.
(4) Peak RSS: VmHWM of the server process from /proc/PID/status after all of
that (library scanned and rescanned, 51 clients served). One untimed warm-up
run of each server and of mutagen first (the page cache holds the files for
all), then RUNS runs; medians over runs (rescans: over all of them); ratios
ours ÷ MPD, lower is better. Writes the results table (results_file.py).
"""
import argparse, os, re, shutil, signal, sqlite3, statistics, subprocess, sys, tempfile, time

sys.dont_write_bytecode = True  # no __pycache__ next to the modules imported below (Tests/MPD has no ignore rule)
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "scan"))
sys.path.insert(0, os.path.join(REPO, "Tests", "MPD"))
from results_file import write_table  # noqa: E402
from process_usage import cpu_seconds, memory_kib  # noqa: E402
from scan import make_library, MUTAGEN_SCAN  # noqa: E402  (the scan part's library and mutagen walk)
from mpd_diff import Connection, PrivateMPD, free_port, MPD  # noqa: E402

START_TIMEOUT = 20.0    # s until a server answers after start
SCAN_TIMEOUT = 300.0    # s for a full scan
RESCAN_TIMEOUT = 120.0  # s for an unchanged rescan
IDLE_SLICE = 1.0        # s in one `idle update` before noidle and a fresh look (no event is ever missed:
                        # both servers keep the changes since the last idle, as MPD does; this only bounds)
POLL = 0.002            # s between looks while a server starts


def info(*parts):
    print("server:", *parts, file=sys.stderr, flush=True)


def pairs(answer):
    """`key: value` lines of an answer as a dict; raises when it did not end in OK."""
    if not answer or answer[-1] != "OK":
        raise RuntimeError(f"unexpected answer: {answer[-3:]}")
    out = {}
    for line in answer[:-1]:
        key, sep, value = line.partition(": ")
        if sep:
            out[key] = value
    return out


def connect(port, deadline, process):
    """A Connection once the server answers with its greeting (polled, bounded)."""
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited ({process.returncode}) before answering")
        try:
            c = Connection("127.0.0.1", port, timeout=10)
            if not c.greeting.startswith("OK MPD "):
                c.sock.close()
                raise RuntimeError(f"greeting: {c.greeting!r}")
            return c
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not answer in time")
            time.sleep(POLL)


def idle_update(c):
    """One bounded wait in `idle update`."""
    c.sock.settimeout(IDLE_SLICE)
    try:
        c.send("idle update")
        answer = c.read_answer()
        if answer and answer[-1] == "<timeout>":
            c.sock.settimeout(10)
            c.send("noidle")
            answer = c.read_answer()  # the idle's answer: OK, or the change that came meanwhile
        if not answer or answer[-1] != "OK":
            raise RuntimeError(f"idle update: {answer[-3:]}")
    finally:
        c.sock.settimeout(10)


def wait_scanned(c, songs, deadline):
    """Returns when `status` has no updating_db and `stats` shows `songs` songs.
    Sends `update` once if the first look finds neither a scan nor the songs."""
    first = True
    while True:
        if time.monotonic() > deadline:
            raise RuntimeError("the scan did not finish in time")
        if "updating_db" in pairs(c.command("status")):
            idle_update(c)
            first = False
            continue
        found = int(pairs(c.command("stats")).get("songs", "0"))
        if found == songs:
            return
        if found > songs:
            raise RuntimeError(f"stats shows {found} songs, the folder has {songs}")
        if first:
            pairs(c.command("update"))
            first = False
        else:
            time.sleep(POLL)


def clear_idle_events(c):
    """Takes the idle events pending since the last idle (untimed): `idle`
    answers them at once, or `noidle` ends it with none. Both lines go in one
    segment: sent apart, a `noidle` the server does not answer (the idle had
    answered) is acknowledged only after the delayed-ACK timer (40 ms), and
    Nagle's algorithm holds the client's next command (the timed `update`)
    until then."""
    c.send("idle\nnoidle")  # outside idle (the idle already answered), noidle has no answer
    answer = c.read_answer()
    if not answer or answer[-1] != "OK":
        raise RuntimeError(f"idle: {answer[-3:]}")


def timed_update(c):
    """Seconds from sending `update` until the client knows the job is over:
    after each answer to `idle database update`, `status` is asked, and the
    time is that of the first `status` answer without `updating_db` (the
    idle answer before it may be the job's start or its end: which one, the
    client learns from `status`, as `mpc update --wait` does)."""
    clear_idle_events(c)
    start = time.perf_counter()
    pairs(c.command("update"))
    while True:
        c.send("idle database update")
        answer = c.read_answer()
        if not answer or answer[-1] != "OK" or not any(line.startswith("changed: ") for line in answer):
            raise RuntimeError(f"idle database update: {answer[-3:]}")
        status = pairs(c.command("status"))
        known = time.perf_counter()
        if "updating_db" not in status:
            return known - start
        if known - start > RESCAN_TIMEOUT:
            raise RuntimeError("the update did not end in time")


def stop_process(process):
    """SIGTERM to the process group, SIGKILL after 10 s; bounded."""
    if process is None or process.returncode is not None:
        return
    try:
        os.killpg(process.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait(timeout=10)


class OurServer:
    name = "harmonia-play serve"

    def __init__(self, binary, music, workdir):
        self.binary, self.music, self.dir = binary, music, workdir
        self.process = None

    def start(self):
        """Starts serve on a new database; returns (t0, port)."""
        stderr_path = os.path.join(self.dir, "stderr")
        argv = [self.binary, "serve", "--music-dir", self.music, "--database", os.path.join(self.dir, "library.sqlite"),
                "--store", os.path.join(self.dir, "offline"),
                "--state", "off", "--output", "null", "--mpd-listen", "127.0.0.1:0", "--listen", "off", "--quiet"]
        with open(stderr_path, "w") as err:
            t0 = time.monotonic()
            self.process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                            start_new_session=True)
        deadline = t0 + START_TIMEOUT
        announced = re.compile(r"MPD protocol on 127\.0\.0\.1:(\d+)")
        while True:
            with open(stderr_path, errors="replace") as f:
                m = announced.search(f.read())
            if m:
                return t0, int(m.group(1))
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"serve did not announce its port; see {stderr_path}")
            time.sleep(POLL)

    def stop(self):
        stop_process(self.process)

    def problems(self):
        """Lines serve wrote about the library (files skipped)."""
        with open(os.path.join(self.dir, "stderr"), errors="replace") as f:
            return [line.strip() for line in f if "library:" in line]


class PeerMPD(PrivateMPD):
    """mpd_diff's private MPD (its configuration), started without its own update:
    a new database is scanned by MPD itself at start."""
    name = "MPD"

    def start(self):
        for _ in range(3):  # the free port may be taken before mpd binds it
            self.port = free_port()
            path = os.path.join(self.dir, "mpd.conf")
            with open(path, "w") as f:
                f.write(self.config())
            with open(os.path.join(self.dir, "stderr"), "w") as err:
                t0 = time.monotonic()
                self.process = subprocess.Popen([MPD, "--no-daemon", path], stdin=subprocess.DEVNULL,
                                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
            try:
                connect(self.port, t0 + START_TIMEOUT, self.process).sock.close()
                return t0, self.port
            except RuntimeError:
                self.stop()
        raise RuntimeError(f"mpd did not start; see {self.dir}/log and {self.dir}/stderr")

    def problems(self):
        return []


def measure_server(server, songs, rescans, clients, requests, warmup):
    """One run of one server, started here and always stopped."""
    result = {"rescans": [], "rescan_method": "update"}
    try:
        t0, port = server.start()
        c = connect(port, t0 + START_TIMEOUT, server.process)
        result["first_answer"] = time.monotonic() - t0
        try:
            wait_scanned(c, songs, t0 + SCAN_TIMEOUT)
            result["scan"] = time.monotonic() - t0
            result["scan_cpu"] = cpu_seconds(server.process.pid)
            answer = c.command("update")  # untimed: a warm-up, and whether the server knows `update`
            if answer and answer[-1].startswith("ACK ") and "unknown command" in answer[-1]:
                result["rescan_method"] = "restart"  # measured below, once this server is stopped
            else:
                pairs(answer)
                wait_scanned(c, songs, time.monotonic() + RESCAN_TIMEOUT)
                for _ in range(rescans):
                    result["rescans"].append(timed_update(c))
                wait_scanned(c, songs, time.monotonic() + RESCAN_TIMEOUT)  # every song still there
        finally:
            c.sock.close()
        result["status_ns"], result["ping_ns"] = status_round_trips(port, clients, requests, warmup)
        # The same on one core: every thread of the server and this client pinned to it.
        cpu = min(os.sched_getaffinity(0))
        result["pinned_status_ns"], result["pinned_ping_ns"] = status_round_trips(
            port, clients, requests, warmup, pin=(server.process.pid, cpu))
        result["hwm_kib"], result["rss_kib"] = memory_kib(server.process.pid)
        result["problems"] = server.problems()
    finally:
        server.stop()
    if result["rescan_method"] == "restart":
        result["restart_scan"], result["restart_plain"] = restart_rescans(server, songs, rescans)
        result["rescans"] = [statistics.median(result["restart_scan"]) - statistics.median(result["restart_plain"])]
    return result


def restart_rescans(server, songs, count):
    """A server without MPD's `update` (serve before its database command group):
    its unchanged rescan measured through a restart. serve scans at start when
    the database has no last-update mark (a new database), with the same
    scanner, store and thread as `update`. So, `count` times each, alternating:
    (a) the mark removed, start until the scan is done and all songs are there;
    (b) the mark kept, start until the first `status` (no scan). The rescan is
    median(a) - median(b). Returns (a, b) in seconds."""
    database = os.path.join(server.dir, "library.sqlite")
    with_scan, without = [], []
    for _ in range(count):
        for scan in (True, False):
            if scan:
                db = sqlite3.connect(database)
                try:
                    removed = db.execute("DELETE FROM library_state WHERE key = 'last_update'").rowcount
                    db.commit()
                finally:
                    db.close()
                if removed != 1:
                    raise RuntimeError(f"{database}: no last-update mark to remove")
            try:
                t0, port = server.start()
                c = connect(port, t0 + START_TIMEOUT, server.process)
                try:
                    wait_scanned(c, songs, t0 + RESCAN_TIMEOUT)
                    (with_scan if scan else without).append(time.monotonic() - t0)
                finally:
                    c.sock.close()
            finally:
                server.stop()
    return with_scan, without


def pin_process(pid, cpu):
    """Every thread of `pid` onto `cpu` (threads it starts later inherit it from their creator)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            os.sched_setaffinity(int(tid), {cpu})
        except ProcessLookupError:
            pass  # a thread that just ended


def status_round_trips(port, clients, requests, warmup, pin=None):
    """`clients` idle connections, then `requests` timed status round trips (ns) on one
    more, then as many of `ping`; returns both lists. `pin` (pid, cpu): the server's
    threads and this client's on that one core meanwhile."""
    idle = []
    mask = os.sched_getaffinity(0)
    try:
        if pin:
            pin_process(*pin)
            os.sched_setaffinity(0, {pin[1]})
        for i in range(clients):
            c = Connection("127.0.0.1", port, timeout=10)
            if not c.greeting.startswith("OK MPD "):
                raise RuntimeError(f"client {i}: greeting {c.greeting!r}")
            idle.append(c)
            if i % 2:
                c.send("idle")  # waits for any change; none comes
        probe = Connection("127.0.0.1", port, timeout=10)
        idle.append(probe)
        for _ in range(warmup):
            pairs(probe.command("status"))
        samples = {}
        for command in ("status", "ping"):
            samples[command] = []
            for _ in range(requests):
                t = time.perf_counter_ns()
                answer = probe.command(command)
                samples[command].append(time.perf_counter_ns() - t)
                if answer[-1] != "OK":
                    raise RuntimeError(f"{command}: {answer[-3:]}")
        # Every connection still open: the idle ones were served, not dropped.
        for c in idle[:-1]:
            if c.closed:
                raise RuntimeError("an idle client was disconnected")
        return samples["status"], samples["ping"]
    finally:
        for c in idle:
            c.sock.close()
        if pin:
            os.sched_setaffinity(0, mask)


def percentile(samples, q):
    s = sorted(samples)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def timed_mutagen(folder):
    t = time.monotonic()
    subprocess.run([sys.executable, "-c", MUTAGEN_SCAN, folder], stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True, timeout=SCAN_TIMEOUT)
    return time.monotonic() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ours", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--rescans", type=int, default=3)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--warmup", type=int, default=200)
    a = ap.parse_args()
    # SIGTERM (make, a shell's kill) ends the run through the finally blocks.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    music = os.path.abspath(os.path.join(a.work, "scan-library"))
    make_library(music)
    songs = len(os.listdir(music))
    try:
        import mutagen
        mutagen_version = mutagen.version_string
    except ImportError:
        mutagen_version = None
    version = re.search(r"\d+\.\d+\.\d+", subprocess.run([MPD, "--version"], capture_output=True, text=True,
                                                         timeout=20).stdout)
    mpd_version = "MPD " + version.group(0) if version else "MPD"
    base = os.path.abspath(os.path.join(a.work, "server"))
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(base)

    def run(kind, label):
        folder = tempfile.mkdtemp(prefix=f"{kind}-{label.replace(' ', '')}-", dir=base)
        server = OurServer(a.ours, music, folder) if kind == "ours" else PeerMPD(music, folder)
        try:
            r = measure_server(server, songs, a.rescans, a.clients, a.requests, a.warmup)
        except BaseException:
            info(f"{kind} {label} failed; its folder is kept: {folder}")
            raise
        shutil.rmtree(folder, ignore_errors=True)
        s = r["status_ns"]
        info(f"{kind} {label}: scan {r['scan']:.3f} s (cpu {r['scan_cpu']:.2f} s), rescans ({r['rescan_method']}) "
             + ", ".join(f"{x * 1000:.1f}" for x in r["rescans"])
             + f" ms, status p50 {percentile(s, .5) / 1000:.0f} µs p99 {percentile(s, .99) / 1000:.0f} µs"
             f" (pinned p50 {percentile(r['pinned_status_ns'], .5) / 1000:.0f} µs), "
             f"VmHWM {r['hwm_kib'] / 1024:.1f} MiB")
        return r

    results = {"ours": [], "mpd": []}
    mutagen_times = []
    for kind in ("ours", "mpd"):
        run(kind, "warm-up")
    if mutagen_version:
        timed_mutagen(music)
    for i in range(a.runs):
        for kind in (("ours", "mpd") if i % 2 == 0 else ("mpd", "ours")):
            results[kind].append(run(kind, f"run {i + 1}"))
        if mutagen_version:
            mutagen_times.append(timed_mutagen(music))
            info(f"mutagen run {i + 1}: {mutagen_times[-1]:.3f} s")

    def med(kind, key):
        return statistics.median(r[key] for r in results[kind])

    def med_status(kind, q, key="status_ns"):
        return statistics.median(percentile(r[key], q) for r in results[kind]) / 1000

    scan = {k: med(k, "scan") for k in results}
    cpu = {k: med(k, "scan_cpu") for k in results}
    rescan = {k: statistics.median(x for r in results[k] for x in r["rescans"]) for k in results}
    p50 = {k: med_status(k, .5) for k in results}
    p99 = {k: med_status(k, .99) for k in results}
    ping50 = {k: med_status(k, .5, "ping_ns") for k in results}
    pin50 = {k: med_status(k, .5, "pinned_status_ns") for k in results}
    pin99 = {k: med_status(k, .99, "pinned_status_ns") for k in results}
    pinping50 = {k: med_status(k, .5, "pinned_ping_ns") for k in results}
    first = {k: med(k, "first_answer") for k in results}
    hwm = {k: med(k, "hwm_kib") / 1024 for k in results}
    rss = {k: med(k, "rss_kib") / 1024 for k in results}
    mut = statistics.median(mutagen_times) if mutagen_times else None

    def ratio(x, y):
        return round(x / y, 2) if y else None

    scan_ratio = ratio(scan["ours"], scan["mpd"])
    rescan_ratio = ratio(rescan["ours"], rescan["mpd"])
    own_ratio = round(rescan["ours"] / scan["ours"], 3)
    p50_ratio, p99_ratio = ratio(p50["ours"], p50["mpd"]), ratio(p99["ours"], p99["mpd"])
    hwm_ratio = ratio(hwm["ours"], hwm["mpd"])
    problems = sorted({p for r in results["ours"] for p in r["problems"]})
    methods = {k: {r["rescan_method"] for r in results[k]} for k in results}
    proxy = {k: methods[k] == {"restart"} for k in results}
    if any(len(m) != 1 for m in methods.values()):
        raise RuntimeError(f"rescan measured differently from run to run: {methods}")
    rescan_label = "unchanged rescan (`update` until done, ms)"
    if proxy["ours"]:
        rescan_label = "unchanged rescan (MPD: `update` until done; ours: restart proxy, see notes; ms)"

    cols = ["Measure", "harmonia-play serve", mpd_version, "mutagen (reference)",
            "ratio (ours ÷ MPD)", "target", "met"]
    rows = [
        [f"full scan of {songs:,} files, new database (s)", round(scan["ours"], 3), round(scan["mpd"], 3),
         round(mut, 3) if mut else None, scan_ratio, "≤ 0.8", scan_ratio <= 0.8],
        ["start until the first answer, during that scan (ms)", round(1000 * first["ours"]),
         round(1000 * first["mpd"]), None, ratio(first["ours"], first["mpd"]), None, None],
        ["full scan, ms per file", round(1000 * scan["ours"] / songs, 2), round(1000 * scan["mpd"] / songs, 2),
         round(1000 * mut / songs, 2) if mut else None, None, None, None],
        ["CPU time of the process by the end of the full scan (s)", round(cpu["ours"], 2), round(cpu["mpd"], 2),
         None, ratio(cpu["ours"], cpu["mpd"]), None, None],
        [rescan_label, round(1000 * rescan["ours"], 1), round(1000 * rescan["mpd"], 1),
         None, rescan_ratio, None, None],
        ["ours: unchanged rescan ÷ full scan", own_ratio, None, None, None, "< 0.1", own_ratio < 0.1],
        [f"`status` round trip p50 with {a.clients} idle clients (µs)", round(p50["ours"]), round(p50["mpd"]),
         None, p50_ratio, None, None],
        [f"`status` round trip p99 with {a.clients} idle clients (µs)", round(p99["ours"]), round(p99["mpd"]),
         None, p99_ratio, None, None],
        [f"`ping` round trip p50, same clients (µs; answered without the player's main loop)", round(ping50["ours"]),
         round(ping50["mpd"]), None, ratio(ping50["ours"], ping50["mpd"]), None, None],
        ["`status` round trip p50, server and client pinned to one core (µs)", round(pin50["ours"]),
         round(pin50["mpd"]), None, ratio(pin50["ours"], pin50["mpd"]), None, None],
        ["`status` round trip p99, server and client pinned to one core (µs)", round(pin99["ours"]),
         round(pin99["mpd"]), None, ratio(pin99["ours"], pin99["mpd"]), None, None],
        ["`ping` round trip p50, pinned to one core (µs)", round(pinping50["ours"]),
         round(pinping50["mpd"]), None, ratio(pinping50["ours"], pinping50["mpd"]), None, None],
        ["peak RSS, VmHWM (MiB)", round(hwm["ours"], 1), round(hwm["mpd"], 1), None, hwm_ratio, None, None],
        ["RSS at the end, VmRSS (MiB)", round(rss["ours"], 1), round(rss["mpd"], 1), None,
         ratio(rss["ours"], rss["mpd"]), None, None],
    ]
    method = (__doc__.strip().split("\n\n", 1)[1].replace("\n", " ")
              .replace("RUNS runs", f"{a.runs} runs").replace("RESCANS times", f"{a.rescans} times")
              .replace("WARMUP", str(a.warmup)).replace("REQUESTS", f"{a.requests:,}")
              .replace("(3) Round trips: 50 clients", f"(3) Round trips: {a.clients} clients"))
    method += (f" {mpd_version}; mutagen {mutagen_version or 'not installed (not measured)'}; "
               f"{os.cpu_count()} cores.")
    notes = [
        "Both scanners are one thread at a low priority: serve's scan thread runs at nice 10, MPD's "
        "update thread at SCHED_IDLE; neither reads files in parallel, unlike `info --json` (scan part).",
        "MPD logs one `update: added` line per file to its log_file (its default log level); serve writes "
        "each batch of 32 songs to SQLite (WAL) in one transaction.",
        "How each reads a file (from the code): serve opens an FFmpeg decode session per file "
        "(avformat_open_input, avformat_find_stream_info except for PCM with a complete header, the decoder "
        "opened and its first packet sent); MPD 0.23 uses header readers for MP3 (mad), FLAC (libFLAC), "
        "Opus (libopus) and WAV (libsndfile), FFmpeg for M4A.",
        "serve answers `status` on the player's main loop: the connection's reader thread posts it there and "
        "waits, then the connection's writer thread sends the answer (three thread hand-offs); `ping` is "
        "answered by the connection itself (reader to writer, one hand-off). MPD answers both on its one "
        "event-loop thread.",
        "Unpinned, a round trip also depends on where the scheduler puts the client and the answering "
        "thread(s): a wake-up across cores costs tens of µs on a virtual machine. The pinned rows compare the "
        "work on the path without that.",
    ]
    if proxy["ours"]:
        a_ = statistics.median(x for r in results["ours"] for x in r["restart_scan"])
        b_ = statistics.median(x for r in results["ours"] for x in r["restart_plain"])
        notes.append(
            "serve has no `update` on this build (`ACK ... unknown command \"update\"`: its MPD database command "
            "group is not merged yet), so its unchanged rescan is a proxy: serve scans at start when the database "
            "has no last-update mark, with the same scanner, store and thread as `update`. The mark is removed from "
            "the scanned database (sqlite3) and serve started until the scan is done and all songs are there "
            f"(median {1000 * a_:.1f} ms), minus a start on the complete database until its first `status` "
            f"(median {1000 * b_:.1f} ms); {a.rescans} of each per run, alternating, medians over runs. "
            "The part measures `update` itself once the server answers it.")
    if problems:
        notes.append(f"serve reported {len(problems)} library problem(s), e.g.: {problems[0]}")
    table = {
        "part": "server",
        "title": "Music server: harmonia-play serve vs MPD over MPD's protocol",
        "method": method,
        "columns": cols,
        "rows": rows,
        "headline": [
            {"label": f"server full scan of {songs:,} files vs MPD", "ratio": scan_ratio, "target": 0.8,
             "lower_is_better": True, "met": scan_ratio <= 0.8},
            {"label": "server unchanged rescan ÷ its own full scan (not a peer ratio)"
                      + (" (restart proxy)" if proxy["ours"] else ""), "ratio": own_ratio,
             "target": 0.1, "lower_is_better": True},
            {"label": "server unchanged rescan vs MPD" + (" (ours: restart proxy)" if proxy["ours"] else ""),
             "ratio": rescan_ratio, "target": None,
             "lower_is_better": True},
            {"label": f"server status round trip p50, {a.clients} idle clients, vs MPD", "ratio": p50_ratio,
             "target": None, "lower_is_better": True},
            {"label": f"server status round trip p99, {a.clients} idle clients, vs MPD", "ratio": p99_ratio,
             "target": None, "lower_is_better": True},
            {"label": "server peak RSS with the library loaded vs MPD", "ratio": hwm_ratio, "target": None,
             "lower_is_better": True},
        ],
        "notes": notes,
    }
    write_table(table, a.out)
    for row in rows:
        info(row)


if __name__ == "__main__":
    main()
