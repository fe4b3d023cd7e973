#!/usr/bin/env python3
"""An HTTP(S) file server on 127.0.0.1 that misbehaves on request.

Serves the files under --root. The query string of a request chooses the
faults (specs/network.md §Tests); a URL without one is served plainly, with
Range support (206) and a Content-Length:

  stall=N        the first response for this URL sends the file up to byte
                 N, then nothing (the connection stays open); later ones
                 are normal
  stallall=N     every response stops at byte N of the file (a response that
                 starts there sends nothing)
  reset=N        every response sends at most N body bytes, then resets the
                 connection (TCP RST)
  refuse=1       every connection is reset before any answer
  never=1        the request is read and never answered
  rate=B         the body is sent at B bytes per second
  norange=1      Range headers are ignored: always 200 and the whole file
  lietotal=1     206 answers declare half the real size as the total; a 200
                 answer declares no length
  status=C       answers status C (and an empty body); `status=503&times=2`
                 does so for the first two requests only
  redirect=N     N redirects (302) before the file; redirect=loop never ends
  icy=N          with `Icy-MetaData: 1`, an ICY answer with a metadata block
                 every N audio bytes: StreamTitle 'Title K' for K = byte // 65536
                 ('NAME - Title K' with icyartist=NAME)
  chunked=1      Transfer-Encoding: chunked, no length (a live stream)
  expire=1       every request for this URL after the first answers 403 (a
                 signed link that expired)
  cutat=N        every response ends (the connection closed cleanly) at byte
                 N of the file, whatever its Content-Length announced
  type=T         Content-Type T instead of application/octet-stream

Every file answer carries an ETag (from the file's size and modification
time: rewriting the file changes it) and a Last-Modified; a Range request
whose If-Range names neither is answered 200 with the whole file, as
RFC 9110 says. noetag=1 leaves both validators out.

Prints the port on stdout, then logs one JSON line per request to --log
(method, path, range, authorization). --tls CERT KEY serves https; its
connections end without a TLS close_notify, as Python's ssl does on close.
"""
import argparse, json, os, signal, socket, ssl, struct, sys, threading, time, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

counts = {}
counts_lock = threading.Lock()


def count(key):
    with counts_lock:
        counts[key] = counts.get(key, 0) + 1
        return counts[key]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    root = "."
    log_file = None

    def log_message(self, *args):
        pass

    def log_request_line(self):
        entry = {"method": self.command, "path": self.path, "range": self.headers.get("Range"),
                 "authorization": self.headers.get("Authorization"), "icy": self.headers.get("Icy-MetaData"),
                 "ifrange": self.headers.get("If-Range")}
        with counts_lock:
            with open(self.log_file, "a") as f:
                f.write(json.dumps(entry) + "\n")

    def reset(self):
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def hang(self):
        while True:
            time.sleep(3600)

    def do_GET(self):
        self.log_request_line()
        parsed = urllib.parse.urlsplit(self.path)
        q = {k: v[-1] for k, v in urllib.parse.parse_qs(parsed.query).items()}
        nth = count(self.path)
        if q.get("refuse"):
            return self.reset()
        if q.get("never"):
            return self.hang()
        if q.get("expire") and nth > 1:
            # A signed link that expired after its first use.
            self.send_response(403)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if "status" in q and nth <= int(q.get("times", "1000000")):
            self.send_response(int(q["status"]))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if "redirect" in q:
            r = q["redirect"]
            if r == "loop" or int(r) > 0:
                rest = dict(q)
                if r != "loop":
                    rest["redirect"] = str(int(r) - 1)
                self.send_response(302)
                self.send_header("Location", parsed.path + "?" + urllib.parse.urlencode(rest))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
        path = os.path.join(self.root, urllib.parse.unquote(parsed.path).lstrip("/"))
        if ".." in parsed.path or not os.path.isfile(path):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        with open(path, "rb") as f:
            data = f.read()
            info = os.fstat(f.fileno())
        size = len(data)
        etag = None if q.get("noetag") else f'"{info.st_size:x}-{info.st_mtime_ns:x}"'
        modified = None if q.get("noetag") else self.date_time_string(int(info.st_mtime))
        start = 0
        ranged = False
        header = self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        if if_range is not None and if_range not in (etag, modified):
            header = None  # the validator changed: the whole new file
        if header and not q.get("norange") and header.startswith("bytes="):
            first = header[6:].split("-")[0]
            start = int(first) if first else 0
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            ranged = True
        icy = int(q["icy"]) if "icy" in q and self.headers.get("Icy-MetaData") == "1" else 0
        if icy:
            self.wfile.write(b"ICY 200 OK\r\nicy-name: Loopback Radio\r\nicy-genre: Test\r\n"
                             b"icy-url: http://example.invalid/\r\nicy-metaint: %d\r\n"
                             b"Content-Type: audio/mpeg\r\n\r\n" % icy)
        else:
            self.send_response(206 if ranged else 200)
            self.send_header("Content-Type", q.get("type", "application/octet-stream"))
            if etag:
                self.send_header("ETag", etag)
                self.send_header("Last-Modified", modified)
            if not q.get("norange"):
                self.send_header("Accept-Ranges", "bytes")
            if q.get("chunked"):
                pass
            elif q.get("lietotal"):
                if ranged:
                    self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size // 2}")
            else:
                if ranged:
                    self.send_header("Content-Range", f"bytes {start}-{size - 1}/{size}")
                self.send_header("Content-Length", str(size - start))
            self.end_headers()
        body = data[start:]
        limit = len(body)
        stall_at = None
        if "stall" in q and nth == 1:
            stall_at = int(q["stall"])
        if "stallall" in q:
            stall_at = int(q["stallall"])
        if stall_at is not None:
            limit = min(limit, max(0, stall_at - start))
        if "cutat" in q:
            limit = min(limit, max(0, int(q["cutat"]) - start))
        reset_at = int(q["reset"]) if "reset" in q else None
        if reset_at is not None:
            limit = min(limit, reset_at)
        rate = int(q["rate"]) if "rate" in q else None
        self.send_body(body[:limit], icy, rate, start, q.get("icyartist"))
        if stall_at is not None and limit < len(body):
            self.wfile.flush()
            self.hang()
        if reset_at is not None and limit < len(body):
            self.wfile.flush()
            return self.reset()

    def send_body(self, body, icy, rate, start, artist=None):
        if icy:
            out = bytearray()
            for i in range(0, len(body), icy):
                block = body[i:i + icy]
                out += block
                if len(block) == icy:
                    title = f"Title {(i + icy) // 65536}"
                    text = f"StreamTitle='{artist + ' - ' if artist else ''}{title}';".encode()
                    n = (len(text) + 15) // 16
                    out += bytes([n]) + text + b"\0" * (n * 16 - len(text))
            body = bytes(out)
        step = 4096 if rate is None else max(1, min(4096, rate // 10))
        for i in range(0, len(body), step):
            try:
                self.wfile.write(body[i:i + step])
            except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
                return
            if rate:
                time.sleep(step / rate)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--root", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--port", type=int, default=0, help="a port of its own (0: a free one)")
    args = parser.parse_args()
    # A test process's threads block most signals, and a child inherits the
    # mask: unblock them, so SIGTERM from the test ends the server.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    Handler.root = args.root
    Handler.log_file = args.log
    open(args.log, "w").close()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    if args.tls:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*args.tls)
        server.socket = context.wrap_socket(server.socket, server_side=True)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
