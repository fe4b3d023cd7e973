#!/usr/bin/python3
"""Records exactly what a snapserver serves: a Snapcast client speaking the
binary stream protocol (0.26, protocol version 2), for the 'pcm' codec.

    snapcast_recorder.py HOST PORT PCM_FILE [--reconnect]

Appends every Wire Chunk's payload (the PCM as served) to PCM_FILE and prints
one line per event on stdout, flushed:

    settings {"bufferMs":1000,...}     the Server Settings message
    codec pcm RATE BITS CHANNELS       the Codec Header (from its RIFF header)
    chunk SEC USEC BYTES OFFSET MONO   a Wire Chunk: its timestamp (server time,
                                       snapserver's steady clock), its size, where
                                       it starts in PCM_FILE, and time.monotonic()
                                       when it arrived
    disconnected REASON                the server went away

With --reconnect it connects again every 0.2 s after a disconnection;
otherwise it exits. Needs nothing but the standard library.
"""
import json
import signal
import socket
import struct
import sys
import time

HEADER = struct.Struct("<HHHiiiiI")  # type, id, refersTo, sent, received, size
CODEC_HEADER, WIRE_CHUNK, SERVER_SETTINGS, TIME, HELLO = 1, 2, 3, 4, 5


def say(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def read_exact(sock, count):
    data = bytearray()
    while len(data) < count:
        part = sock.recv(count - len(data))
        if not part:
            raise ConnectionError("end of stream")
        data += part
    return bytes(data)


def message(kind, payload, ident=0):
    now = time.time()
    sec, usec = int(now), int((now - int(now)) * 1e6)
    return HEADER.pack(kind, ident, 0, sec, usec, 0, 0, len(payload)) + payload


def hello():
    body = json.dumps({
        "Arch": "x86_64", "ClientName": "harmonia-recorder", "HostName": "recorder",
        "ID": "harmonia-recorder", "Instance": 1, "MAC": "00:00:00:00:00:00", "OS": "Linux",
        "SnapStreamProtocolVersion": 2, "Version": "0.26.0",
    }).encode()
    return message(HELLO, struct.pack("<I", len(body)) + body)


def session(host, port, out):
    sock = socket.create_connection((host, port), timeout=5)
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(hello())
    ident = 1
    last_time = 0.0
    try:
        while True:
            kind, _, _, _, _, _, _, size = HEADER.unpack(read_exact(sock, HEADER.size))
            payload = read_exact(sock, size)
            if kind == SERVER_SETTINGS:
                (length,) = struct.unpack_from("<I", payload)
                say("settings " + payload[4:4 + length].decode())
            elif kind == CODEC_HEADER:
                (name_length,) = struct.unpack_from("<I", payload)
                name = payload[4:4 + name_length].decode()
                (header_length,) = struct.unpack_from("<I", payload, 4 + name_length)
                header = payload[8 + name_length:8 + name_length + header_length]
                if name == "pcm" and header[:4] == b"RIFF":
                    channels, rate = struct.unpack_from("<HI", header, 22)
                    (bits,) = struct.unpack_from("<H", header, 34)
                    say("codec pcm %d %d %d" % (rate, bits, channels))
                else:
                    say("codec " + name)
            elif kind == WIRE_CHUNK:
                sec, usec, length = struct.unpack_from("<iiI", payload)
                offset = out.tell()
                out.write(payload[12:12 + length])
                out.flush()
                say("chunk %d %d %d %d %.6f" % (sec, usec, length, offset, time.monotonic()))
            # A Time request now and then, as snapclient sends, keeps the session usual.
            if time.monotonic() - last_time > 1:
                last_time = time.monotonic()
                sock.sendall(message(TIME, struct.pack("<ii", 0, 0), ident))
                ident += 1
    finally:
        sock.close()


def main():
    # A child inherits its spawner's signal mask (the test runner's threads
    # block most signals): unblock them, so SIGTERM from the test ends it.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    reconnect = "--reconnect" in sys.argv[4:]
    with open(path, "ab") as out:
        while True:
            try:
                session(host, port, out)
            except (OSError, ConnectionError) as error:
                say("disconnected %s" % error)
            if not reconnect:
                return
            time.sleep(0.2)


if __name__ == "__main__":
    main()
