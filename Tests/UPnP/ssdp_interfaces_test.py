#!/usr/bin/env python3
"""SSDP on a machine with several interfaces (specs/upnp.md §Discovery):
each interface is told its own LOCATION, and a search is answered only on
an interface the renderer announces on.

Usage: unshare -n ssdp_interfaces_test.py HARMONIA_PLAY

Runs in a network namespace of its own (the caller's `unshare -n`): two
veth interfaces, lan0 (10.77.1.1/24) and br0 (10.77.2.1/24, as a
container bridge would be), their far ends (no address), and lo. Nothing leaves the namespace. SSDP uses
its real port, 1900, free in a new namespace. The control point's searches
are async-upnp-client's (Home Assistant's and Music Assistant's library);
NOTIFYs are read with the interface they arrived on (IP_PKTINFO). Every
wait is for a condition, bounded in time. Prints one line per check and
'N passed, 0 failed'.
"""
import asyncio
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

from async_upnp_client.search import async_search
from upnp_test_support import ServeProcess, check, run_checks

GROUP = "239.255.255.250"
SSDP_PORT = 1900
DEVICE_TYPE = "urn:schemas-upnp-org:device:MediaRenderer:1"
INTERFACES = {"lan0": "10.77.1.1", "br0": "10.77.2.1"}
IP_PKTINFO = getattr(socket, "IP_PKTINFO", 8)


def make_interfaces():
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for name, address in INTERFACES.items():
        # A veth pair: the far end up (with no address) gives the near one a carrier.
        subprocess.run(["ip", "link", "add", name, "type", "veth", "peer", "name", name + "-far"], check=True)
        subprocess.run(["ip", "addr", "add", address + "/24", "dev", name], check=True)
        subprocess.run(["ip", "link", "set", name + "-far", "up"], check=True)
        subprocess.run(["ip", "link", "set", name, "up"], check=True)


class NotifyWatcher:
    """A socket on the SSDP port joined to the group on every interface:
    each NOTIFY with the index of the interface it arrived on."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        self.sock.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)
        self.sock.bind(("0.0.0.0", SSDP_PORT))
        for address in INTERFACES.values():
            self.sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(GROUP) + socket.inet_aton(address))
        self.sock.settimeout(0.2)
        self.seen = []  # (interface name, NTS, USN, LOCATION)

    def pump(self, until, timeout=10):
        """Reads NOTIFYs until `until(seen)` holds or `timeout` s pass."""
        names = {socket.if_nametoindex(name): name for name in INTERFACES}
        names[socket.if_nametoindex("lo")] = "lo"
        deadline = time.monotonic() + timeout
        while not until(self.seen) and time.monotonic() < deadline:
            try:
                data, ancillary, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(12))
            except socket.timeout:
                continue
            index = next((struct.unpack("i", cdata[:4])[0] for level, kind, cdata in ancillary
                          if level == socket.IPPROTO_IP and kind == IP_PKTINFO), None)
            text = data.decode("utf-8", "replace")
            if not text.startswith("NOTIFY"):
                continue
            headers = dict((k.strip().upper(), v.strip()) for k, _, v in (line.partition(":") for line in text.split("\r\n")[1:]) if k)
            self.seen.append((names.get(index, str(index)), headers.get("NTS"), headers.get("USN"), headers.get("LOCATION")))
        return until(self.seen)

    def close(self):
        self.sock.close()


class Renderer(ServeProcess):
    def __init__(self, binary, work, listen):
        super().__init__(binary, work, ["--output", "null", "--upnp-listen", listen, "--upnp-ssdp-port", str(SSDP_PORT)])
        try:
            self.wait_line(r"MPD protocol on 127\.0\.0\.1:(\d+)")
            self.text = self.read_log()
            self.locations = re.findall(r"UPnP renderer \"Harmonia test\" on (http://\S+)", self.text)
            self.uuid = self.device_uuid()
        except BaseException:
            self.stop()
            raise


async def search_from(address):
    """async-upnp-client's M-SEARCH for the device type out of the interface
    with `address`: the LOCATIONs that answered."""
    found = []

    async def on_response(headers):
        found.append(headers.get("location"))

    await async_search(on_response, timeout=2, search_target=DEVICE_TYPE, source=(address, 0), target=(GROUP, SSDP_PORT))
    return set(found)


def location(address, text):
    port = re.search(r"UPnP renderer \"Harmonia test\" on http://[0-9.]+:(\d+)/", text).group(1)
    return f"http://{address}:{port}/description.xml"


async def main(binary):
    make_interfaces()
    work = tempfile.mkdtemp(prefix="hp-ssdp-")
    try:
        # 1. --upnp-listen 0.0.0.0: every interface, each with its own LOCATION.
        watcher = NotifyWatcher()
        renderer = Renderer(binary, os.path.join(work, "all"), "0.0.0.0:0")
        try:
            udn = "uuid:" + renderer.uuid
            expected = {name: location(address, renderer.text) for name, address in INTERFACES.items()}
            check(sorted(renderer.locations) == sorted(expected.values()),
                  f"0.0.0.0: the renderer says where it is announced: {sorted(renderer.locations)}")

            def alive_on_each(seen):
                return all(any(i == name and nts == "ssdp:alive" and usn == udn + "::" + DEVICE_TYPE for i, nts, usn, _ in seen)
                           for name in INTERFACES)
            check(watcher.pump(alive_on_each), "0.0.0.0: NOTIFY ssdp:alive for the device type arrives on lan0 and on br0")
            wrong = [(i, loc) for i, nts, usn, loc in watcher.seen if nts == "ssdp:alive" and i in expected and loc != expected[i]]
            check(not wrong, f"0.0.0.0: each NOTIFY names the address of the interface it went out on (wrong: {wrong})")
            check(not any(i == "lo" for i, *_ in watcher.seen), "0.0.0.0: nothing announced on loopback")
            for name, address in INTERFACES.items():
                answered = await search_from(address)
                check(answered == {expected[name]}, f"0.0.0.0: an M-SEARCH on {name} is answered with {name}'s LOCATION (got {answered})")
        finally:
            renderer.stop()

        def byebye_on_each(seen):
            return all(any(i == name and nts == "ssdp:byebye" and usn == udn + "::" + DEVICE_TYPE for i, nts, usn, _ in seen)
                       for name in INTERFACES)
        check(watcher.pump(byebye_on_each), "SIGTERM: NOTIFY ssdp:byebye on lan0 and on br0")
        watcher.close()

        # 2. --upnp-listen on lan0's address: announced there only, searches on br0 unanswered.
        watcher = NotifyWatcher()
        renderer = Renderer(binary, os.path.join(work, "lan"), INTERFACES["lan0"] + ":0")
        try:
            udn = "uuid:" + renderer.uuid
            lan = location(INTERFACES["lan0"], renderer.text)
            check(renderer.locations == [lan], f"lan0's address: announced on lan0 only ({renderer.locations})")
            check(watcher.pump(lambda seen: any(i == "lan0" and usn == udn + "::" + DEVICE_TYPE for i, _, usn, _ in seen)),
                  "lan0's address: NOTIFY ssdp:alive on lan0")
            answered_lan = await search_from(INTERFACES["lan0"])
            answered_br = await search_from(INTERFACES["br0"])
            check(answered_lan == {lan}, f"lan0's address: an M-SEARCH on lan0 is answered (got {answered_lan})")
            check(answered_br == set(), f"lan0's address: an M-SEARCH on br0 is not answered (got {answered_br})")
            check(not any(i == "br0" for i, *_ in watcher.seen), "lan0's address: no NOTIFY on br0")
        finally:
            renderer.stop()
            watcher.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: unshare -n ssdp_interfaces_test.py HARMONIA_PLAY")
    run_checks(lambda: main(sys.argv[1]))
