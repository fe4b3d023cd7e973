#!/usr/bin/python3
"""The control protocol over WebSocket, driven from outside as apps drive it
(specs/control-protocol.md §WebSocket): every command, pushed events and their
order, authentication, the Host/Origin policy, the limits, 100 clients, TLS,
a server restart on the same port, the plain player's --listen.

    ws_protocol_test.py HARMONIA_PLAY WORKDIR

Python's `websockets` (Debian's python3-websockets 10.4) is the client. Every
wait is bounded; the first failed check ends the run with one line on stderr
and exit status 1. Each passed check prints `ok NAME`.
"""
import asyncio
import http.client
import json
import os
import re
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

import websockets

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ beside the tests
import ws_stamps  # noqa: E402  (the `stamps` check)

BINARY, WORK = sys.argv[1], sys.argv[2]
TIMEOUT = 20


class Failed(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failed(what)


# ---------------------------------------------------------------- the server

class Server:
    """harmonia-play serve (or play) on a private folder, its stderr read by a thread."""

    def __init__(self, args, announce="web remote on "):
        self.lines = []
        self.cond = threading.Condition()
        self.args = args
        self.process = subprocess.Popen([BINARY] + args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.PIPE, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        line = self.wait_line(announce)
        match = re.search(r"(https?)://([^ ]+):(\d+)/", line)
        check(match, f"no URL in {line!r}")
        self.scheme, self.port = match.group(1), int(match.group(3))

    def _read(self):
        for line in self.process.stderr:
            with self.cond:
                self.lines.append(line.rstrip("\n"))
                self.cond.notify_all()
        with self.cond:
            self.lines.append(None)
            self.cond.notify_all()

    def wait_line(self, text, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for line in self.lines:
                    if line is not None and text in line:
                        return line
                if None in self.lines:
                    raise Failed(f"the player ended without printing {text!r}: {self.lines}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Failed(f"no {text!r} on stderr within {timeout} s: {self.lines}")
                self.cond.wait(left)

    def stop(self, sig=signal.SIGTERM):
        if self.process.poll() is None:
            self.process.send_signal(sig)
        try:
            return self.process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            subprocess.run(["gdb", "-p", str(self.process.pid), "-batch", "-ex", "thread apply all bt"], stdout=sys.stderr, stderr=subprocess.DEVNULL)
            self.process.kill()
            raise Failed(f"the player did not exit within 20 s of SIGTERM: {' '.join(self.args)}; stderr: {self.lines[-5:]}")

    @property
    def ws(self):
        return f"{'wss' if self.scheme == 'https' else 'ws'}://127.0.0.1:{self.port}/ws"


def serve(folder, *extra):
    return Server(["serve", "--music-dir", MUSIC, "--database", os.path.join(WORK, "library.sqlite"),
                   "--store", os.path.join(WORK, "offline"),
                   "--state", os.path.join(WORK, folder, "state.json"), "--mpd-listen", "off", "--output", "null",
                   "--quiet"] + list(extra))


# ---------------------------------------------------------------- a client

class Client:
    """One connection: requests matched to replies by message_id, events kept in order."""

    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.events = []  # (event name, data)

    @classmethod
    async def connect(cls, url, **kwargs):
        return cls(await asyncio.wait_for(websockets.connect(url, max_size=4 << 20, **kwargs), TIMEOUT))

    async def request(self, command, args=None, raw=None):
        """The reply to `command`; events that came before it are kept."""
        self.next_id += 1
        mid = self.next_id
        await self.ws.send(raw if raw is not None else json.dumps({"message_id": mid, "command": command, "args": args or {}}))
        while True:
            message = json.loads(await asyncio.wait_for(self.ws.recv(), TIMEOUT))
            if "event" in message:
                self.events.append((message["event"], message.get("data")))
                continue
            if raw is not None or message.get("message_id") == mid:
                return message

    async def result(self, command, args=None):
        reply = await self.request(command, args)
        check("result" in reply, f"{command} {args}: {reply}")
        return reply["result"]

    async def error(self, command, args, code):
        reply = await self.request(command, args)
        check(reply.get("error_code") == code, f"{command} {args}: expected {code}, got {reply}")
        check(isinstance(reply.get("error"), str) and "\n" not in reply["error"], f"{command}: one-line error expected: {reply}")
        return reply

    async def event(self, name, where=lambda data: True):
        """The next event `name` whose data satisfies `where` (kept ones first)."""
        for i, (event, data) in enumerate(self.events):
            if event == name and where(data):
                del self.events[: i + 1]
                return data
        self.events.clear()
        deadline = time.monotonic() + TIMEOUT
        while True:
            left = deadline - time.monotonic()
            check(left > 0, f"no {name} event within {TIMEOUT} s")
            message = json.loads(await asyncio.wait_for(self.ws.recv(), left))
            if message.get("event") == name and where(message.get("data")):
                return message.get("data")

    async def close(self):
        await self.ws.close()


async def closed_with(ws, what, sending=None):
    """The close code the server ended `ws` with (after sending `sending`, which the close may interrupt)."""
    try:
        if sending is not None:
            await ws.send(sending)
        while True:
            await asyncio.wait_for(ws.recv(), TIMEOUT)
    except websockets.ConnectionClosed as closed:
        return closed.code
    except asyncio.TimeoutError:
        raise Failed(f"{what}: the server did not close the connection within {TIMEOUT} s")


def ok(name):
    print("ok", name, flush=True)


# ---------------------------------------------------------------- music

def make_music(root):
    """Four tagged songs in two albums (one MP3 with a PNG cover), a loose file, and a link out."""
    def ffmpeg(*args):
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y"] + list(args), check=True)
    os.makedirs(os.path.join(root, "Alpha"), exist_ok=True)
    os.makedirs(os.path.join(root, "Beta"), exist_ok=True)
    cover = os.path.join(WORK, "cover.png")
    ffmpeg("-f", "lavfi", "-i", "color=c=red:s=32x32", "-frames:v", "1", cover)
    songs = [("Alpha/01.flac", "First Light", "Ann Artist", "Alpha", 1), ("Alpha/02.flac", "Second Wind", "Ann Artist", "Alpha", 2),
             ("Beta/01.flac", "Third Stone", "Bob Band", "Beta", 1)]
    for path, title, artist, album, track in songs:
        ffmpeg("-f", "lavfi", "-i", "sine=f=440:d=30", "-metadata", f"title={title}", "-metadata", f"artist={artist}",
               "-metadata", f"album={album}", "-metadata", f"track={track}", os.path.join(root, path))
    ffmpeg("-f", "lavfi", "-i", "sine=f=330:d=30", "-i", cover, "-map", "0:a", "-map", "1:v", "-c:a", "libmp3lame",
           "-c:v", "png", "-disposition:v:0", "attached_pic", "-id3v2_version", "3", "-metadata", "title=Fourth Wall",
           "-metadata", "artist=Bob Band", "-metadata", "album=Beta", "-metadata", "track=2", os.path.join(root, "Beta/02.mp3"))
    outside = os.path.join(WORK, "outside")
    os.makedirs(outside, exist_ok=True)
    open(os.path.join(outside, "secret.txt"), "w").write("secret\n")
    os.symlink(outside, os.path.join(root, "escape"))


MUSIC = os.path.join(WORK, "music")
SONGS = 4


async def wait_library(client):
    deadline = time.monotonic() + TIMEOUT
    while True:
        stats = await client.result("library/stats")
        if stats["songs"] == SONGS and stats["last_update"] is not None:
            return stats
        check(time.monotonic() < deadline, f"the library has {stats['songs']} songs after {TIMEOUT} s, not {SONGS}")
        await asyncio.sleep(0.1)


# ---------------------------------------------------------------- checks

async def commands(server):
    """Every command of the protocol, with its result and errors."""
    c = await Client.connect(server.ws)
    stats = await wait_library(c)
    check(stats["artists"] == 2 and stats["albums"] == 2, f"library/stats {stats}")
    ok("library/stats after the first scan")

    browse = await c.result("library/browse", {"path": ""})
    check([f["uri"] for f in browse["folders"]] == ["Alpha", "Beta", "escape"] or [f["uri"] for f in browse["folders"]] == ["Alpha", "Beta"],
          f"library/browse /: {browse}")
    alpha = await c.result("library/browse", {"path": "Alpha"})
    check([s["title"] for s in alpha["songs"]] == ["First Light", "Second Wind"], f"library/browse Alpha: {alpha}")
    check((await c.result("library/artists"))["artists"] == ["Ann Artist", "Bob Band"], "library/artists")
    albums = (await c.result("library/albums", {"artist": "Bob Band"}))["albums"]
    check(albums == [{"album": "Beta", "artist": "Bob Band"}], f"library/albums {albums}")
    songs = await c.result("library/songs", {"album": "Alpha"})
    check(songs["total"] == 2 and songs["songs"][0]["uri"] == "Alpha/01.flac", f"library/songs {songs}")
    found = await c.result("library/search", {"query": "WIND second"})
    check([s["uri"] for s in found["songs"]] == ["Alpha/02.flac"], f"library/search {found}")
    check((await c.result("library/search", {"query": "beta"}))["total"] == 2, "library/search by path")
    # Pages: offset and limit, the total of the whole list.
    first = await c.result("library/songs", {"album": "Alpha", "limit": 1})
    second = await c.result("library/songs", {"album": "Alpha", "offset": 1, "limit": 1})
    check(first["total"] == 2 and second["total"] == 2 and second["offset"] == 1
          and [s["uri"] for s in first["songs"] + second["songs"]] == ["Alpha/01.flac", "Alpha/02.flac"],
          f"library/songs pages {first} {second}")
    artists = await c.result("library/artists", {"offset": 1, "limit": 1})
    check(artists["total"] == 2 and artists["artists"] == ["Bob Band"], f"library/artists page {artists}")
    page = await c.result("library/browse", {"path": "Alpha", "offset": 1})
    check(page["total"] == 2 and [s["title"] for s in page["songs"]] == ["Second Wind"], f"library/browse page {page}")
    check((await c.result("library/search", {"query": "beta", "offset": 5}))["songs"] == [], "library/search past the end")
    await c.error("library/artists", {"limit": 0}, "invalidArgument")
    await c.error("library/albums", {"offset": -1}, "invalidArgument")
    await c.error("library/search", {"query": "beta", "limit": "ten"}, "invalidRequest")
    check("job" in await c.result("library/update"), "library/update")
    await c.error("library/songs", {}, "invalidRequest")
    await c.error("library/search", {"query": " "}, "invalidArgument")
    await c.error("library/browse", {"path": "../"}, "notFound")
    ok("library commands: browse, artists, albums, songs, search, update; pages by offset and limit")

    added = await c.result("queue/add", {"uri": "Alpha"})
    check(added["index"] == 0 and added["count"] == 2, f"queue/add a folder: {added}")
    added = await c.result("queue/add", {"uri": "Beta/02.mp3"})
    check(added["index"] == 2 and added["track"]["title"] == "Fourth Wall", f"queue/add a file: {added}")
    added = await c.result("queue/add", {"uri": "Beta/01.flac", "index": 0})
    check(added["index"] == 0, f"queue/add at an index: {added}")
    items = await c.result("queue/items")
    check([i["title"] for i in items["items"]] == ["Third Stone", "First Light", "Second Wind", "Fourth Wall"], f"queue/items {items}")
    check([i["uri"] for i in items["items"]] == ["Beta/01.flac", "Alpha/01.flac", "Alpha/02.flac", "Beta/02.mp3"], f"queue/items uris {items}")
    await c.event("queue_changed")
    for hostile in ["../outside/secret.txt", "/etc/passwd", "file:///etc/passwd", "escape/secret.txt", "Alpha/../../outside"]:
        await c.error("queue/add", {"uri": hostile}, "notFound")
        await c.error("info", {"uri": hostile}, "notFound")
    await c.error("queue/add", {"uri": "Alpha", "index": 99}, "invalidArgument")
    await c.error("queue/add", {"uri": "Alpha", "index": 9223372036854775807}, "invalidArgument")
    ok("queue/add: files, folders, an index; paths outside the music directory refused")

    await c.result("queue/move", {"from": 0, "to": 3})
    await c.result("queue/remove", {"index": 3})
    check((await c.result("status"))["count"] == 3, "queue/move + queue/remove")
    await c.error("queue/remove", {"index": 7}, "invalidArgument")

    state = await c.result("play")
    check(state["state"] in ("playing", "buffering"), f"play: {state}")
    started = await c.event("track_started")
    check(started["index"] == 0 and started["track"]["title"] == "First Light", f"track_started {started}")
    await c.event("state_changed", lambda d: d["state"] == "playing")
    await c.event("position")
    ok("play: track_started, state_changed, position events")

    # A reply goes out before the events its command caused.
    c.events.clear()
    reply = await c.request("pause")
    check(reply.get("result", {}).get("state") == "paused", f"pause: {reply}")
    check(not any(e == "state_changed" for e, _ in c.events), f"an event came before pause's reply: {c.events}")
    await c.event("state_changed", lambda d: d["state"] == "paused")
    ok("a reply comes before the event its command caused")

    check((await c.result("toggle"))["state"] == "playing", "toggle")
    # Playing: the reply's heard position may have moved on a little since
    # the seek (a loaded machine between the seek and the reply).
    sought = (await c.result("seek", {"position": 12.5}))["position"]
    check(12.5 - 0.01 < sought < 12.5 + 0.3, f"seek position: {sought}")
    await c.event("seeked")
    check(abs((await c.result("seek", {"by": -2.5}))["position"] - 10.0) < 0.3, "seek by")
    await c.error("seek", {"position": 99}, "invalidArgument")
    await c.error("seek", {}, "invalidRequest")
    check((await c.result("volume", {"level": 40}))["volume"] == 40, "volume level")
    check((await c.result("volume", {"by": 5}))["volume"] == 45, "volume by")
    await c.event("volume_changed")
    await c.error("volume", {"level": 150}, "invalidArgument")
    check((await c.result("mute", {"enabled": True}))["muted"] is True, "mute")
    check((await c.result("mute"))["muted"] is False, "mute toggles")
    check((await c.result("repeat", {"mode": "all"}))["repeat"] == "all", "repeat")
    await c.error("repeat", {"mode": "forever"}, "invalidArgument")
    check((await c.result("shuffle", {"enabled": False}))["shuffle"] is False, "shuffle")
    await c.result("next")
    await c.event("track_started", lambda d: d["index"] == 1)
    await c.result("previous")
    await c.result("jump", {"index": 2})
    await c.event("track_started", lambda d: d["index"] == 2)
    await c.error("jump", {"index": -1}, "invalidArgument")
    status = await c.result("status")
    check(status["index"] == 2 and status["track"]["title"] == "Fourth Wall" and status["repeat"] == "all", f"status {status}")
    info = await c.result("info", {"uri": "Beta/01.flac"})
    check(info.get("title") == "Third Stone", f"info {info}")
    cover = await c.result("cover")
    check(cover["mime"] == "image/png" and cover["bytes"] > 0 and cover["data"], f"cover {str(cover)[:120]}")
    await c.error("cover", {"uri": "Alpha/01.flac"}, "notFound")
    await c.error("renew", {"url": "http://a/", "new_url": "http://b/"}, "invalidState")
    await c.error("no-such-command", {}, "unknownCommand")
    reply = await c.request(None, raw="{not json")
    check(reply.get("error_code") == "invalidRequest" and reply.get("message_id") is None, f"bad JSON: {reply}")
    await c.ws.send(b"\x00\x01binary")
    reply = json.loads(await asyncio.wait_for(c.ws.recv(), TIMEOUT))
    while "event" in reply:
        reply = json.loads(await asyncio.wait_for(c.ws.recv(), TIMEOUT))
    check(reply.get("error_code") == "invalidRequest", f"a binary frame: {reply}")
    check((await c.result("stop"))["state"] == "stopped", "stop")
    check(await c.result("queue/clear") is None, "queue/clear")
    check((await c.result("status"))["count"] == 0, "queue/clear empties the queue")
    pong = await c.ws.ping()
    await asyncio.wait_for(pong, TIMEOUT)
    check(await c.result("auth", {"token": "anything"}) == {"authenticated": True}, "auth without a token configured")
    ok("every player command: results, events, errors; ping answered")
    await c.close()


async def settings(server):
    """A crossfade set by one client reaches every other at once (settings_changed, with the status),
    after the reply to the client that set it."""
    a, b = await Client.connect(server.ws), await Client.connect(server.ws)
    await b.result("status")  # b is connected before the change
    reply = await a.request("set_crossfade", {"seconds": 2.5})
    check("result" in reply and not any(e == "settings_changed" for e, _ in a.events), f"the reply first: {reply} {a.events}")
    for client in (a, b):
        data = await client.event("settings_changed", lambda d: d["crossfade"] == 2.5)
        check(data["state"] in ("stopped", "playing", "paused") and "volume" in data and "repeat" in data, f"settings_changed carries the status: {data}")
    check(await a.result("set_crossfade", {"seconds": 0}) is not None, "set_crossfade 0")
    await b.event("settings_changed", lambda d: d["crossfade"] == 0)
    ok("settings_changed: a crossfade set by one client reaches the others with the status, after the reply")
    await a.close()
    await b.close()


async def settings_from_mpd():
    """MPD's `crossfade` reaches a WebSocket client at once (settings_changed): serve with both frontends."""
    folder = os.path.join(WORK, "settings")
    os.makedirs(folder, exist_ok=True)
    server = Server(["serve", "--music-dir", MUSIC, "--database", os.path.join(folder, "library.sqlite"),
                     "--store", os.path.join(folder, "offline"), "--state", os.path.join(folder, "state.json"),
                     "--mpd-listen", "127.0.0.1:0", "--output", "null", "--listen", "127.0.0.1:0"])
    try:
        port = int(re.search(r"MPD protocol on 127\.0\.0\.1:(\d+)", server.wait_line("MPD protocol on")).group(1))
        c = await Client.connect(server.ws)
        await c.result("status")
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as mpd:
            lines = mpd.makefile("rwb")
            check(lines.readline().startswith(b"OK MPD "), "MPD's greeting")
            lines.write(b"crossfade 3\n")
            lines.flush()
            check(lines.readline() == b"OK\n", "crossfade 3: OK")
        data = await c.event("settings_changed", lambda d: d["crossfade"] == 3)
        check(data["repeat"] in ("off", "all", "one"), f"settings_changed carries the status: {data}")
        ok("settings_changed: MPD's crossfade reaches a WebSocket client with the status")
        await c.close()
    finally:
        server.stop()


async def stamps(server):
    """Tests/WebSocket/ws_stamps.py's check, with this script's client and checks."""
    await ws_stamps.stamps(server, Client, check, ok, TIMEOUT)


async def policy(server):
    """Foreign Origin and Host: 403, before any upgrade; the page itself is served."""
    try:
        await websockets.connect(server.ws, origin="http://evil.example", open_timeout=TIMEOUT)
        raise Failed("a foreign Origin was upgraded")
    except websockets.InvalidStatusCode as refused:
        check(refused.status_code == 403, f"foreign Origin: HTTP {refused.status_code}")
    c = await Client.connect(server.ws, origin=f"http://127.0.0.1:{server.port}")
    await c.result("status")
    await c.close()
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT)
    conn.request("GET", "/", headers={"Host": "evil.example:%d" % server.port})
    response = conn.getresponse()
    check(response.status == 403, f"a foreign Host: HTTP {response.status}")
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=TIMEOUT)
    conn.request("GET", "/")
    response = conn.getresponse()
    body = response.read()
    check(response.status == 200 and b"<html" in body and "default-src 'self'" in response.getheader("Content-Security-Policy", ""),
          f"GET /: {response.status}")
    conn.request("GET", "/nothing")
    check(conn.getresponse().status == 404, "GET /nothing: 404")
    ok("a foreign Origin or Host gets 403; the page is served with a CSP")


async def limits(server):
    """Over 1 MiB (one frame, or fragments together): 1009. A client that stops reading is dropped; others go on."""
    c = await Client.connect(server.ws)
    big = json.dumps({"message_id": 1, "command": "status", "args": {"pad": "x" * (3 << 19)}})
    code = await closed_with(c.ws, "1.5 MiB message", sending=big)
    check(code == 1009, f"a 1.5 MiB message: close code {code}")
    c = await Client.connect(server.ws)
    code = await closed_with(c.ws, "fragmented 1.5 MiB", sending=(("y" * (256 << 10)) for _ in range(6)))  # one message in six fragments
    check(code == 1009, f"fragments over 1 MiB: close code {code}")
    ok("messages over 1 MiB, whole or in fragments, close with 1009")

    watcher = await Client.connect(server.ws)
    for _ in range(10):  # replies of some kilobytes each
        await watcher.result("queue/add", {"uri": "Alpha"})
    # A raw client sends requests and never reads its replies.
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.sendall(b"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                 b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
    request = json.dumps({"message_id": 1, "command": "queue/items"}).encode()
    frame = bytes([0x81, 0x80 | len(request)]) + b"\0\0\0\0" + request  # masked with a zero key
    sock.setblocking(False)
    dropped, sent, worst = False, 0, 0.0
    deadline = time.monotonic() + 60
    while not dropped and time.monotonic() < deadline:
        try:
            sent += sock.send(frame * 200)
        except BlockingIOError:
            pass
        except (BrokenPipeError, ConnectionResetError):
            dropped = True
        t0 = time.monotonic()
        await watcher.result("status")
        worst = max(worst, time.monotonic() - t0)
        if server.wait_line_nowait("web client dropped"):
            dropped = True
    sock.close()
    check(dropped, f"a client that never reads was not dropped after {sent} bytes of requests")
    # Not a speed figure (the debug build, beside every other suite) but a
    # correctness bound: only a request queued behind the flooding client's
    # backlog (on the shared main loop, or its writes) would take 1 s.
    check(worst < 1.0, f"another client waited {worst:.3f} s while one did not read")
    await watcher.result("queue/clear")
    await watcher.close()
    ok(f"a client that never reads is dropped ({sent // 1024} KiB of requests sent); another's status took at most {worst * 1000:.0f} ms")


async def many(server):
    """100 clients at once: each answered, each gets the events."""
    clients = await asyncio.gather(*(Client.connect(server.ws) for _ in range(100)))
    statuses = await asyncio.gather(*(c.result("status") for c in clients))
    check(all(s["state"] == "stopped" for s in statuses), "100 statuses")
    await clients[0].result("volume", {"level": 70})
    changed = await asyncio.gather(*(c.event("volume_changed", lambda d: d["volume"] == 70) for c in clients))
    check(len(changed) == 100, "the event reached 100 clients")
    await asyncio.gather(*(c.close() for c in clients))
    ok("100 clients at once: every one answered and every one got the event")


async def tokens():
    """--token: auth by message or header; wrong tokens refused (4401), slowed, and no event before auth."""
    server = serve("token", "--listen", "127.0.0.1:0", "--token", "s3cret-token")
    try:
        c = await Client.connect(server.ws)
        reply = await c.request("status")
        check(reply.get("error_code") == "unauthorized", f"status before auth: {reply}")
        check(await closed_with(c.ws, "a command before auth") == 4401, "a command before auth: 4401")

        good = await Client.connect(server.ws)
        check(await good.result("auth", {"token": "s3cret-token"}) == {"authenticated": True}, "auth")
        waiting = await Client.connect(server.ws)  # connected, not yet authenticated
        await good.result("volume", {"level": 55})
        await good.event("volume_changed")
        reply = await waiting.request("auth", {"token": "s3cret-token"})
        check(reply.get("result") == {"authenticated": True}, f"the first message an unauthenticated client gets is its auth reply: {reply}")
        await good.result("volume", {"level": 60})
        await waiting.event("volume_changed", lambda d: d["volume"] == 60)
        ok("auth by first message; no event before it, every event after it")

        header = await Client.connect(server.ws, extra_headers={"Authorization": "Bearer s3cret-token"})
        await header.result("status")
        ok("Authorization: Bearer on the upgrade")

        t0 = time.monotonic()
        wrong = await asyncio.gather(*(Client.connect(server.ws) for _ in range(3)))
        replies = await asyncio.gather(*(w.request("auth", {"token": "guess%d" % i}) for i, w in enumerate(wrong)))
        elapsed = time.monotonic() - t0
        check(all(r.get("error_code") == "unauthorized" for r in replies), f"wrong tokens: {replies}")
        codes = await asyncio.gather(*(closed_with(w.ws, "a wrong token") for w in wrong))
        check(all(code == 4401 for code in codes), f"wrong tokens: close codes {codes}")
        check(elapsed >= 2.5, f"three wrong tokens at once were all answered within {elapsed:.2f} s (one a second expected)")
        bad_header = await Client.connect(server.ws, extra_headers={"Authorization": "Bearer nope"})
        check(await closed_with(bad_header.ws, "a wrong bearer") == 4401, "a wrong bearer token: 4401")
        ok(f"wrong tokens: unauthorized, 4401, answered one a second ({elapsed:.2f} s for three at once)")
        for client in (good, waiting, header):
            await client.close()
    finally:
        server.stop()


async def generated_token():
    """Beyond loopback without --token: a token is made once (0600 in the state folder) and printed once."""
    server = Server(["serve", "--music-dir", MUSIC, "--database", os.path.join(WORK, "library.sqlite"),
                   "--store", os.path.join(WORK, "offline"), "--state",
                     os.path.join(WORK, "wide", "state.json"), "--mpd-listen", "off", "--output", "null", "--quiet",
                     "--listen", "0.0.0.0:0"])
    try:
        line = server.wait_line("web remote token")
        token = line.rsplit(" ", 1)[1]
        file = os.path.join(WORK, "wide", "web-token")
        check(oct(os.stat(file).st_mode & 0o777) == "0o600", f"{file}: mode {oct(os.stat(file).st_mode & 0o777)}")
        check(open(file).read().strip() == token, "the printed token is the kept one")
        c = await Client.connect(server.ws)
        reply = await c.request("status")
        check(reply.get("error_code") == "unauthorized", f"no token beyond loopback: {reply}")
        c = await Client.connect(server.ws)
        await c.result("auth", {"token": token})
        await c.result("status")
        await c.close()
        port = server.port
    finally:
        server.stop()
    again = Server(["serve", "--music-dir", MUSIC, "--database", os.path.join(WORK, "library.sqlite"),
                   "--store", os.path.join(WORK, "offline"), "--state",
                    os.path.join(WORK, "wide", "state.json"), "--mpd-listen", "off", "--output", "null", "--quiet",
                    "--listen", f"0.0.0.0:{port}"])
    try:
        check(not any(l and "web remote token" in l for l in again.lines), "the token was printed again")
        c = await Client.connect(again.ws)
        await c.result("auth", {"token": token})
        await c.close()
    finally:
        again.stop()
    ok("beyond loopback: a token made once, kept 0600, printed once, required")


async def restart():
    """SIGTERM closes clients with 1001; a new server binds the same port at once."""
    server = serve("restart", "--listen", "127.0.0.1:0")
    port = server.port
    c = await Client.connect(server.ws)
    await c.result("status")
    check(server.stop() == 143, "exit status 143 after SIGTERM")
    check(await closed_with(c.ws, "the server stopping") == 1001, "clients closed with 1001 when the server stops")
    again = serve("restart", "--listen", f"127.0.0.1:{port}")
    try:
        c = await Client.connect(again.ws)
        await c.result("status")
        await c.result("quit")
        check(again.process.wait(TIMEOUT) == 0, "quit: exit status 0")
    finally:
        again.stop()
    ok("restart: 1001 to clients, the same port bound again at once; quit exits 0")


async def tls():
    """--tls-cert/--tls-key: wss and https."""
    cert, key = os.path.join(WORK, "cert.pem"), os.path.join(WORK, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    server = serve("tls", "--listen", "127.0.0.1:0", "--tls-cert", cert, "--tls-key", key)
    try:
        check(server.scheme == "https", "announced as https")
        context = ssl.create_default_context(cafile=cert)
        c = await Client.connect(server.ws, ssl=context)
        await c.result("status")
        await c.close()
        conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=context, timeout=TIMEOUT)
        conn.request("GET", "/")
        check(conn.getresponse().status == 200, "GET / over https")
    finally:
        server.stop()
    bad = subprocess.run([BINARY, "serve", "--music-dir", MUSIC, "--database", os.path.join(WORK, "library.sqlite"),
                   "--store", os.path.join(WORK, "offline"),
                          "--state", "off", "--mpd-listen", "off", "--output", "null", "--listen", "127.0.0.1:0",
                          "--tls-cert", key, "--tls-key", cert], capture_output=True, text=True, timeout=TIMEOUT)
    check(bad.returncode == 1 and "TLS" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1, f"bad TLS files: {bad.returncode} {bad.stderr!r}")
    ok("TLS: wss and https with --tls-cert/--tls-key; unusable files are one error line")


async def plain_player():
    """The plain player with --listen: the same protocol, no library."""
    server = Server(["--listen", "127.0.0.1:0", "--output", "null", "--quiet", os.path.join(MUSIC, "Alpha", "01.flac")])
    try:
        c = await Client.connect(server.ws)
        status = await c.result("status")  # the track started before anyone could connect
        check(status["track"]["title"] == "First Light", f"play --listen: {status}")
        await c.error("library/stats", {}, "unsupported")
        await c.result("quit")
        check(server.process.wait(TIMEOUT) == 0, "quit: exit 0")
    finally:
        server.stop()
    busy = serve("busy", "--listen", "127.0.0.1:0")
    try:
        taken = subprocess.run([BINARY, "--listen", f"127.0.0.1:{busy.port}", "--output", "null", os.path.join(MUSIC, "Alpha", "01.flac")],
                               capture_output=True, text=True, timeout=TIMEOUT)
        check(taken.returncode == 1 and "cannot listen" in taken.stderr, f"a taken port: {taken.returncode} {taken.stderr!r}")
    finally:
        busy.stop()
    ok("play --listen: the protocol without a library; a taken port is one error line, exit 1")


def wait_line_nowait(self, text):
    with self.cond:
        return any(line is not None and text in line for line in self.lines)


Server.wait_line_nowait = wait_line_nowait


async def main():
    # WS_ONLY=stamps,limits runs only those checks of the main server (for iterating).
    only = set(filter(None, os.environ.get("WS_ONLY", "").split(",")))
    make_music(MUSIC)
    server = serve("main", "--listen", "127.0.0.1:0")
    try:
        if only:
            c = await Client.connect(server.ws)
            await wait_library(c)
            await c.close()
        for check_ in (commands, settings, stamps, policy, limits, many):
            if not only or check_.__name__ in only:
                await check_(server)
    finally:
        server.stop()
    if only:
        print("all checks passed (only %s)" % ",".join(sorted(only)), flush=True)
        return
    await tokens()
    await generated_token()
    await restart()
    await tls()
    await plain_player()
    await settings_from_mpd()
    print("all checks passed", flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Failed as failure:
        print(f"ws_protocol_test: FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
