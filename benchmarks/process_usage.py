"""A process's CPU time and memory from /proc, for the benchmarks that
measure a running player or server beside its peer (server, slimproto)."""
import os


def cpu_seconds(pid):
    """User + system CPU time of a process so far (clock ticks, /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_kib(pid):
    """(VmHWM, VmRSS) in KiB from /proc/PID/status."""
    values = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in ("VmHWM", "VmRSS"):
                values[key] = int(rest.split()[0])
    return values["VmHWM"], values["VmRSS"]
