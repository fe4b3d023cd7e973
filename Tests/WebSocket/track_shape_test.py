#!/usr/bin/python3
"""One track shape for every frontend (specs/control-protocol.md §Events, the
`track` object): the same files queued in the plain player over its Unix
socket (`play --control unix:PATH`, tracks made from the files' tags) and in
`serve` over WebSocket (tracks made from the library's rows) give track
objects with the same members and, once the files have been read, the same
values, member by member; and those values are the files' tags.

    track_shape_test.py HARMONIA_PLAY WORKDIR

The files: Tests/MPD/multi_value_tree.py's (several artists, album artists,
genres in Vorbis comments, ID3v2.4 and 2.3, APEv2 and MP4 atoms), one file
without tags, one with album artists and genres but no artist, one with
untidy text (surrounding spaces, control characters, empty values), one
tagged by ffmpeg. Needs Debian's python3-websockets and python3-mutagen.
Prints each problem, then `N of M replies differ between play and serve; K
have a problem`; exit status 1 when any reply has one (a member that differs
or is missing, a list that is not one, a value that is not the file's).
"""
import asyncio
import json
import os
import re
import subprocess
import sys
import time

import websockets

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "Tests", "MPD"))
sys.dont_write_bytecode = True  # no __pycache__ beside the tests
import multi_value_tree  # noqa: E402
from mutagen.flac import FLAC  # noqa: E402

BINARY, WORK = sys.argv[1], os.path.realpath(sys.argv[2])
MUSIC = os.path.join(WORK, "music")
TIMEOUT = 20

# The members every track object has (queue answers add `offline`, serve adds `uri`).
MEMBERS = {"id", "url", "title", "artist", "artists", "album", "album_artist", "album_artists", "genres", "duration"}
LISTS = ("artists", "album_artists", "genres")

# What the tags say, for files whose every source must agree on it.
EXPECTED = {
    "Multi/01 Together.flac": {"title": "Together", "artists": ["Björk", "Ólafur Arnalds"], "artist": "Björk; Ólafur Arnalds",
                               "album": "Duets", "album_artists": ["Björk"], "album_artist": "Björk",
                               "genres": ["Electronic", "Ambient"]},
    "Multi/04 ID3v2.4.mp3": {"artists": ["Björk", "Ólafur Arnalds"], "album_artists": ["Björk"], "genres": ["Electronic", "Ambient"]},
    "Multi/06 APE.wv": {"artists": ["Björk", "Ólafur Arnalds"], "album_artists": [], "album_artist": None, "genres": ["Electronic", "Ambient"]},
    "Shapes/bare.wav": {"title": None, "artist": None, "artists": [], "album": None, "album_artist": None, "album_artists": [],
                        "genres": []},
    "Shapes/compilation.flac": {"title": None, "artist": None, "artists": [], "album_artists": ["Various Artists"],
                                "album_artist": "Various Artists", "genres": ["Jazz", "Blues"]},
    "Shapes/untidy.flac": {"title": "Spaced Title", "artists": ["Ann", "Bob Band"], "artist": "Ann; Bob Band", "album": "Alb",
                           "genres": ["Rock"]},
    "Shapes/ffmpeg.mp3": {"title": "Made", "artists": ["Fay"], "album_artists": ["Fay & Co"], "genres": ["Pop"]},
}


class Failed(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failed(what)


def make_music():
    """The files, relative paths in queue order."""
    paths = [os.path.relpath(p, MUSIC) for p in multi_value_tree.make(MUSIC, mp4_lists=True)]
    shapes = os.path.join(MUSIC, "Shapes")
    os.makedirs(shapes, exist_ok=True)

    def ffmpeg(*args):
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=f=440:d=1"] + list(args), check=True)
    ffmpeg("-map_metadata", "-1", os.path.join(shapes, "bare.wav"))
    ffmpeg("-metadata", "title=Made", "-metadata", "artist=Fay", "-metadata", "album_artist=Fay & Co", "-metadata", "genre=Pop",
           "-metadata", "track=2/9", os.path.join(shapes, "ffmpeg.mp3"))
    for name, tags in (("compilation.flac", {"ALBUMARTIST": ["Various Artists"], "GENRE": ["Jazz", "Blues"], "ALBUM": ["Mix"]}),
                       ("untidy.flac", {"TITLE": ["  Spaced\tTitle  "], "ARTIST": ["Ann", "  ", "Bob\nBand"],
                                        "GENRE": ["Rock", ""], "ALBUM": [" Alb "]})):
        path = os.path.join(shapes, name)
        ffmpeg("-map_metadata", "-1", path)
        audio = FLAC(path)
        for key, values in tags.items():
            audio[key] = values
        audio.save()
    return paths + ["Shapes/bare.wav", "Shapes/compilation.flac", "Shapes/ffmpeg.mp3", "Shapes/untidy.flac"]


# ---------------------------------------------------------------- clients

class Client:
    """Requests matched to replies by message_id; events kept in order. `send`/`receive` are the transport's."""

    def __init__(self, send, receive):
        self.send, self.receive = send, receive
        self.next_id = 0
        self.events = []

    async def result(self, command, args=None):
        self.next_id += 1
        await self.send(json.dumps({"message_id": self.next_id, "command": command, "args": args or {}}))
        while True:
            message = json.loads(await asyncio.wait_for(self.receive(), TIMEOUT))
            if "event" in message:
                self.events.append((message["event"], message.get("data")))
            elif message.get("message_id") == self.next_id:
                check("result" in message, f"{command} {args}: {message}")
                return message["result"]

    async def event(self, name, where):
        deadline = time.monotonic() + TIMEOUT
        while True:
            for i, (event, data) in enumerate(self.events):
                if event == name and where(data):
                    del self.events[: i + 1]
                    return data
            self.events.clear()
            check(time.monotonic() < deadline, f"no {name} event within {TIMEOUT} s")
            message = json.loads(await asyncio.wait_for(self.receive(), TIMEOUT))
            if "event" in message:
                self.events.append((message["event"], message.get("data")))


def started(command, announce, pattern):
    """The program, and the first group of `pattern` in its stderr line holding `announce`."""
    process = subprocess.Popen([BINARY] + command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
        if announce in line:
            match = re.search(pattern, line)
            check(match, f"no {pattern} in {line!r}")
            return process, match.group(1)
    raise Failed(f"{' '.join(command)} ended without printing {announce!r} (status {process.wait()})")


def stop(process):
    if process.poll() is None:
        process.terminate()
    try:
        process.wait(TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        raise Failed("a player did not exit within 20 s of SIGTERM")


async def replies(client, uris, names):
    """The track objects of one player: each `queue/add` and the `queue/items`
    before any file was opened ("queued"), then each `track_started` and the
    `queue/items` and `status` after every file was played ("read")."""
    queued = [("queue/add", name, (await client.result("queue/add", {"uri": uri}))["track"]) for uri, name in zip(uris, names)]
    items = (await client.result("queue/items"))["items"]
    queued += [("queue/items", name, item) for name, item in zip(names, items)]
    await client.result("repeat", {"mode": "all"})  # the end of the queue never stops it
    await client.result("play")
    read = []
    for index, name in enumerate(names):
        await client.result("jump", {"index": index})
        data = await client.event("track_started", lambda d: d["index"] == index)
        read.append(("track_started", name, data["track"]))
    items = (await client.result("queue/items"))["items"]
    read += [("queue/items", name, item) for name, item in zip(names, items)]
    read.append(("status", names[-1], (await client.result("status"))["track"]))
    await client.result("stop")
    return queued, read


async def play_replies(uris):
    """`harmonia-play play --control unix:PATH`, the files by absolute path."""
    socket_path = os.path.join(WORK, "play.sock")
    process = subprocess.Popen([BINARY, "play", "--control", "unix:" + socket_path, "--output", "null", "--quiet", "--tick", "0",
                                "--no-mpris", "--no-history"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                reader, writer = await asyncio.open_unix_connection(socket_path, limit=4 << 20)
                break
            except OSError:
                check(process.poll() is None and time.monotonic() < deadline, "play --control unix: no socket")
                await asyncio.sleep(0.05)

        async def send(text):
            writer.write(text.encode() + b"\n")
            await writer.drain()
        client = Client(send, reader.readline)
        result = await replies(client, [os.path.join(MUSIC, uri) for uri in uris], uris)
        writer.close()
        return result
    finally:
        stop(process)


async def serve_replies(uris):
    """`harmonia-play serve` over WebSocket, the files by library path."""
    process, port = started(["serve", "--music-dir", MUSIC, "--database", os.path.join(WORK, "library.sqlite"),
                             "--store", os.path.join(WORK, "offline"), "--state", "off", "--mpd-listen", "off",
                             "--output", "null", "--quiet", "--no-history", "--listen", "127.0.0.1:0"],
                            "web remote on ", r"://[^ ]+:(\d+)/")
    try:
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=4 << 20) as ws:
            client = Client(ws.send, ws.recv)
            deadline = time.monotonic() + TIMEOUT
            while True:
                stats = await client.result("library/stats")
                if stats["songs"] == len(uris) and stats["last_update"] is not None:
                    break
                check(time.monotonic() < deadline, f"the library has {stats['songs']} songs, not {len(uris)}")
                await asyncio.sleep(0.1)
            return await replies(client, uris, uris)
    finally:
        stop(process)


# ---------------------------------------------------------------- the comparison

def shape_problems(track, where):
    """What is wrong with one track object's members and their types."""
    problems = []
    missing = MEMBERS - set(track)
    if missing:
        problems.append(f"{where}: no {sorted(missing)}")
    for name in LISTS:
        if name in track and not (isinstance(track[name], list) and all(isinstance(v, str) for v in track[name])):
            problems.append(f"{where}: {name} is not a list of strings: {track[name]!r}")
    for name, joined in (("artists", "artist"), ("album_artists", "album_artist")):
        if isinstance(track.get(name), list) and joined in track:
            want = "; ".join(track[name]) if track[name] else None
            if track[joined] != want:
                problems.append(f"{where}: {joined} {track[joined]!r} is not {name} joined ({want!r})")
    return problems


def compare(play, serve, same_values):
    """For each pair of replies: whether play's and serve's track objects
    differ (members, or with `same_values` their values too), and every
    problem found (differences, wrong shapes, values that are not the file's)."""
    results = []
    for (what, uri, mine), (_, _, theirs) in zip(play, serve):
        where = f"{what} {uri}"
        members = (set(mine) | set(theirs)) - {"id", "uri"}  # `uri` is serve's alone (its music folder)
        if same_values:
            differences = [f"{where}: {name}: play {mine.get(name, '<none>')!r}, serve {theirs.get(name, '<none>')!r}"
                           for name in sorted(members) if mine.get(name, "<none>") != theirs.get(name, "<none>")]
        else:
            differences = [f"{where}: {name} in one only" for name in sorted(members) if (name in mine) != (name in theirs)]
        problems = differences + shape_problems(mine, "play: " + where) + shape_problems(theirs, "serve: " + where)
        if theirs.get("uri") != uri:
            problems.append(f"serve: {where}: uri {theirs.get('uri')!r}")
        for name, value in EXPECTED.get(uri, {}).items() if same_values else ():
            for player, track in (("play", mine), ("serve", theirs)):
                if track.get(name, "<none>") != value:
                    problems.append(f"{player}: {where}: {name} is {track.get(name, '<none>')!r}, the file says {value!r}")
        results.append((bool(differences), problems))
    return results


async def main():
    uris = make_music()
    play_queued, play_read = await play_replies(uris)
    serve_queued, serve_read = await serve_replies(uris)
    check(len(play_queued) == len(serve_queued) and len(play_read) == len(serve_read), "not as many replies from each")
    # Before a file is read, `play` knows only its URL (its tag members are
    # null or []): the members are the same. Once read, the values are too.
    results = compare(play_queued, serve_queued, same_values=False) + compare(play_read, serve_read, same_values=True)
    for _, problems in results:
        for problem in problems:
            print(problem, flush=True)
    differ = sum(1 for differs, _ in results if differs)
    wrong = sum(1 for _, problems in results if problems)
    print(f"{differ} of {len(results)} replies differ between play and serve; {wrong} have a problem ({len(uris)} files)", flush=True)
    check(wrong == 0, f"{wrong} of {len(results)} replies have a problem, {differ} differ between play and serve")
    print("all checks passed", flush=True)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except Failed as failure:
        print(f"track_shape_test: FAILED: {failure}", file=sys.stderr)
        sys.exit(1)
