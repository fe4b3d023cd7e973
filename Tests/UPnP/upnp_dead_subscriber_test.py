#!/usr/bin/env python3
"""A GENA subscriber that never answers delays no one (specs/upnp.md §Eventing).

Usage: upnp_dead_subscriber_test.py HARMONIA_PLAY

`harmonia-play serve --upnp` on 127.0.0.1 (no SSDP) with two subscribers:
a healthy control point (async-upnp-client's DmrDevice, as Home Assistant
runs it) and a dead one, whose callback accepts TCP and never answers (a
phone that sleeps). While the dead one's NOTIFYs hang, the healthy one must
hear PAUSED_PLAYBACK, PLAYING and a volume within 1 s of each action; the
dead one has one NOTIFY in flight per subscription, is dropped after its
answer timeout (5 s), is sent nothing more, and its SID is then unknown
(412). Every wait is for a condition, bounded in time. Prints one
line per check and 'N passed, 0 failed'.
"""
import asyncio
import os
import shutil
import sys
import tempfile
import time

from async_upnp_client.aiohttp import AiohttpNotifyServer, AiohttpRequester
from async_upnp_client.client_factory import UpnpFactory
from async_upnp_client.profiles.dlna import DmrDevice, TransportState
from upnp_test_support import check, gena, run_checks, serve_files, sine_wav, start_renderer, until

#: How late the healthy subscriber may hear a change (the spec: within 1 s).
LATE = 1.0
#: The renderer's answer timeout for a NOTIFY (specs/upnp.md §Eventing).
ANSWER_TIMEOUT = 5.0


class DeadCallback:
    """A callback server on 127.0.0.1 that accepts each connection, reads
    what comes and never answers; it notes when each was opened and closed."""

    def __init__(self):
        self.opened = []
        self.closed = []
        self.changed = asyncio.Event()

    async def start(self):
        self.server = await asyncio.start_server(self.hold, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]

    async def hold(self, reader, writer):
        self.opened.append(time.monotonic())
        self.changed.set()
        while await reader.read(4096):
            pass
        self.closed.append(time.monotonic())
        self.changed.set()
        writer.close()

    async def wait(self, predicate, timeout):
        """True once `predicate()` holds, False after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while not predicate():
            self.changed.clear()
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except asyncio.TimeoutError:
                pass
        return True

    def stop(self):
        self.server.close()


async def heard_within(dmr, action, predicate, what):
    """Runs `action()`, waits (at most 10 s) for the event that makes
    `predicate()` true, and returns how long after the action it came."""
    started = time.monotonic()
    await action()
    await until(dmr, predicate, what, timeout=10, poll=False)
    return time.monotonic() - started


async def main(binary):
    work = tempfile.mkdtemp(prefix="harmonia-upnp-dead-")
    served = os.path.join(work, "served")
    os.makedirs(served)
    sine_wav(os.path.join(served, "long.wav"), 30)
    files, files_base = serve_files(served, os.path.join(work, "files.log"))
    renderer = start_renderer(binary, work, None, files)
    requester = AiohttpRequester()
    notify_server = AiohttpNotifyServer(requester, source=("127.0.0.1", 0))
    dead = DeadCallback()
    await dead.start()
    try:
        device = await UpnpFactory(requester).async_create_device(renderer.location)
        await notify_server.async_start_server()
        dmr = DmrDevice(device, notify_server.event_handler)
        await dmr.async_subscribe_services(auto_resubscribe=False)
        url = files_base + "/long.wav"
        await dmr.async_set_transport_uri(url, "Sine", None)
        await until(dmr, lambda: dmr.transport_state == TransportState.STOPPED and dmr.current_track_uri == url,
                    "STOPPED with the URI", poll=False)
        alone = await heard_within(dmr, dmr.async_play, lambda: dmr.transport_state == TransportState.PLAYING, "PLAYING")
        check(alone < LATE, f"one subscriber: PLAYING heard {alone:.2f} s after Play")

        services = ("AVTransport", "RenderingControl")
        sids = []
        for service in services:
            status, fields = gena(renderer.location, "SUBSCRIBE", service, callback=f"<http://127.0.0.1:{dead.port}/dead>",
                                  nt="upnp:event", timeout="Second-300")
            check(status == "200", f"a dead subscriber to {service}: 200")
            sids.append(fields["sid"])
        check(await dead.wait(lambda: len(dead.opened) == len(services), 10),
              "the dead subscriber's initial events are connected and left unanswered")

        late = {}
        late["PAUSED_PLAYBACK"] = await heard_within(dmr, dmr.async_pause,
                                                     lambda: dmr.transport_state == TransportState.PAUSED_PLAYBACK, "PAUSED_PLAYBACK")
        late["PLAYING"] = await heard_within(dmr, dmr.async_play, lambda: dmr.transport_state == TransportState.PLAYING, "PLAYING")
        late["Volume 30"] = await heard_within(dmr, lambda: dmr.async_set_volume_level(0.3),
                                               lambda: dmr.volume_level is not None and abs(dmr.volume_level - 0.3) < 0.011, "Volume 30")
        still_hanging, opened = len(dead.closed) == 0, len(dead.opened)
        for what, seconds in late.items():
            check(seconds < LATE, f"with a dead subscriber: {what} heard {seconds:.2f} s after the action")
        check(still_hanging, "those changes were heard while the dead subscriber's NOTIFYs still hung")
        check(opened == len(services), f"one NOTIFY in flight per subscription: the dead one got no other ({opened} connections)")

        check(await dead.wait(lambda: len(dead.closed) == len(services), ANSWER_TIMEOUT + 5),
              "the dead subscriber's connections are closed by the renderer")
        waited = [closed - opened for opened, closed in zip(dead.opened, dead.closed)]
        # Bounds with room for a loaded machine: our accept may be seen late
        # (shorter), the close noticed late (longer); dropping at once or
        # never would still fail.
        check(all(ANSWER_TIMEOUT - 1 <= w <= ANSWER_TIMEOUT + 3 for w in waited),
              f"closed after the answer timeout ({', '.join(f'{w:.2f}' for w in waited)} s)")
        for service, sid in zip(services, sids):
            status, _ = gena(renderer.location, "SUBSCRIBE", service, sid=sid, timeout="Second-300")
            check(status == "412", f"the dead subscriber to {service} is dropped: its renewal is 412")
        after = await heard_within(dmr, dmr.async_pause, lambda: dmr.transport_state == TransportState.PAUSED_PLAYBACK, "PAUSED_PLAYBACK")
        check(after < LATE, f"after the drop: PAUSED_PLAYBACK heard {after:.2f} s after Pause")
        check(len(dead.opened) == len(services), "the dropped subscriber is sent nothing more")
        await dmr.async_unsubscribe_services()
    finally:
        dead.stop()
        renderer.stop()
        await notify_server.async_stop_server()
        files.terminate()
        files.wait()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    run_checks(lambda: main(sys.argv[1]))
