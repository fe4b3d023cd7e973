#!/usr/bin/env python3
"""Where a running player's resident memory is: by kind of mapping, then the
player binary's own resident pages by the module their code or data comes from.

Reads /proc/PID/smaps (resident KiB of each mapping) and /proc/PID/pagemap
(which of the binary's pages are present: the present bit is readable by
the process's owner), then `nm -S` of the binary: each
symbol's bytes on a present page count for its module, told from the Swift
mangling ($s<len><Module>...) or a C/C++ prefix (ICU, CoreFoundation,
Dispatch, the Swift runtime). Bytes no symbol covers are left out of the
second table, so it sums to a little less than the binary's mappings.
Run (as the player's owner): resident.py PID [BINARY]
"""
import collections, os, re, struct, subprocess, sys

PAGE = 4096


def kind(path, binary):
    name = os.path.basename(path)
    if path == binary:
        return "the player binary"
    if path.startswith("[") or path == "":
        return "anonymous + heap + stacks"
    if "memfd" in path:
        return "PulseAudio shared memory"
    if name.startswith(("libav", "libsw")):
        return "FFmpeg's own libraries"
    return "other shared libraries"


def by_kind(pid, binary):
    sizes, current = collections.Counter(), None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                parts = line.split()
                current = kind(parts[5] if len(parts) > 5 else "", binary)
            elif line.startswith("Rss:"):
                sizes[current] += int(line.split()[1])
    return sizes


def module(symbol):
    if symbol.startswith(("$ss", "$sS")):
        return "Swift standard library"
    m = re.match(r"^\$s(\d+)([A-Za-z_]\w*)", symbol)
    if m:
        name = m.group(2)[:int(m.group(1))]
        if name.startswith(("Foundation", "_Foundation")):
            return name
        if name.startswith(("Harmonia", "harmonia_play")):
            return "HarmoniaCore and its adapters (ours)"
        if name.startswith(("NIO", "_NIO")):
            return "swift-nio"
        return name
    if "icu_" in symbol or re.match(r"^u[a-z]*_\w+_\d+$", symbol):
        return "ICU"
    if symbol.startswith(("CF", "__CF", "_CF", "kCF")):
        return "CoreFoundation"
    if symbol.startswith(("swift_", "_swift", "_ZN5swift")):
        return "Swift runtime"
    if symbol.startswith(("dispatch_", "_dispatch")):
        return "Dispatch (C)"
    return "other C/C++"


def by_module(pid, binary):
    present, base = set(), None
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        for line in maps:
            parts = line.split()
            if len(parts) <= 5 or parts[5] != binary:
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            if int(parts[2], 16) == 0:
                base = lo if base is None else min(base, lo)
            pagemap.seek(lo // PAGE * 8)
            entries = pagemap.read((hi - lo) // PAGE * 8)
            for i in range(len(entries) // 8):
                if struct.unpack_from("<Q", entries, i * 8)[0] >> 63:
                    present.add(lo // PAGE + i)
    resident = collections.Counter()
    listing = subprocess.run(["nm", "--defined-only", "-S", binary], capture_output=True, text=True).stdout
    for line in listing.splitlines():
        parts = line.split(None, 3)
        if len(parts) != 4 or base is None:
            continue
        start, size = int(parts[0], 16) + base, int(parts[1], 16)
        name, address = module(parts[3]), start
        while address < start + size:
            page = address // PAGE
            end = min(start + size, (page + 1) * PAGE)
            if page in present:
                resident[name] += end - address
            address = end
    return len(present) * PAGE // 1024, resident


def main():
    pid = sys.argv[1]
    binary = os.path.realpath(sys.argv[2] if len(sys.argv) > 2 else f"/proc/{pid}/exe")
    kinds = by_kind(pid, binary)
    print(f"resident {sum(kinds.values()) / 1024:.1f} MiB")
    for name, kib in kinds.most_common():
        print(f"  {name:40} {kib / 1024:6.1f} MiB")
    pages, modules = by_module(pid, binary)
    print(f"the binary's present pages: {pages / 1024:.1f} MiB; by module (symbols on present pages):")
    for name, size in modules.most_common(16):
        print(f"  {name:40} {size / 1048576:6.2f} MiB")


if __name__ == "__main__":
    main()
