#!/usr/bin/env python3
"""A ListenBrainz stand-in for the tests: POST /1/submit-listens on loopback.

specs/listens.md §Tests. It checks what the API documents
(listenbrainz.readthedocs.io: "Core API", "JSON documentation"):
the token (Authorization: Token ...), the listen types (single: exactly one
listen; playing_now: one, without listened_at; import: 1 to
MAX_LISTENS_PER_REQUEST), MAX_LISTEN_PAYLOAD_SIZE, MAX_LISTEN_SIZE per listen,
listened_at >= LISTEN_MINIMUM_TS, artist_name and track_name, the MBIDs as
UUIDs, artist_mbids a list, duration_ms an integer up to
MAX_DURATION_MS_LIMIT, MAX_TAGS_PER_LISTEN and MAX_TAG_SIZE. A refusal is a
400 with {"code": 400, "error": message}, as the service answers.

It prints its port on the first stdout line, then takes commands on stdin,
one per line, each answered "ok" on stdout:
  status CODE N [NAME=VALUE]  the next N submits answered CODE (with the header)
  hang N      the next N submits are read, not recorded, never answered
  drop N      the next N submits are recorded as accepted, never answered
Every request is a JSON line in --requests (time, listen_type, count, status,
body); every listen accepted (answered 200, or dropped after recording) a JSON
line in --accepted, with the time and the listen_type.
"""
import argparse
import json
import os
import signal
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_LISTEN_SIZE = 10240
MAX_LISTENS_PER_REQUEST = 1000
MAX_LISTEN_PAYLOAD_SIZE = MAX_LISTEN_SIZE * MAX_LISTENS_PER_REQUEST
MAX_DURATION_MS_LIMIT = 24 * 24 * 60 * 60 * 1000
MAX_TAGS_PER_LISTEN = 50
MAX_TAG_SIZE = 64
LISTEN_MINIMUM_TS = 1033430400

lock = threading.Lock()
faults = []          # [kind, remaining, extra]
forever = threading.Event()


class Invalid(Exception):
    pass


def is_uuid(value):
    try:
        uuid.UUID(str(value))
        return True
    except ValueError:
        return False


def validate_listen(listen, listen_type):
    if not isinstance(listen, dict):
        raise Invalid("Listen is not a JSON object.")
    if len(json.dumps(listen).encode()) > MAX_LISTEN_SIZE:
        raise Invalid("Listen size exceeds max size of %d bytes." % MAX_LISTEN_SIZE)
    if listen_type == "playing_now":
        if "listened_at" in listen:
            raise Invalid("JSON document must not contain listened_at while submitting playing_now.")
    else:
        at = listen.get("listened_at")
        if not isinstance(at, int) or isinstance(at, bool):
            raise Invalid("JSON document must contain the key listened_at, an integer.")
        if at < LISTEN_MINIMUM_TS:
            raise Invalid("Value for key listened_at is too low. listened_at timestamp should be greater than %d." % LISTEN_MINIMUM_TS)
    meta = listen.get("track_metadata")
    if not isinstance(meta, dict):
        raise Invalid("JSON document must contain the key track_metadata at top level.")
    for key in ("artist_name", "track_name"):
        if not isinstance(meta.get(key), str) or not meta[key].strip():
            raise Invalid("JSON document does not contain required track_metadata.%s." % key)
    if "release_name" in meta and not isinstance(meta["release_name"], str):
        raise Invalid("track_metadata.release_name must be a string.")
    info = meta.get("additional_info", {})
    if not isinstance(info, dict):
        raise Invalid("track_metadata.additional_info must be an object.")
    if "duration_ms" in info:
        d = info["duration_ms"]
        if not isinstance(d, int) or isinstance(d, bool) or d < 0 or d > MAX_DURATION_MS_LIMIT:
            raise Invalid("additional_info.duration_ms must be a non-negative integer up to %d." % MAX_DURATION_MS_LIMIT)
    for key in ("recording_mbid", "release_mbid"):
        if key in info and not is_uuid(info[key]):
            raise Invalid("%s MBID format invalid." % key)
    if "artist_mbids" in info:
        if not isinstance(info["artist_mbids"], list) or not all(is_uuid(m) for m in info["artist_mbids"]):
            raise Invalid("artist_mbids must be a list of MBIDs.")
    tags = info.get("tags", [])
    if len(tags) > MAX_TAGS_PER_LISTEN or any(len(str(t)) > MAX_TAG_SIZE for t in tags):
        raise Invalid("Too many tags, or a tag too long.")


def validate(body):
    if len(body) > MAX_LISTEN_PAYLOAD_SIZE:
        raise Invalid("Payload too large.")
    try:
        data = json.loads(body)
    except ValueError:
        raise Invalid("Cannot parse JSON document.")
    if not isinstance(data, dict) or not isinstance(data.get("payload"), list) or len(data["payload"]) == 0:
        raise Invalid("JSON document must contain a non-empty payload list.")
    listen_type = data.get("listen_type")
    if listen_type not in ("single", "playing_now", "import"):
        raise Invalid("JSON document has invalid listen type.")
    count = len(data["payload"])
    if listen_type in ("single", "playing_now") and count != 1:
        raise Invalid("JSON document should contain exactly one listen for this listen type.")
    if count > MAX_LISTENS_PER_REQUEST:
        raise Invalid("Too many listens. You may not submit more than %d listens at once." % MAX_LISTENS_PER_REQUEST)
    for listen in data["payload"]:
        validate_listen(listen, listen_type)
    return data


def take_fault():
    with lock:
        for fault in faults:
            if fault[1] > 0:
                fault[1] -= 1
                return fault
    return None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, code, obj, headers=()):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def log(self, entry):
        with lock, open(self.server.requests_log, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def record(self, data):
        with lock, open(self.server.accepted_log, "a") as f:
            for listen in data["payload"]:
                if data["listen_type"] != "playing_now":
                    f.write(json.dumps({"time": time.time(), "listen_type": data["listen_type"], "listen": listen}) + "\n")

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length > 0 else b""
        entry = {"time": time.time(), "path": self.path, "body": body.decode("utf-8", "replace")}
        if self.path != "/1/submit-listens":
            entry["status"] = 404
            self.log(entry)
            return self.answer(404, {"code": 404, "error": "Not found"})
        if self.headers.get("Authorization") != "Token " + self.server.token:
            entry["status"] = 401
            self.log(entry)
            return self.answer(401, {"code": 401, "error": "Invalid authorization token."})
        try:
            data = validate(body)
        except Invalid as error:
            entry["status"] = 400
            entry["error"] = str(error)
            self.log(entry)
            return self.answer(400, {"code": 400, "error": str(error)})
        entry["listen_type"] = data["listen_type"]
        entry["count"] = len(data["payload"])
        fault = take_fault()
        if fault and fault[0] == "hang":
            entry["status"] = "hang"
            self.log(entry)
            forever.wait()
            return
        if fault and fault[0] == "drop":
            self.record(data)
            entry["status"] = "drop"
            self.log(entry)
            forever.wait()
            return
        if fault and fault[0] == "status":
            code, headers = fault[2]
            entry["status"] = code
            self.log(entry)
            return self.answer(code, {"code": code, "error": "injected %d" % code}, headers)
        self.record(data)
        entry["status"] = 200
        self.log(entry)
        self.answer(200, {"status": "ok"})


def commands():
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        with lock:
            if words[0] == "status":
                headers = [tuple(w.split("=", 1)) for w in words[3:]]
                faults.append(["status", int(words[2]), (int(words[1]), headers)])
            elif words[0] in ("hang", "drop"):
                faults.append([words[0], int(words[1]), None])
        print("ok", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--token", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--requests", required=True)
    parser.add_argument("--accepted", required=True)
    args = parser.parse_args()
    # The test process may start us with SIGTERM blocked or ignored (both are
    # inherited): take it, and stop at once, mid-request too.
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM])
    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer.daemon_threads = True
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.token = args.token
    server.requests_log = args.requests
    server.accepted_log = args.accepted
    print(server.server_address[1], flush=True)
    threading.Thread(target=commands, daemon=True).start()
    server.serve_forever()


if __name__ == "__main__":
    main()
