#!/usr/bin/env python3
"""harmonia-play serve --upnp, driven by async-upnp-client (the library Home
Assistant and Music Assistant use) as the control point (specs/upnp.md §Tests).

Usage: upnp_renderer_test.py HARMONIA_PLAY

Everything stays on loopback: the fixtures are served by
Tests/Network/fault_server.py on 127.0.0.1, the renderer listens on
127.0.0.1 with SSDP on a free port of its own (multicast on lo), and the
control point's event server is on 127.0.0.1. Every wait is for a
condition (an event, a polled value, a line), bounded in time; none sleeps
for a fixed while. Prints one line per check and 'N passed, 0 failed'.
"""
import asyncio
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from async_upnp_client.aiohttp import AiohttpNotifyServer, AiohttpRequester
from async_upnp_client.client import UpnpStateVariable
from async_upnp_client.client_factory import UpnpFactory
from async_upnp_client.exceptions import UpnpActionError
from async_upnp_client.profiles.dlna import DmrDevice, TransportState
from async_upnp_client.search import async_search
from upnp_test_support import Renderer, check, gena, run_checks, serve_files, sine_wav, start_renderer, until

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "Tests", "Fixtures")
GROUP = "239.255.255.250"
DEVICE_TYPE = "urn:schemas-upnp-org:device:MediaRenderer:1"
AVT = "urn:schemas-upnp-org:service:AVTransport:1"


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SSDPWatcher:
    """A socket joined to the SSDP group on lo: the renderer's NOTIFYs."""

    def __init__(self, port):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        self.sock.bind(("0.0.0.0", port))
        mreq = socket.inet_aton(GROUP) + socket.inet_aton("127.0.0.1")
        self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, mreq)
        self.sock.setblocking(False)

    async def wait_for(self, nts, usn, timeout=10):
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                data = await asyncio.wait_for(loop.sock_recv(self.sock, 4096), deadline - time.monotonic())
            except asyncio.TimeoutError:
                break
            text = data.decode("utf-8", "replace")
            if f"NTS: {nts}" in text and f"USN: {usn}\r\n" in text:
                return text
        return None


def soap(url, action, body_inner, service=AVT, header_action=None, raw_body=None):
    body = raw_body or (
        '<?xml version="1.0"?><s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/" '
        's:encodingStyle="http://schemas.xmlsoap.org/soap/encoding/"><s:Body>'
        f'<u:{action} xmlns:u="{service}">{body_inner}</u:{action}></s:Body></s:Envelope>')
    request = urllib.request.Request(url, data=body.encode(), method="POST", headers={
        "Content-Type": 'text/xml; charset="utf-8"', "SOAPACTION": f'"{service}#{header_action or action}"'})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def subscribe(location, callback_port):
    return gena(location, "SUBSCRIBE", "AVTransport", callback=f"<http://127.0.0.1:{callback_port}/dead>",
                nt="upnp:event", timeout="Second-300")[0]


async def seq_numbering(location, control):
    """A subscriber of our own: SEQ 0 (the initial event), 1, 2, … in order,
    each a LastChange with the change; renewal and unsubscription."""
    received = []
    arrived = asyncio.Event()

    async def handle(reader, writer):
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        fields = {k.lower(): v for k, _, v in (line.partition(": ") for line in head.split("\r\n")[1:]) if v}
        body = (await reader.readexactly(int(fields.get("content-length", "0")))).decode()
        received.append((int(fields["seq"]), fields["nts"], body))
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        writer.close()
        arrived.set()

    async def next_event(count):
        deadline = time.monotonic() + 10
        while len(received) < count and time.monotonic() < deadline:
            arrived.clear()
            try:
                await asyncio.wait_for(arrived.wait(), deadline - time.monotonic())
            except asyncio.TimeoutError:
                break
        check(len(received) >= count, f"GENA: event {count - 1} arrived")

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    status, fields = gena(location, "SUBSCRIBE", "RenderingControl", callback=f"<http://127.0.0.1:{port}/rc>",
                          nt="upnp:event", timeout="Second-120")
    check(status == "200" and fields.get("sid", "").startswith("uuid:") and fields.get("timeout") == "Second-120",
          "SUBSCRIBE: 200 with SID and TIMEOUT")
    sid = fields["sid"]
    await next_event(1)
    for n, volume in enumerate((21, 22, 23), start=2):
        soap(control, "SetVolume", f"<InstanceID>0</InstanceID><Channel>Master</Channel><DesiredVolume>{volume}</DesiredVolume>",
             service="urn:schemas-upnp-org:service:RenderingControl:1")
        await next_event(n)
    check([seq for seq, _, _ in received] == [0, 1, 2, 3] and all(nts == "upnp:propchange" for _, nts, _ in received),
          "SEQ counts 0, 1, 2, 3 for one subscription")
    check("&lt;Volume channel=&quot;Master&quot; val=&quot;23&quot;/&gt;" in received[-1][2], "the last LastChange carries Volume 23, escaped")
    check(gena(location, "SUBSCRIBE", "RenderingControl", sid=sid, timeout="Second-300")[0] == "200", "renewal with SID: 200")
    check(gena(location, "SUBSCRIBE", "RenderingControl", sid="uuid:nobody")[0] == "412", "renewal of an unknown SID: 412")
    check(gena(location, "SUBSCRIBE", "RenderingControl", sid=sid, nt="upnp:event")[0] == "400", "SID with NT: 400")
    check(gena(location, "SUBSCRIBE", "RenderingControl", callback="<http://192.0.2.1:80/x>", nt="upnp:event")[0] == "412",
          "a CALLBACK to another host than the subscriber's: 412")
    check(gena(location, "UNSUBSCRIBE", "RenderingControl", sid=sid)[0] == "200", "UNSUBSCRIBE: 200")
    server.close()


async def main(binary):
    work = tempfile.mkdtemp(prefix="harmonia-upnp-")
    served = os.path.join(work, "served")
    os.makedirs(served)
    sine_wav(os.path.join(served, "long.wav"), 30)
    shutil.copy(os.path.join(served, "long.wav"), os.path.join(served, "long2.wav"))
    for part in ("flac_part1.flac", "flac_part2.flac"):
        shutil.copy(os.path.join(FIXTURES, "gapless", part), served)
    files, files_base = serve_files(served, os.path.join(work, "files.log"))
    ssdp_port = free_udp_port()
    watcher = SSDPWatcher(ssdp_port)
    renderer = start_renderer(binary, work, ssdp_port, files)
    requester = AiohttpRequester()
    notify_server = AiohttpNotifyServer(requester, source=("127.0.0.1", 0))
    try:
        udn = "uuid:" + renderer.uuid
        check(await watcher.wait_for("ssdp:alive", udn + "::" + DEVICE_TYPE) is not None, "SSDP: NOTIFY ssdp:alive for the device type on start")

        # Discovery: M-SEARCH on lo, answered with the description's LOCATION.
        found = []

        async def on_response(headers):
            found.append(headers)

        await async_search(on_response, timeout=2, search_target=DEVICE_TYPE, source=("127.0.0.1", 0), target=(GROUP, ssdp_port))
        locations = {h.get("location") for h in found if h.get("usn", "").startswith(udn)}
        check(locations == {renderer.location}, f"SSDP: M-SEARCH for {DEVICE_TYPE} answered with LOCATION {renderer.location}")
        found.clear()
        await async_search(on_response, timeout=2, search_target="ssdp:all", source=("127.0.0.1", 0), target=(GROUP, ssdp_port))
        targets = {h.get("st") for h in found if h.get("usn", "").startswith(udn)}
        check({"upnp:rootdevice", udn, DEVICE_TYPE, AVT} <= targets, "SSDP: ssdp:all answered for the root device, uuid, device and service types")

        device = await UpnpFactory(requester).async_create_device(renderer.location)
        check(device.friendly_name == "Harmonia test" and device.udn == udn, "description: friendlyName and UDN")
        await notify_server.async_start_server()
        dmr = DmrDevice(device, notify_server.event_handler)
        events = []
        dmr.on_event = lambda service, variables: events.append((service.service_id, [(v.name, v.value) for v in variables]))
        await dmr.async_subscribe_services(auto_resubscribe=False)
        await dmr.async_update()
        check(dmr.transport_state == TransportState.NO_MEDIA_PRESENT, "an empty renderer: NO_MEDIA_PRESENT")
        control = device.service(AVT).control_url
        rcs = "urn:schemas-upnp-org:service:RenderingControl:1"
        rc_control = device.service(rcs).control_url
        for action, args, code in [
            ("Play", "<InstanceID>0</InstanceID><Speed>1</Speed>", 701),
            ("Pause", "<InstanceID>0</InstanceID>", 701),
            ("Seek", "<InstanceID>0</InstanceID><Unit>REL_TIME</Unit><Target>0:00:10</Target>", 701),
            ("Seek", "<InstanceID>0</InstanceID><Unit>FRAME</Unit><Target>1</Target>", 710),
            ("Seek", "<InstanceID>0</InstanceID><Unit>REL_TIME</Unit><Target>0:61:00</Target>", 711),
            ("SetPlayMode", "<InstanceID>0</InstanceID><NewPlayMode>INTRO</NewPlayMode>", 712),
            ("Play", "<InstanceID>0</InstanceID><Speed>2</Speed>", 717),
            ("Play", "<Speed>1</Speed>", 402),
        ]:
            status, body = soap(control, action, args)
            check(status == 500 and f"<errorCode>{code}</errorCode>" in body, f"{action} {args[26:70]}: fault {code}")
        for args, code in [("<InstanceID>0</InstanceID><Channel>LF</Channel><DesiredVolume>5</DesiredVolume>", 402),
                           ("<InstanceID>0</InstanceID><Channel>Master</Channel><DesiredVolume>101</DesiredVolume>", 402),
                           ("<InstanceID>0</InstanceID><Channel>Master</Channel><DesiredVolume>-1</DesiredVolume>", 402)]:
            status, body = soap(rc_control, "SetVolume", args, service=rcs)
            check(status == 500 and f"<errorCode>{code}</errorCode>" in body, f"SetVolume {args[26:90]}: fault {code}")
        try:
            urllib.request.urlopen(urllib.request.Request(renderer.location, headers={"Host": "rebound.example:49594"}), timeout=10)
            got = 200
        except urllib.error.HTTPError as error:
            got = error.code
        check(got == 403, "a Host that is a name, not an address (DNS rebinding): 403")
        status, body = soap(control, "Frobnicate", "<InstanceID>0</InstanceID>")
        check(status == 500 and "<errorCode>401</errorCode>" in body, "an action the service does not have: 401")
        for method, path, code in [("GET", "/nothing", 404), ("DELETE", "/description.xml", 405), ("GET", "/upnp/AVTransport/control", 405)]:
            try:
                urllib.request.urlopen(urllib.request.Request(renderer.location.replace("/description.xml", path), method=method), timeout=10)
                got = 200
            except urllib.error.HTTPError as error:
                got = error.code
            check(got == code, f"{method} {path}: {code}")
        protocols = await dmr.async_get_protocol_info()
        check("http-get:*:audio/flac:*" in protocols["sink"], "GetProtocolInfo lists audio/flac")

        # SetAVTransportURI with DIDL-Lite as Home Assistant builds it.
        long_url = files_base + "/long.wav"
        meta = await dmr.construct_play_media_metadata(long_url, "Sine Song", override_mime_type="audio/wav",
                                                       override_dlna_features="*", override_upnp_class="object.item.audioItem.musicTrack",
                                                       meta_data={"artist": "Test Artist", "album": "Test Album",
                                                                  "album_art_uri": files_base + "/cover.jpg"})
        await dmr.async_set_transport_uri(long_url, "Sine Song", meta)
        await until(dmr, lambda: dmr.transport_state == TransportState.STOPPED and dmr.current_track_uri == long_url,
                    "STOPPED with CurrentTrackURI", poll=False)
        check(True, "SetAVTransportURI: STOPPED and CurrentTrackURI evented (LastChange)")
        check(dmr.media_title == "Sine Song" and dmr.media_artist == "Test Artist", "CurrentTrackMetaData: title and artist")

        await dmr.async_play()
        await until(dmr, lambda: dmr.transport_state == TransportState.PLAYING, "PLAYING event", poll=False)
        check(True, "Play: PLAYING evented")
        song = dict(line.split(": ", 1) for line in renderer.mpd("currentsong")[0] if ": " in line)
        check(song.get("Title") == "Sine Song" and song.get("Artist") == "Test Artist", "MPD's currentsong shows the DIDL title and artist")
        track = (renderer.control("status") or {}).get("track") or {}
        check(track.get("artworkUrl") == files_base + "/cover.jpg" and dmr.media_image_url == files_base + "/cover.jpg",
              "albumArtURI: the control protocol's status (the web remote's, the Snapcast bridge's) and CurrentTrackMetaData carry it")

        await dmr.async_update()
        first = dmr.media_position
        await until(dmr, lambda: (dmr.media_position or 0) >= (first or 0) + 1, "the position to advance")
        check(True, f"GetPositionInfo: RelTime advances ({first} s, then {dmr.media_position} s)")

        await dmr.async_pause()
        await until(dmr, lambda: dmr.transport_state == TransportState.PAUSED_PLAYBACK, "PAUSED_PLAYBACK", poll=False)
        status = dict(line.split(": ", 1) for line in renderer.mpd("status")[0] if ": " in line)
        check(status.get("state") == "pause", "Pause: PAUSED_PLAYBACK evented, and MPD's status says pause")

        renderer.mpd("pause 0")
        await until(dmr, lambda: dmr.transport_state == TransportState.PLAYING, "PLAYING after MPD's pause 0", poll=False)
        check(True, "MPD's 'pause 0' is seen by the control point (PLAYING evented)")

        from datetime import timedelta
        await dmr.async_seek_rel_time(timedelta(seconds=20))
        await until(dmr, lambda: 20 <= (dmr.media_position or 0) <= 24, "position near 20 s after Seek")
        check(True, f"Seek REL_TIME 0:0:20: RelTime {dmr.media_position} s")
        status, body = soap(device.service(AVT).control_url, "Seek", "<InstanceID>0</InstanceID><Unit>REL_TIME</Unit><Target>00:00:05.000</Target>")
        check(status == 200, "Seek with a padded target 00:00:05.000")

        await dmr.async_set_volume_level(0.4)
        await until(dmr, lambda: dmr.volume_level is not None and abs(dmr.volume_level - 0.4) < 0.011, "Volume 40 event", poll=False)
        check(True, "SetVolume 40: Volume evented")
        await dmr.async_mute_volume(True)
        await until(dmr, lambda: dmr.is_volume_muted is True, "Mute event", poll=False)
        volume = await device.service("urn:schemas-upnp-org:service:RenderingControl:1").action("GetVolume").async_call(InstanceID=0, Channel="Master")
        check(volume["CurrentVolume"] == 40, "SetMute 1: Mute evented; GetVolume still answers 40")
        await dmr.async_mute_volume(False)
        await until(dmr, lambda: dmr.is_volume_muted is False, "unmute", poll=False)
        check(True, "SetMute 0: evented")
        renderer.mpd("setvol 55")
        await until(dmr, lambda: dmr.volume_level is not None and abs(dmr.volume_level - 0.55) < 0.011, "Volume 55 after MPD's setvol", poll=False)
        check(True, "MPD's 'setvol 55' is evented to the control point")

        # A new URI while playing plays at once (Home Assistant's next track).
        long2 = files_base + "/long2.wav"
        await dmr.async_set_transport_uri(long2, "Again", None)
        await until(dmr, lambda: dmr.current_track_uri == long2 and dmr.transport_state == TransportState.PLAYING,
                    "the new URI playing", poll=False)
        entries = [line for line in renderer.mpd("playlistinfo")[0] if line.startswith("file: ")]
        check(entries == ["file: " + long2], "SetAVTransportURI while playing: the new URI plays at once, the queue is that one entry")
        part1, part2 = files_base + "/flac_part1.flac", files_base + "/flac_part2.flac"

        await dmr.async_stop()
        await until(dmr, lambda: dmr.transport_state == TransportState.STOPPED, "STOPPED", poll=False)
        check(True, "Stop: STOPPED evented")

        # SetNextAVTransportURI: the second track follows without a Play.
        await dmr.async_set_transport_uri(part1, "Part 1", None)
        await dmr.async_set_next_transport_uri(part2, "Part 2", None)
        status, body = soap(control, "GetMediaInfo", "<InstanceID>0</InstanceID>")
        check(f"<CurrentURI>{part1}</CurrentURI>" in body and f"<NextURI>{part2}</NextURI>" in body,
              "GetMediaInfo: CurrentURI and NextURI")
        await dmr.async_play()
        await until(dmr, lambda: dmr.current_track_uri == part2, "CurrentTrackURI part 2", timeout=15, poll=False)
        check(dmr.transport_state in (TransportState.PLAYING, TransportState.TRANSITIONING), "SetNextAVTransportURI: part 2 follows part 1 on its own (CurrentTrackURI evented)")

        # Refusals.
        control = device.service(AVT).control_url
        xxe = ('<?xml version="1.0"?><!DOCTYPE s [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
               '<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>'
               f'<u:Play xmlns:u="{AVT}"><InstanceID>&x;</InstanceID><Speed>1</Speed></u:Play></s:Body></s:Envelope>')
        status, body = soap(control, "Play", "", raw_body=xxe)
        check(status == 500 and "<errorCode>402</errorCode>" in body and "root:" not in body, "a DOCTYPE with an external entity: SOAP fault 402")
        laughs = ('<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
                  '<s:Envelope xmlns:s="http://schemas.xmlsoap.org/soap/envelope/"><s:Body>'
                  f'<u:Play xmlns:u="{AVT}"><InstanceID>&b;</InstanceID></u:Play></s:Body></s:Envelope>')
        status, body = soap(control, "Play", "", raw_body=laughs)
        check(status == 500 and "<errorCode>402</errorCode>" in body, "entity expansion (billion laughs): SOAP fault 402")
        status, body = soap(control, "Play", "<InstanceID>0</InstanceID><Speed>1</Speed>", header_action="Stop")
        check(status == 500 and "<errorCode>401</errorCode>" in body, "SOAPACTION that disagrees with the body: fault 401")
        status, body = soap(control, "Play", "<InstanceID>7</InstanceID><Speed>1</Speed>")
        check(status == 500 and "<errorCode>718</errorCode>" in body, "InstanceID 7: fault 718")
        try:
            await dmr.async_set_transport_uri("file:///etc/passwd", "x", None)
            refused = False
        except UpnpActionError as error:
            refused = error.error_code == 716
        check(refused, "SetAVTransportURI file:///etc/passwd: 716")
        big = urllib.request.Request(control, data=b"x" * (100 << 10), method="POST",
                                     headers={"SOAPACTION": f'"{AVT}#Play"', "Content-Type": "text/xml"})
        try:
            urllib.request.urlopen(big, timeout=10)
            code = 200
        except urllib.error.HTTPError as error:
            code = error.code
        check(code == 413, "a 100 KiB body: 413")

        # Slow clients (a request half sent, never finished) delay nobody.
        host, port = renderer.location.split("//")[1].split("/")[0].rsplit(":", 1)
        slow = []
        for _ in range(20):
            s = socket.create_connection((host, int(port)), timeout=10)
            s.sendall(f"POST /upnp/AVTransport/control HTTP/1.1\r\nHOST: {host}\r\nCONTENT-LENGTH: 1000\r\n\r\n<s:Env".encode())
            slow.append(s)
        started = time.monotonic()
        status, body = soap(control, "GetTransportInfo", "<InstanceID>0</InstanceID>")
        took = time.monotonic() - started
        check(status == 200 and took < 1, f"20 clients with half-sent requests: another's GetTransportInfo in {took * 1000:.0f} ms")
        for s in slow:
            s.close()

        await seq_numbering(renderer.location, device.service("urn:schemas-upnp-org:service:RenderingControl:1").control_url)

        # Subscriptions: a cap, and a dead subscriber does not hold up the others.
        # The dead subscriber's callback takes connections and never answers.
        dead = socket.socket()
        dead.bind(("127.0.0.1", 0))
        dead.listen(64)
        answers = [subscribe(renderer.location, dead.getsockname()[1]) for _ in range(1000)]
        # The cap holds at once; a dead subscriber dropped after its answer
        # timeout (5 s) frees its place, so a burst slower than that (a loaded
        # machine) may take a few more later on.
        first_refusal = answers.index("503") if "503" in answers else len(answers)
        check(first_refusal <= 32 and answers.count("503") >= 900,
              f"1,000 more subscriptions: refused past the cap (the first refusal at #{first_refusal + 1}; "
              f"{answers.count('200')} taken, {answers.count('503')} refused)")
        await dmr.async_set_volume_level(0.7)
        await until(dmr, lambda: dmr.volume_level is not None and abs(dmr.volume_level - 0.7) < 0.011, "Volume 70 despite dead subscribers", poll=False)
        check(True, "dead subscribers (a callback that never answers): events still reach the live one at once")
        dead.close()

        await dmr.async_unsubscribe_services()
    finally:
        renderer.stop()
        byebye = await watcher.wait_for("ssdp:byebye", "uuid:" + renderer.uuid + "::" + DEVICE_TYPE, timeout=5)
        await notify_server.async_stop_server()
        await requester.async_close() if hasattr(requester, "async_close") else None
        files.terminate()
        files.wait()
    check(byebye is not None, "SIGTERM: NOTIFY ssdp:byebye")
    check(renderer.proc.returncode == 143, f"SIGTERM: exit 143 (got {renderer.proc.returncode})")
    files, files_base = serve_files(served, os.path.join(work, "files2.log"))
    try:
        await gapless(binary, files_base, os.path.join(work, "gapless"))
    finally:
        files.terminate()
        files.wait()
    shutil.rmtree(work, ignore_errors=True)


async def gapless(binary, files_base, work):
    """SetAVTransportURI + SetNextAVTransportURI into the file output: the
    two parts land bit-exact and joined, as with our own queue."""
    out = os.path.join(work, "out.f32")
    renderer = Renderer(binary, work, None, output="file:" + out)
    requester = AiohttpRequester()
    notify_server = AiohttpNotifyServer(requester, source=("127.0.0.1", 0))
    try:
        device = await UpnpFactory(requester).async_create_device(renderer.location)
        await notify_server.async_start_server()
        dmr = DmrDevice(device, notify_server.event_handler)
        await dmr.async_subscribe_services(auto_resubscribe=False)
        part1, part2 = files_base + "/flac_part1.flac", files_base + "/flac_part2.flac"
        await dmr.async_set_transport_uri(part1, "Part 1", None)
        await dmr.async_set_next_transport_uri(part2, "Part 2", None)
        await dmr.async_play()
        # The position is the heard one: paused, RelTime is the file's
        # length (what was heard) within 0.5 s (UPnP says whole seconds).
        await until(dmr, lambda: (dmr.media_position or 0) >= 1, "a second heard")
        await dmr.async_pause()
        await until(dmr, lambda: dmr.transport_state == TransportState.PAUSED_PLAYBACK, "PAUSED_PLAYBACK", poll=False)
        status, body = soap(device.service(AVT).control_url, "GetPositionInfo", "<InstanceID>0</InstanceID>")
        h, m, sec = re.search(r"<RelTime>(\d+):(\d+):(\d+)</RelTime>", body).groups()
        uri = re.search(r"<TrackURI>([^<]*)</TrackURI>", body).group(1)
        heard = os.path.getsize(out) / (44100 * 2 * 4) - (57331 / 44100 if uri == part2 else 0)
        rel = int(h) * 3600 + int(m) * 60 + int(sec)
        check(abs(rel - heard) <= 0.5 + 1 / 44100, f"paused: RelTime {rel} s, heard {heard:.3f} s (the file output's length)")
        await dmr.async_play()
        await until(dmr, lambda: dmr.current_track_uri == part2, "part 2 current", timeout=15, poll=False)
        await until(dmr, lambda: dmr.transport_state == TransportState.STOPPED, "the end of part 2", timeout=15, poll=False)
        await dmr.async_unsubscribe_services()
    finally:
        renderer.stop()
        await notify_server.async_stop_server()
    expected = b""
    for part in ("flac_part1.flac", "flac_part2.flac"):
        decoded = os.path.join(work, part + ".f32")
        subprocess.run([binary, "decode", "-o", decoded, os.path.join(FIXTURES, "gapless", part)], check=True)
        expected += open(decoded, "rb").read()
    played = open(out, "rb").read()
    check(played == expected, f"SetNextAVTransportURI: the file output holds part 1 + part 2 bit-exact "
                              f"({len(played) // 8} frames, expected {len(expected) // 8})")


if __name__ == "__main__":
    run_checks(lambda: main(sys.argv[1]))
