"""ws_protocol_test.py's `stamps` check (specs/application.md §Event stamps),
and the loopback HTTP server it holds the player's main loop with.

An `info` of the held server's URL holds the player's main loop (the tag
reader waits for the answer), so the check keeps an event posted but not yet
shown for as long as it needs, without sleeping. Every wait is bounded; the
answer is a 404, so the `info` ends with an error reply.
"""
import asyncio
import json
import socket
import threading


class HeldHTTP:
    """Answers each request once `release` is released (bounded by `timeout`)."""

    def __init__(self, timeout):
        self.timeout = timeout
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.arrived = threading.Semaphore(0)
        self.release = threading.Semaphore(0)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return  # closed
            conn.settimeout(self.timeout)
            try:
                conn.recv(65536)
                self.arrived.release()
                self.release.acquire(timeout=self.timeout)
                conn.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            except OSError:
                pass
            conn.close()

    async def wait_arrived(self):
        """True once a request has arrived (the player's main loop is waiting for its answer)."""
        return await asyncio.get_running_loop().run_in_executor(None, self.arrived.acquire, True, self.timeout)

    def close(self):
        self.listener.close()


async def stamps(server, Client, check, ok, TIMEOUT):
    """A client connecting after a change does not get that change's event, only later ones
    (specs/application.md §Event stamps). Made deterministic with the held HTTP server: the
    main loop is held (C's `info`) while B's queue/add runs, and again (D's `info`) before its
    event is shown; A connects and is authenticated (answered off the main loop) in between;
    then the event is shown, and B changes the volume: the first event A gets is volume_changed."""
    held = HeldHTTP(TIMEOUT)
    url = f"http://127.0.0.1:{held.port}/held.flac"
    b, c, d = [await Client.connect(server.ws) for _ in range(3)]
    c_info = asyncio.ensure_future(c.request("info", {"uri": url}))
    check(await held.wait_arrived(), "the player did not ask the held HTTP server")  # the main loop is in C's info
    b_add = asyncio.ensure_future(b.result("queue/add", {"uri": "Alpha"}))
    await asyncio.sleep(0)                          # (sent before D's; both wait for the main loop)
    await asyncio.wait_for(b.ws.ping(), TIMEOUT)    # B's request is read by the server before D's is sent
    d_info = asyncio.ensure_future(d.request("info", {"uri": url}))
    await asyncio.wait_for(d.ws.ping(), TIMEOUT)
    held.release.release()                          # C's info ends; B's add runs and posts queue_changed
    await asyncio.wait_for(b_add, TIMEOUT)
    check(await held.wait_arrived(), "the player did not ask the held HTTP server")  # in D's info: queue_changed not shown yet
    a = await Client.connect(server.ws)
    check(await a.result("auth", {"token": "none needed"}) == {"authenticated": True}, "auth")  # answered off the main loop: A is registered
    held.release.release()                          # D's info ends; queue_changed is shown
    await asyncio.wait_for(c_info, TIMEOUT)
    await asyncio.wait_for(d_info, TIMEOUT)
    await b.result("volume", {"level": 45})
    seen = [name for name, _ in a.events]
    while "volume_changed" not in seen:
        message = json.loads(await asyncio.wait_for(a.ws.recv(), TIMEOUT))
        if "event" in message:
            seen.append(message["event"])
    check(seen == ["volume_changed"], f"a client connected after queue/add (its event not yet shown) got {seen}")
    held.close()
    for client in (a, c, d):
        await client.close()
    await b.result("queue/clear")
    await b.close()
    ok("a client connecting after a change, before its event is shown, gets only the events of later changes")
