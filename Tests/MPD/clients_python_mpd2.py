#!/usr/bin/python3
"""python-mpd2 (Debian's python3-mpd) driving `harmonia-play serve` on
127.0.0.1:PORT: the calls a Python client makes, with checks. Exit 0 when
every check holds; the first failure is printed and exits 1. Bounded: every
socket operation has a 10 s timeout."""
import sys
import threading

import mpd


def main(port):
    client = mpd.MPDClient()
    client.timeout = 10
    client.connect("127.0.0.1", port)
    watcher = mpd.MPDClient()
    watcher.timeout = 10
    watcher.connect("127.0.0.1", port)

    client.clear()
    songs = client.find("(Artist == 'Harmonia Artist')")
    # MPD's order: album, disc (a song without one first), track, file name.
    assert [s["title"] for s in songs] == ["Quote's \"Song\" \\ back", "Opening"], songs
    client.add("Harmonia Artist/First Album")
    song_id = client.addid("loose/untagged.wav", 0)
    queue = client.playlistinfo()
    assert [q["file"] for q in queue] == ["loose/untagged.wav", "Harmonia Artist/First Album/02 Quote's \"Song\".ogg",
                                          "Harmonia Artist/First Album/01 Opening.flac"], queue
    assert queue[0]["id"] == song_id

    # idle wakes for the player; the reply names the subsystem.
    seen = []
    waiter = threading.Thread(target=lambda: seen.append(watcher.idle("player")))
    waiter.start()
    client.playid(song_id)
    waiter.join(10)
    assert seen == [["player"]], seen
    status = client.status()
    assert status["state"] == "play" and status["songid"] == song_id, status

    client.pause(1)
    client.seekcur("0.5")
    assert float(client.status()["elapsed"]) == 0.5, client.status()
    client.setvol(25)
    assert client.status()["volume"] == "25"
    client.random(1)
    client.consume(1)
    status = client.status()
    assert status["random"] == "1" and status["consume"] == "1", status
    client.random(0)
    client.consume(0)

    client.moveid(song_id, 2)
    assert client.playlistid(song_id)[0]["pos"] == "2"
    client.deleteid(song_id)
    assert len(client.playlistinfo()) == 2
    try:
        client.deleteid(song_id)
        raise AssertionError("deleteid of a gone id succeeded")
    except mpd.CommandError as error:
        assert "No such song" in str(error), error
    client.stop()
    assert client.status()["state"] == "stop"
    client.close()
    watcher.close()


if __name__ == "__main__":
    try:
        main(int(sys.argv[1]))
    except AssertionError as error:
        print(f"check failed: {error}")
        sys.exit(1)
