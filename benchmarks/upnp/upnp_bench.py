#!/usr/bin/env python3
"""UPnP/DLNA renderers (issue 33): the time from a control point's
SetAVTransportURI+Play to the first sound, `harmonia-play serve --upnp`
against gmediarender (Debian's gmrender-resurrect, GStreamer's pulsesink).

Both renderers run for the whole benchmark on the same PulseAudio sink, as a
renderer does; the control point is async-upnp-client (the library Home
Assistant and Music Assistant use), each device built from its description
URL before the clock starts, the DIDL-Lite metadata too. The clock starts
when SetAVTransportURI is sent; Play follows its answer; the first sound is
the first non-silent 10 ms fragment on the sink's monitor
(benchmarks/latency/first_sound.py's measure, unchanged). Each play gets a
URL of its own (a query the file server ignores), so neither renderer plays
from a copy of an earlier round. After each measure the control point sends
Stop and waits for 250 ms of silence on the monitor before the next one.
Each renderer's first play after its start is a warm-up (GStreamer loads its
plugins then): measured the same way, reported, not counted.

Rounds alternate the order (ours first, then gmediarender first…) so drift
hits both alike; figures are medians; the ratio is ours ÷ gmediarender (lower
is better). Writes the contract's JSON (benchmarks/results/upnp.json). Every
process started here is stopped in a finally block; every wait is bounded.

libupnp (gmediarender's UPnP stack) refuses a loopback interface, so
run-upnp.sh runs this script in a private network namespace with a veth
pair (no route out of it) and passes its address as --gmr-address; our
renderer and the file server stay on 127.0.0.1.

Usage (the venv of `make upnp-client`): upnp_bench.py --ours HARMONIA_PLAY
--file FLAC --work DIR --out JSON [--runs N] [--sink NAME] [--gmr-address IP]
"""
import argparse, asyncio, json, os, random, re, shutil, signal, socket, statistics, subprocess, sys, threading, time, uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "latency"))
from results_file import write_table  # noqa: E402
from first_sound import first_sound, RATE, CHANNELS, FRAGMENT  # noqa: E402

from async_upnp_client.aiohttp import AiohttpRequester  # noqa: E402
from async_upnp_client.client_factory import UpnpFactory  # noqa: E402
from async_upnp_client.profiles.dlna import DmrDevice  # noqa: E402

AVT = "urn:schemas-upnp-org:service:AVTransport:1"
OURS, PEER = "harmonia-play serve --upnp", "gmediarender"


def log(text):
    print("upnp_bench: " + text, file=sys.stderr, flush=True)


def stop_process(process, timeout=10):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def wait_silence(sink, quiet=0.25, timeout=5.0):
    """Until the sink's monitor has been silent for `quiet` seconds (bounded)."""
    parec = subprocess.Popen(["parec", "--raw", "--latency-msec=10", f"--device={sink}.monitor",
                              "--format=float32le", f"--rate={RATE}", f"--channels={CHANNELS}"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    result = {"silent": False}

    def reader():
        silent_bytes = 0
        while True:
            chunk = parec.stdout.read1(FRAGMENT)
            if not chunk:
                return
            silent_bytes = silent_bytes + len(chunk) if not any(chunk) else 0
            if silent_bytes >= quiet * RATE * CHANNELS * 4:
                result["silent"] = True
                return

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    thread.join(timeout)
    parec.kill()
    parec.wait()
    if not result["silent"]:
        raise RuntimeError(f"the sink was not silent for {quiet} s within {timeout} s after Stop")


class FileServer:
    """Tests/Network/fault_server.py serving the folder on 127.0.0.1."""

    def __init__(self, root, work):
        script = os.path.join(ROOT, "Tests", "Network", "fault_server.py")
        self.process = subprocess.Popen([sys.executable, script, "--root", root, "--log", os.path.join(work, "requests.jsonl")],
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        if not line.strip().isdigit():
            stop_process(self.process)
            raise RuntimeError("the HTTP server did not start")
        self.base = f"http://127.0.0.1:{int(line)}"

    def stop(self):
        stop_process(self.process)


def wait_log(path, process, pattern, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with open(path, errors="replace") as f:
            found = re.search(pattern, f.read())
        if found:
            return found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.05)  # polling a log file: the condition is the line
    with open(path, errors="replace") as f:
        tail = f.read()[-1500:]
    raise RuntimeError(f"no line {pattern!r} (exit {process.poll()}); log:\n{tail}")


def start_ours(binary, sink, work):
    folder = os.path.join(work, "ours")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(os.path.join(folder, "music"))
    log_path = os.path.join(folder, "serve.log")
    with open(log_path, "w") as log_file:
        process = subprocess.Popen(
            [binary, "serve", "--music-dir", os.path.join(folder, "music"), "--database", os.path.join(folder, "db.sqlite"),
             "--state", os.path.join(folder, "state", "state.json"), "--mpd-listen", "off", "--listen", "off",
             "--output", "pulse", "--device", sink, "--upnp", "--upnp-listen", "127.0.0.1:0",
             "--upnp-ssdp-port", "off", "--upnp-name", "Harmonia bench"],
            stdout=subprocess.DEVNULL, stderr=log_file, stdin=subprocess.DEVNULL)
    try:
        location = wait_log(log_path, process, r"UPnP renderer \"Harmonia bench\" on (http://\S+)")
    except Exception:
        stop_process(process)
        raise
    return process, location


def free_port(address):
    """A port gmediarender accepts (49152-65535) that is free on ADDRESS now."""
    for port in random.sample(range(49152, 65536), 50):
        with socket.socket() as s:
            try:
                s.bind((address, port))
                return port
            except OSError:
                continue
    raise RuntimeError(f"no free port in 49152-65535 on {address}")


def start_gmediarender(address, sink, work):
    """gmediarender on ADDRESS (libupnp wants a non-loopback interface), pulsesink to SINK."""
    folder = os.path.join(work, "gmediarender")
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    log_path = os.path.join(folder, "gmediarender.log")
    port = free_port(address)
    with open(log_path, "w") as log_file:
        process = subprocess.Popen(
            ["gmediarender", "--interface-name", interface_of(address), "--port", str(port), "--uuid", str(uuid.uuid4()),
             "--friendly-name", "gmediarender bench", "--output", "gst", "--gstout-audiosink", "pulsesink",
             "--gstout-audiodevice", sink, "--logfile", "stderr"],
            stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        # libupnp retries its start (1 s apart, for 60 s) and may take another port: the one it registered.
        port = wait_log(log_path, process, r"Registered IP=\S+ port=(\d+)", 70)
        wait_log(log_path, process, r"(Ready for rendering)", 30)
    except Exception:
        stop_process(process)
        raise
    location = f"http://{address}:{port}/description.xml"
    return process, location


def interface_of(address):
    """The interface holding ADDRESS (`ip -o -4 addr`)."""
    listing = subprocess.run(["ip", "-o", "-4", "addr"], capture_output=True, text=True).stdout
    for line in listing.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[3].split("/")[0] == address:
            return fields[1].split("@")[0]
    raise RuntimeError(f"no interface holds {address}")


class ControlPoint:
    """async-upnp-client on an event loop in a thread of its own; the measure calls into it."""

    def __init__(self):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.requester = AiohttpRequester(timeout=10)
        self.factory = UpnpFactory(self.requester)

    def call(self, coroutine, timeout=20):
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def device(self, location):
        async def build():
            device = await self.factory.async_create_device(location)
            return device, DmrDevice(device, None)
        return self.call(build())

    def close(self):
        async def shut():
            await self.requester.async_close() if hasattr(self.requester, "async_close") else None
        try:
            self.call(shut(), 5)
        except Exception:
            pass
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


class Cast:
    """One play for first_sound(): go() sends SetAVTransportURI, then Play; kill() sends Stop."""

    def __init__(self, control, renderer, url, meta, sink):
        self.control, self.renderer, self.url, self.meta, self.sink = control, renderer, url, meta, sink
        self.avt = renderer["device"].service(AVT)

    def go(self):
        async def cast():
            await self.avt.action("SetAVTransportURI").async_call(InstanceID=0, CurrentURI=self.url, CurrentURIMetaData=self.meta)
            await self.avt.action("Play").async_call(InstanceID=0, Speed="1")
        try:
            self.control.call(cast())
        except BaseException:
            self.kill()  # first_sound() stops only a player that started
            raise

    def kill(self):
        self.control.call(self.avt.action("Stop").async_call(InstanceID=0))

    def wait(self):
        wait_silence(self.sink)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ours", required=True)
    parser.add_argument("--file", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sink", default="harmonia_null")
    parser.add_argument("--gmr-address", help="the non-loopback address gmediarender listens on (none: not measured)")
    a = parser.parse_args()
    # run-upnp.sh's `timeout` sends SIGTERM: leave through the finally blocks, which stop the renderers.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    os.makedirs(a.work, exist_ok=True)
    served = os.path.join(a.work, "served")
    shutil.rmtree(served, ignore_errors=True)
    os.makedirs(served)
    name = os.path.basename(a.file)
    shutil.copy(a.file, os.path.join(served, name))
    seconds = float(subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", a.file],
                                   capture_output=True, text=True).stdout.strip() or 0)

    processes, notes, warmup = [], [], {}
    server = control = None
    renderers = {}
    sound = {OURS: [], PEER: []}
    try:
        server = FileServer(served, a.work)
        control = ControlPoint()
        process, location = start_ours(a.ours, a.sink, a.work)
        processes.append(process)
        renderers[OURS] = {"location": location}
        if a.gmr_address and shutil.which("gmediarender"):
            process, location = start_gmediarender(a.gmr_address, a.sink, a.work)
            processes.append(process)
            renderers[PEER] = {"location": location}
        else:
            notes.append("gmediarender not measured: " + ("not installed" if a.gmr_address else
                                                         "no network namespace for it (libupnp refuses loopback; run-upnp.sh needs root or user namespaces)"))
        for label, r in renderers.items():
            r["device"], dmr = control.device(r["location"])
            log(f"{label}: {r['device'].friendly_name} at {r['location']}")
            r["meta"] = lambda url, dmr=dmr: control.call(dmr.construct_play_media_metadata(
                url, "Bench chord", override_mime_type="audio/flac", override_upnp_class="object.item.audioItem.musicTrack",
                meta_data={"artist": "Harmonia bench"}))
        play = 0

        def measure(label):
            nonlocal play
            r = renderers[label]
            play += 1
            url = f"{server.base}/{name}?type=audio/flac&play={play}"
            meta = r["meta"](url)  # built before the clock, as a control point has it ready
            try:
                return round(first_sound(lambda: Cast(control, r, url, meta, a.sink), a.sink, timeout=15), 1)
            except Exception as error:
                raise RuntimeError(f"{label}, play {play}: no first sound ({error!r})") from error

        for label in renderers:  # each renderer's first play after its start (GStreamer loads its plugins): not counted
            warmup[label] = measure(label)
            log(f"warm-up: {label} {warmup[label]} ms")
        for run in range(a.runs):
            order = list(renderers) if run % 2 == 0 else list(reversed(renderers))
            for label in order:
                ms = measure(label)
                sound[label].append(ms)
                log(f"round {run + 1}: {label} {ms} ms")
    finally:
        for process in processes:
            stop_process(process)
        if control:
            control.close()
        if server:
            server.stop()

    ours = statistics.median(sound[OURS])
    rows = [[OURS, round(ours, 1), None]]
    headline = []
    ratio = None
    if sound[PEER]:
        peer = statistics.median(sound[PEER])
        ratio = round(ours / peer, 3)
        rows = [[OURS, round(ours, 1), ratio], [PEER, round(peer, 1), 1.0]]
        headline = [{"label": "UPnP cast: SetAVTransportURI+Play to first sound vs gmediarender", "ratio": ratio,
                     "target": 1.0, "lower_is_better": True}]
    version = [line.split("; ", 1)[-1] for line in subprocess.run(["gmediarender", "--version"], capture_output=True, text=True)
               .stdout.splitlines()[:1]] if shutil.which("gmediarender") else []
    method = (
        f"The time from sending SetAVTransportURI (then Play, after its answer) to the first non-silent 10 ms fragment on "
        f"the {a.sink} null sink's monitor (benchmarks/latency/first_sound.py's measure), for {OURS} (release build, "
        f"`--output pulse --device {a.sink}`, on 127.0.0.1) and gmediarender ({version[0] if version else 'gmrender-resurrect'}; "
        f"`--gstout-audiosink pulsesink --gstout-audiodevice {a.sink}`, its defaults otherwise: buffering off), both running "
        f"throughout on the same private PulseAudio server. Control point: async-upnp-client 0.49 (devices from the "
        f"description URL, DIDL-Lite from its DMR profile, built before the clock). The file: a {seconds:.0f} s stereo "
        f"44.1 kHz 16-bit FLAC (ffmpeg; sound from its first frame) served by Tests/Network/fault_server.py on 127.0.0.1, "
        f"a URL of its own per play. Stop and 250 ms of silence between plays; each renderer's first play after its start is a warm-up, not counted (its figure is in the results' runs). gmediarender listens on a veth address in a "
        f"private network namespace (libupnp refuses loopback); nothing leaves the namespace. {a.runs} rounds, alternating "
        f"which renderer goes first; medians. The monitor's own delay is in both figures alike: the ratio is the figure to read.")
    out = {"part": "upnp", "title": "UPnP renderer: SetAVTransportURI+Play to first sound, ours vs gmediarender",
           "method": method, "columns": ["Renderer", "first sound, median (ms)", "ratio ours ÷ gmediarender"],
           "rows": rows, "headline": headline, "notes": notes, "runs": {"first_sound_ms": sound, "warm_up_ms": warmup}}
    if warmup:
        notes.append("Warm-up plays, not counted: " + ", ".join(f"{k} {v} ms" for k, v in warmup.items()) + ".")
    write_table(out, a.out)
    log(f"wrote {a.out}")
    print(json.dumps({"medians_ms": {k: (statistics.median(v) if v else None) for k, v in sound.items()}, "ratio": ratio}))


if __name__ == "__main__":
    main()
