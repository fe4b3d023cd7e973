#!/usr/bin/python3
"""The web remote in a real browser (issue 24).

Starts `harmonia-play serve --listen 127.0.0.1:0` on a generated music tree,
opens the page in headless Chromium (Debian's, driven by Selenium), works its
controls and checks the player's side through the WebSocket protocol: the
playing title, pause and play, a click on the Position bar, Next and Previous,
repeat and shuffle, search and Add, the queue's buttons, an offline copy's
entry (it reads 'Offline copy'), Volume; phone and
desktop screenshots; a server restart on the same port.

Usage: remote_browser_test.py HARMONIA_PLAY [--artifacts DIR]

Prints one line per passed check; on a failure, one line `FAIL: reason` and
exit status 1. Every wait is bounded. Needs the Debian packages chromium,
chromium-driver, python3-selenium and python3-websockets, and ffmpeg.
"""
import argparse
import asyncio
import contextlib
import http.server
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

CHROMIUM = "/usr/lib/chromium/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT = 20  # seconds, the longest any one wait may take
PHONE = (390, 844)
DESKTOP = (1280, 800)

# (folder, file, title, artist/album artist, album, track, tone Hz); the first has an embedded cover.
SONGS = [
    ("Alpha Band/First Light", "01 Morning Tide.flac", "Morning Tide", "Alpha Band", "First Light", 1, 440),
    ("Alpha Band/First Light", "02 Copper Sky.flac", "Copper Sky", "Alpha Band", "First Light", 2, 550),
    ("Beta Ensemble/Second Wind", "01 Lantern Song.mp3", "Lantern Song", "Beta Ensemble", "Second Wind", 1, 660),
    ("Beta Ensemble/Second Wind", "02 Harbour Lights.mp3", "Harbour Lights", "Beta Ensemble", "Second Wind", 2, 330),
]
SECONDS = 30


class Failure(Exception):
    pass


def passed(text):
    print("ok:", text, flush=True)


def wait_until(what, predicate, timeout=WAIT, interval=0.1):
    """Polls `predicate` until it returns a true value (returned) or `timeout` passes (Failure)."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except Failure:
            raise
        except Exception as error:  # the page or the server between two states
            last = error
        time.sleep(interval)
    reason = str(last).strip().splitlines()[0] if last and str(last).strip() else ""
    raise Failure(f"{what}: not within {timeout} s" + (f" (last error: {reason})" if reason else ""))


# MARK: - Music

def make_music(root):
    """The music tree: 4 songs of 30 s in 2 albums (FLAC and MP3), tagged; the first with a cover."""
    os.makedirs(root, exist_ok=True)
    cover = os.path.join(os.path.dirname(root), "cover.png")
    gradient = "nullsrc=s=300x300,format=gbrp,geq=r='38+195*(X+Y)/600':g='70+126*(X+Y)/600':b='83+23*(X+Y)/600'"
    subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", gradient, "-frames:v", "1", cover],
                   check=True, timeout=60)
    for i, (folder, name, title, artist, album, track, tone) in enumerate(SONGS):
        os.makedirs(os.path.join(root, folder), exist_ok=True)
        command = ["ffmpeg", "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", f"sine=f={tone}:d={SECONDS}"]
        if i == 0:
            command += ["-i", cover, "-map", "0:a", "-map", "1:v", "-c:v", "copy", "-disposition:v", "attached_pic"]
        for key, value in (("title", title), ("artist", artist), ("album_artist", artist), ("album", album),
                           ("track", str(track))):
            command += ["-metadata", f"{key}={value}"]
        if name.endswith(".mp3"):
            command += ["-id3v2_version", "4"]
        command.append(os.path.join(root, folder, name))
        subprocess.run(command, check=True, timeout=60)


# MARK: - The server

class Server:
    """One `harmonia-play serve` process; its stderr goes to a log in the artifacts folder."""

    def __init__(self, binary, music, folder, log_path, port=0, extra=()):
        self.log_path = log_path
        self.lines = []
        self.ready = threading.Event()
        self.port = None
        command = [binary, "serve", "--music-dir", music, "--database", os.path.join(folder, "library.sqlite"),
                   "--state", os.path.join(folder, "state.json"), "--mpd-listen", "off", "--output", "null",
                   "--listen", f"127.0.0.1:{port}", "--store", os.path.join(folder, "store"), *extra]
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True, errors="replace")
        threading.Thread(target=self._read, daemon=True).start()
        if not self.ready.wait(WAIT) or self.port is None:
            self.stop()
            raise Failure(f"the server did not say 'web remote on http://127.0.0.1:PORT/' within {WAIT} s: "
                          + " | ".join(self.lines[-5:]))
        if port and self.port != port:
            raise Failure(f"the restarted server listens on {self.port}, not {port}")

    def _read(self):
        with open(self.log_path, "a", encoding="utf-8") as log:
            for line in self.process.stderr:
                log.write(line)
                log.flush()
                self.lines.append(line.rstrip("\n"))
                match = re.search(r"web remote on https?://[^/]*:(\d+)/", line)
                if match and self.port is None:
                    self.port = int(match.group(1))
                    self.ready.set()
        self.ready.set()

    def stop(self):
        """SIGTERM, and waits for the exit (bounded); returns the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=WAIT)
            raise Failure(f"the server did not exit within {WAIT} s of SIGTERM")


class Protocol:
    """The player's side, through the WebSocket protocol (one short connection per command)."""

    def __init__(self, port, token=None):
        self.url = f"ws://127.0.0.1:{port}/ws"
        self.token = token

    def __call__(self, command, **args):
        return asyncio.run(asyncio.wait_for(self._call(command, args), WAIT))

    async def _call(self, command, args):
        import websockets
        async with websockets.connect(self.url, max_size=4 << 20) as socket:
            if self.token:
                await socket.send(json.dumps({"message_id": 0, "command": "auth", "args": {"token": self.token}}))
            await socket.send(json.dumps({"message_id": 1, "command": command, "args": args}))
            while True:
                message = json.loads(await socket.recv())
                if message.get("message_id") == 1:
                    if "error_code" in message:
                        raise Failure(f"{command} {args}: {message['error_code']}: {message.get('error')}")
                    return message.get("result")

    def status(self):
        return self("status")


@contextlib.contextmanager
def serving(directory):
    """`directory` over HTTP on a loopback port, quietly, for the length of the block: its base URL."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=directory, **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def url_path(relative):
    """A path of the music folder as a URL's path (spaces escaped)."""
    return "/".join(part.replace(" ", "%20") for part in relative.split("/"))


def offline_check(play, page, music):
    """offline/add of a song served over HTTP on loopback, queue/add of its URL: the page's entry reads
    'Offline copy' (text inside the entry's button, so it is in its accessible name); offline/remove clears it."""
    with serving(music) as base:
        url = base + "/" + url_path(f"{SONGS[0][0]}/{SONGS[0][1]}")
        play("offline/add", url=url)
        wait_until("the offline copy complete (offline/list)",
                   lambda: any(e["key"] == url and e["complete"] for e in play("offline/list")["entries"]))
        play("queue/add", uri=url)
        entry = lambda: next((li for li in page.queue_items() if li.get_attribute("data-offline") == "true"), None)
        li = wait_until("a queue entry marked offline on the page", entry)
        button = li.find_element("css selector", "button")
        name = page.driver.execute_script("return arguments[0].textContent", button)
        if "Offline copy" not in name or not play("queue/items")["items"][-1]["offline"]:
            raise Failure(f"the offline entry's button reads '{name}'; queue/items: {play('queue/items')['items'][-1]}")
        passed("a queued URL with a complete offline copy reads 'Offline copy' in its entry (queue/items: offline true): "
               + page.screenshot("desktop-offline-copy.png"))
        play("offline/remove", key=url)
        wait_until("the offline mark gone after offline/remove", lambda: entry() is None)
        play("queue/remove", index=len(play("queue/items")["items"]) - 1)  # its server goes away below
        passed("offline/remove clears the entry's 'Offline copy'")


def cast_cover_check(play, page, server, music):
    """A UPnP control point casts a song with an albumArtURI (SetAVTransportURI and Play as raw SOAP, the
    DIDL-Lite as Home Assistant writes it): the page shows that image as the cover, which the page's
    Content-Security-Policy lets in, and the status carries it as the track's artworkUrl."""
    import html
    import urllib.request
    location = next((m.group(1) for line in server.lines
                     for m in [re.search(r'UPnP renderer ".*" on (http://\S+)', line)] if m), None)
    if not location:
        raise Failure("serve did not name its UPnP renderer's description URL: " + " | ".join(server.lines[-5:]))
    control = location.replace("/description.xml", "/upnp/AVTransport/control")
    with serving(os.path.dirname(music)) as base:  # the folder of music/ and cover.png
        song = base + "/music/" + url_path(f"{SONGS[1][0]}/{SONGS[1][1]}")
        cover = base + "/cover.png"
        didl = ('<DIDL-Lite xmlns="urn:schemas-upnp-org:metadata-1-0/DIDL-Lite/" xmlns:dc="http://purl.org/dc/elements/1.1/" '
                'xmlns:upnp="urn:schemas-upnp-org:metadata-1-0/upnp/"><item id="0" parentID="-1" restricted="false">'
                f'<dc:title>Cast song</dc:title><upnp:albumArtURI>{html.escape(cover)}</upnp:albumArtURI>'
                '<upnp:class>object.item.audioItem.musicTrack</upnp:class>'
                f'<res protocolInfo="http-get:*:audio/flac:*">{html.escape(song)}</res></item></DIDL-Lite>')
        service = "urn:schemas-upnp-org:service:AVTransport:1"
        for action, inner in (("SetAVTransportURI", f"<InstanceID>0</InstanceID><CurrentURI>{html.escape(song)}</CurrentURI>"
                                                    f"<CurrentURIMetaData>{html.escape(didl)}</CurrentURIMetaData>"),
                              ("Play", "<InstanceID>0</InstanceID><Speed>1</Speed>")):
            body = ('<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" '
                    's:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body>'
                    f'<u:{action} xmlns:u="{service}">{inner}</u:{action}></s:Body></s:Envelope>')
            request = urllib.request.Request(control, data=body.encode(), method="POST", headers={
                "Content-Type": 'text/xml; charset="utf-8"', "SOAPACTION": f'"{service}#{action}"'})
            with urllib.request.urlopen(request, timeout=10) as answer:
                if answer.status != 200:
                    raise Failure(f"{action}: HTTP {answer.status}")
        wait_until("'Cast song' in the 'Now playing' region", lambda: "Cast song" in page.now_playing().text)
        wait_until("the cast cover shown", lambda: page.driver.execute_script(
            "const i = document.querySelector('section[aria-label=\"Now playing\"] img');"
            "return !!i && !i.hidden && i.complete && i.naturalWidth > 0 && i.src === arguments[0]", cover))
        track = play.status()["track"]
        if track.get("artworkUrl") != cover:
            raise Failure(f"the status track's artworkUrl is {track.get('artworkUrl')!r}, not {cover!r}")
        passed("a UPnP control point's albumArtURI is the page's cover (and the status track's artworkUrl): "
               + page.screenshot("desktop-cast-cover.png"))


# MARK: - The browser

def open_browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-extensions", "--no-first-run", "--force-prefers-reduced-motion"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(WAIT)
    driver.set_script_timeout(WAIT)
    return driver


class Page:
    def __init__(self, driver, artifacts):
        self.driver = driver
        self.artifacts = artifacts
        self.console = []

    def viewport(self, size, mobile):
        width, height = size
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                    {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": mobile})
        wait_until(f"a {width}×{height} viewport",
                   lambda: self.driver.execute_script("return innerWidth") == width)

    def named(self, css, name, prefix=False, within=None, displayed=True):
        """The element matching `css` whose accessible name (Chromium's computed label) is `name`."""
        for element in (within or self.driver).find_elements("css selector", css):
            label = element.accessible_name or ""
            if (label.startswith(name) if prefix else label == name) and (not displayed or element.is_displayed()):
                return element
        return None

    def find(self, what, css, name, **kwargs):
        return wait_until(what, lambda: self.named(css, name, **kwargs))

    def button(self, name, **kwargs):
        return self.find(f"a button named '{name}'", "button", name, **kwargs)

    def press(self, name):
        """Clicks the button named `name` (found again if the page re-rendered it meanwhile)."""
        wait_until(f"a click on the button named '{name}'", lambda: self.named("button", name).click() or True)

    def slider(self, name):
        return self.find(f"a slider named '{name}'", "input[type=range], [role=slider]", name)

    def now_playing(self):
        return self.find("the 'Now playing' region", "section, [role=region]", "Now playing")

    def status_text(self):
        return " ".join(e.text for e in self.driver.find_elements("css selector", "[role=status], [aria-live]"))

    def queue_items(self):
        queue = self.find("the list named 'Queue'", "ol, ul, [role=list]", "Queue", displayed=False)
        return queue.find_elements("css selector", ":scope > li, :scope > [role=listitem]")

    def click_at(self, element, fraction):
        """Clicks `element` at `fraction` of its width, on its middle line."""
        from selenium.webdriver.common.action_chains import ActionChains
        width = element.rect["width"]
        ActionChains(self.driver).move_to_element_with_offset(element, int((fraction - 0.5) * width), 0).click().perform()

    def screenshot(self, name):
        path = os.path.join(self.artifacts, name)
        if not self.driver.save_screenshot(path):
            raise Failure(f"could not save the screenshot {path}")
        return path

    def scroll_width(self):
        return self.driver.execute_script("return document.documentElement.scrollWidth")

    def check_console(self):
        """Fails on a script error or a Content-Security-Policy violation in the browser's console."""
        self.console += self.driver.get_log("browser")
        for entry in self.console:
            message = entry.get("message", "")
            if entry.get("level") == "SEVERE" and ("Content Security Policy" in message or "Uncaught" in message):
                raise Failure("the browser's console: " + message[:300])


# MARK: - The checks

def run(binary, artifacts):
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver"), (shutil.which("ffmpeg"), "ffmpeg")):
        if not path or not os.path.exists(path):
            raise Failure(f"{path or package} is missing (apt-get install {package})")
    try:
        import selenium  # noqa: F401
        import websockets  # noqa: F401
    except ImportError as error:
        raise Failure(f"{error} (apt-get install python3-selenium python3-websockets)")
    os.makedirs(artifacts, exist_ok=True)
    for old in os.listdir(artifacts):
        if old.endswith((".png", ".log")):
            os.remove(os.path.join(artifacts, old))

    folder = tempfile.mkdtemp(prefix="harmonia-web-")
    music = os.path.join(folder, "music")
    servers, driver = [], None
    try:
        make_music(music)
        server = Server(binary, music, folder, os.path.join(artifacts, "server-1.log"),
                        extra=("--upnp", "--upnp-listen", "127.0.0.1:0", "--upnp-ssdp-port", "off"))
        servers.append(server)
        port = server.port
        play = Protocol(port)
        wait_until(f"the library's {len(SONGS)} songs",
                   lambda: play("library/stats")["songs"] == len(SONGS), timeout=60, interval=0.25)
        passed(f"the server listens on 127.0.0.1:{port} and its library has {len(SONGS)} songs")

        driver = open_browser()
        page = Page(driver, artifacts)
        page.viewport(DESKTOP, mobile=False)
        driver.get(f"http://127.0.0.1:{port}/")
        wait_until("the page connected (an empty status line)",
                   lambda: driver.execute_script("return document.readyState") == "complete"
                   and page.status_text().strip() == "")
        lang = driver.execute_script("return document.documentElement.lang")
        viewport = driver.execute_script("return document.querySelector('meta[name=viewport]')?.content || ''")
        if lang != "en" or "width=device-width" not in viewport:
            raise Failure(f"<html lang> is '{lang}', the viewport meta '{viewport}'")
        passed("the page loads and connects (lang=en, a device-width viewport)")

        # Now playing
        first = SONGS[0]
        uri = f"{first[0]}/{first[1]}"
        play("queue/add", uri=uri)
        play("play")
        wait_until("the player playing", lambda: play.status()["state"] == "playing")
        wait_until(f"'{first[2]}' in the 'Now playing' region", lambda: first[2] in page.now_playing().text)
        wait_until("the cover art", lambda: driver.execute_script(
            "const i = document.querySelector('section[aria-label=\"Now playing\"] img');"
            "return !!i && !i.hidden && i.complete && i.naturalWidth > 0"))
        passed(f"queued and played through the protocol: the page shows '{first[2]}' and its cover")

        # Pause and play
        page.press("Pause")
        wait_until("the player paused after a click on 'Pause'", lambda: play.status()["state"] == "paused")
        page.press("Play")
        wait_until("the player playing after a click on 'Play'", lambda: play.status()["state"] == "playing")
        page.button("Pause")  # the toggle is named for what it will do
        passed("'Pause' pauses the player and 'Play' resumes it (status says so)")

        # The progress bar follows the heard position without polling
        bar = page.slider("Position")
        duration = play.status()["duration"]
        maximum = float(bar.get_attribute("max"))
        if abs(maximum - duration) > 0.5:
            raise Failure(f"the Position slider's max is {maximum}, the track lasts {duration} s")
        start = float(bar.get_attribute("value"))
        wait_until("the Position slider advancing", lambda: float(bar.get_attribute("value")) >= start + 1.0)
        passed(f"the Position slider (max {maximum:.1f} s) advances while playing")

        # Seek by clicking the bar (paused, so that the position stays where the click put it
        # however slow the machine; the songs are short, and from here on nothing needs them playing)
        page.press("Pause")
        wait_until("the player paused", lambda: play.status()["state"] == "paused")
        page.click_at(bar, 0.5)
        target = 0.5 * duration
        wait_until(f"the position near {target:.1f} s after a click in the middle of the bar",
                   lambda: abs(play.status()["position"] - target) <= 2.0)
        wait_until("the Position slider near the target",
                   lambda: abs(float(bar.get_attribute("value")) - target) <= 2.0)
        passed(f"a click at 50% of the bar seeks to {play.status()['position']:.1f} s (target {target:.1f} s)")

        # Search and Add
        count = len(play("queue/items")["items"])
        search = page.find("a search box named 'Search'", "input", "Search")
        search.clear()
        search.send_keys("lantern")
        third = SONGS[2]
        add = page.button("Add " + third[2])
        add.click()
        wait_until("the queue one longer after 'Add'", lambda: len(play("queue/items")["items"]) == count + 1)
        added = play("queue/items")["items"][-1]
        if third[2] != added.get("title") and third[1] not in (added.get("url") or ""):
            raise Failure(f"'Add {third[2]}' queued {added}")
        wait_until("the page's queue showing the new entry", lambda: len(page.queue_items()) == count + 1
                   and third[2] in page.queue_items()[-1].text)
        passed(f"searching 'lantern' and pressing 'Add {third[2]}' queues it (queue {count} → {count + 1})")

        # Browse by artist and album, and by folder
        page.press("Artists")
        page.press(first[3])
        page.press(first[4])
        page.button("Add " + SONGS[1][2])
        page.press("Folders")
        page.press(third[3])
        page.press(third[4])
        page.button("Add " + SONGS[3][2])
        page.press("Artists")
        page.button(third[3])
        passed(f"browsing: Artists → '{first[3]}' → '{first[4]}' and Folders → '{third[3]}' → '{third[4]}' list their songs")

        # Next and Previous
        page.press("Next")
        wait_until("the next track after 'Next'", lambda: play.status()["index"] == 1)
        wait_until(f"'{third[2]}' in the 'Now playing' region", lambda: third[2] in page.now_playing().text)
        page.press("Previous")
        wait_until("the first track after 'Previous'", lambda: play.status()["index"] == 0)
        wait_until(f"'{first[2]}' in the 'Now playing' region", lambda: first[2] in page.now_playing().text)
        passed("'Next' and 'Previous' change the track, and the page follows")

        # Repeat and shuffle
        for name, field, on, off in (("Repeat", "repeat", "all", "off"), ("Shuffle", "shuffle", True, False)):
            button = page.button(name)
            if button.get_attribute("aria-pressed") != "false":
                raise Failure(f"'{name}' has aria-pressed={button.get_attribute('aria-pressed')} at first")
            button.click()
            wait_until(f"{field} {on} after a click on '{name}'", lambda: play.status()[field] == on)
            wait_until(f"'{name}' pressed", lambda: page.button(name).get_attribute("aria-pressed") == "true")
            play(field, **({"mode": off} if field == "repeat" else {"enabled": off}))
            wait_until(f"'{name}' no longer pressed", lambda: page.button(name).get_attribute("aria-pressed") == "false")
        passed("'Repeat' and 'Shuffle' set the modes, and their aria-pressed follows the player")

        # Crossfade: the list sets the player's, and shows a value another client set
        from selenium.webdriver.support.ui import Select
        Select(page.find("a list named 'Crossfade'", "select", "Crossfade")).select_by_value("6")
        wait_until("crossfade 6 after choosing '6 s'", lambda: play.status()["crossfade"] == 6)
        play("set_crossfade", seconds=0)  # settings_changed: no other event makes the page read the status
        wait_until("the list back at 'Off'", lambda: Select(page.named("select", "Crossfade")).first_selected_option.text == "Off")
        passed("'Crossfade' sets the player's crossfade, and follows it")

        # The queue's own buttons: move, jump, remove
        play("queue/add", uri=f"{SONGS[1][0]}/{SONGS[1][1]}")
        wait_until("three entries in the page's queue", lambda: len(page.queue_items()) == 3)
        page.press("Move up " + SONGS[1][2])
        wait_until("the moved entry second", lambda: play("queue/items")["items"][1]["title"] == SONGS[1][2])
        wait_until("the page's queue reordered", lambda: SONGS[1][2] in page.queue_items()[1].text)
        wait_until("the jump button", lambda: page.queue_items()[2].find_element("css selector", "button")).click()
        wait_until("the third entry playing after a click on it", lambda: play.status()["index"] == 2
                   and play.status()["state"] == "playing")
        page.press("Remove " + SONGS[1][2])
        wait_until("the removed entry gone", lambda: len(play("queue/items")["items"]) == 2)
        wait_until("two entries in the page's queue", lambda: len(page.queue_items()) == 2)
        passed("the queue's buttons move, jump to and remove entries")

        # An offline copy: its queue entry says so in words ("Offline copy"), not only with a mark
        offline_check(play, page, music)

        # Volume
        volume = page.slider("Volume")
        before = play.status()["volume"]
        page.click_at(volume, 0.3)
        wait_until("the Volume slider moved", lambda: abs(float(volume.get_attribute("value")) - before) >= 10)
        wanted = float(volume.get_attribute("value"))
        wait_until(f"the player's volume at the slider's {wanted:.0f}",
                   lambda: abs(play.status()["volume"] - wanted) < 0.5)
        passed(f"the Volume slider sets the player's volume ({before:.0f} → {play.status()['volume']:.0f})")
        page.check_console()
        passed("no script errors and no Content-Security-Policy violations in the console")

        # Screenshots: a phone (its three tabs) and a desktop, the song with a cover playing
        play("jump", index=0)
        wait_until(f"'{first[2]}' in the 'Now playing' region", lambda: first[2] in page.now_playing().text)
        wait_until("the cover art", lambda: driver.execute_script(
            "const i = document.querySelector('section[aria-label=\"Now playing\"] img');"
            "return !!i && !i.hidden && i.complete && i.naturalWidth > 0"))
        page.viewport(PHONE, mobile=True)
        shots = []
        for tab in ("Playing", "Queue", "Library"):
            tab_button = page.named("nav button, [role=tab]", tab)
            if tab_button is not None:
                tab_button.click()
            if tab == "Playing":
                page.slider("Volume")
            elif tab == "Queue":
                wait_until("the queue shown on the phone", lambda: page.queue_items()[0].is_displayed())
            else:
                page.find("the search box on the phone", "input", "Search").send_keys("ligh")
                page.button("Add " + SONGS[3][2])
            width = page.scroll_width()
            if width > PHONE[0]:
                raise Failure(f"horizontal scrolling on a phone ({tab}): scrollWidth {width} > {PHONE[0]}")
            shots.append(page.screenshot(f"phone-{tab.lower()}.png"))
        passed(f"a phone-sized screen ({PHONE[0]}×{PHONE[1]}) has no horizontal scrolling: " + ", ".join(shots))

        page.viewport(DESKTOP, mobile=False)
        page.press("Artists")  # leaves the search
        page.button(first[3])
        for css, name in (("input[type=range]", "Position"), ("input[type=range]", "Volume"), ("input", "Search"),
                          ("button", "Next"), ("section, [role=region]", "Now playing")):
            page.find(f"'{name}' shown on the desktop", css, name)
        wait_until("the queue shown on the desktop", lambda: page.queue_items()[0].is_displayed())
        passed(f"a desktop screen ({DESKTOP[0]}×{DESKTOP[1]}) shows everything at once: "
               + page.screenshot("desktop.png"))

        cast_cover_check(play, page, server, music)

        # The server restarts: the page says so, reconnects and reloads
        exit_status = server.stop()
        wait_until("the page saying 'reconnecting' or 'offline' after SIGTERM",
                   lambda: re.search(r"reconnecting|offline", page.status_text(), re.I))
        passed(f"the server stopped (exit {exit_status}); the page says '{page.status_text().strip()}'")
        page.screenshot("desktop-offline.png")
        server = Server(binary, music, folder, os.path.join(artifacts, "server-2.log"), port=port)
        servers.append(server)
        wait_until("the page reconnected (an empty status line)", lambda: page.status_text().strip() == "")
        status, items = play.status(), play("queue/items")["items"]
        wait_until(f"the page's queue with the restarted player's {len(items)} entries",
                   lambda: len(page.queue_items()) == len(items))
        if status["track"] and status["track"].get("title"):
            wait_until("the restarted player's title on the page",
                       lambda: status["track"]["title"] in page.now_playing().text)
        # Events flow on the new connection.
        play("queue/add", uri=f"{SONGS[3][0]}/{SONGS[3][1]}")
        play("jump", index=len(items))
        play("play")
        wait_until(f"'{SONGS[3][2]}' on the page after the restart", lambda: SONGS[3][2] in page.now_playing().text)
        wait_until("the new entry in the page's queue", lambda: len(page.queue_items()) == len(items) + 1)
        passed(f"the server started again on port {port}: the page reconnected, reloaded the queue "
               f"({len(items)} entries) and follows its events")
        page.screenshot("desktop-reconnected.png")

        # A token: the page asks for it, refuses a wrong one, and takes one from the address's #token=
        server.stop()
        token = "t0ken-" + str(os.getpid())
        server = Server(binary, music, folder, os.path.join(artifacts, "server-3.log"), port=port, extra=("--token", token))
        servers.append(server)
        play = Protocol(port, token)
        field = page.find("a field named 'Token'", "input", "Token")
        field.send_keys("wrong")
        page.press("Connect")
        wait_until("the token form again after a wrong token", lambda: re.search(r"token", page.status_text(), re.I)
                   and page.named("input", "Token") is not None and page.named("button", "Connect") is not None)
        page.screenshot("desktop-token.png")
        field = page.find("a field named 'Token'", "input", "Token")
        field.clear()
        field.send_keys(token)
        page.press("Connect")
        wait_until("the page connected with the token", lambda: page.status_text().strip() == ""
                   and not page.named("input", "Token"))
        title = play.status()["track"]["title"]
        wait_until(f"'{title}' on the page with the token", lambda: title in page.now_playing().text)
        driver.execute_script("localStorage.clear()")
        driver.get("about:blank")
        driver.get(f"http://127.0.0.1:{port}/#token={token}")
        wait_until("the page connected with #token=", lambda: page.status_text().strip() == ""
                   and title in page.now_playing().text)
        if driver.execute_script("return location.hash"):
            raise Failure("#token= stays in the address bar")
        passed("with --token the page asks for the token, refuses a wrong one, connects with the right one, "
               "and takes #token= from the address (then removes it)")
        page.check_console()
    finally:
        if driver is not None:
            driver.quit()
        for server in servers:
            if server.process.poll() is None:
                server.stop()
        shutil.rmtree(folder, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("harmonia_play", help="the harmonia-play binary")
    parser.add_argument("--artifacts", default="/tmp/harmonia-web-artifacts", help="where screenshots and logs go")
    options = parser.parse_args()
    try:
        run(os.path.abspath(options.harmonia_play), options.artifacts)
    except Failure as failure:
        print(f"FAIL: {failure}", flush=True)
        return 1
    except Exception as error:  # Selenium's or anything unforeseen: still one line
        print(f"FAIL: {type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}",
              flush=True)
        return 1
    print(f"all checks passed; screenshots and server logs in {options.artifacts}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
