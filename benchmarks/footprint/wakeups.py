#!/usr/bin/env python3
"""Wake-ups per second of each thread of harmonia-play while it plays a FLAC.

Starts the player (its arguments after --), waits WARMUP seconds, then reads
every thread's context switches (/proc/PID/task/TID/status:
voluntary_ctxt_switches, nonvoluntary_ctxt_switches) and on-CPU time
(schedstat) twice, SECONDS apart. A voluntary switch is the thread going to
sleep, so switches per second are its wake-ups per second. Prints one line
per thread name (threads of one name summed; --each: per thread), then the
process total. Run: wakeups.py [--seconds 10] -- harmonia-play play FILE
"""
import argparse, os, signal, subprocess, sys, time


def threads(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                name = f.read().strip()
            fields = {}
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    fields[key] = value.strip()
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                ns = int(f.read().split()[0])
            out[tid] = (name, int(fields["voluntary_ctxt_switches"]),
                        int(fields["nonvoluntary_ctxt_switches"]), ns)
        except (OSError, KeyError, ValueError, IndexError):
            pass
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--warmup", type=float, default=3)
    parser.add_argument("--each", action="store_true", help="one line per thread, not per name")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = [c for c in args.command if c != "--"]
    player = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        time.sleep(args.warmup)
        before = threads(player.pid)
        time.sleep(args.seconds)
        after = threads(player.pid)
        if player.poll() is not None:
            sys.exit(f"wakeups.py: the player exited ({player.returncode}) during the window")
    finally:
        player.send_signal(signal.SIGTERM)
        player.wait(timeout=10)
    names = {}
    for tid, (name, vol, invol, ns) in after.items():
        b = before.get(tid, (name, 0, 0, 0))
        if args.each:
            name = f"{name}/{tid}"
        total = names.setdefault(name, [0, 0, 0, 0])
        total[0] += 1
        total[1] += vol - b[1]
        total[2] += invol - b[2]
        total[3] += ns - b[3]
    print(f"{'thread':<24} {'n':>2} {'wakeups/s':>10} {'preempted/s':>12} {'cpu ms/s':>9}")
    sums = [0, 0, 0]
    for name, (n, vol, invol, ns) in sorted(names.items(), key=lambda kv: -kv[1][1]):
        print(f"{name:<24} {n:>2} {vol / args.seconds:>10.1f} {invol / args.seconds:>12.1f} {ns / 1e6 / args.seconds:>9.2f}")
        sums[0] += vol; sums[1] += invol; sums[2] += ns
    print(f"{'total':<24} {'':>2} {sums[0] / args.seconds:>10.1f} {sums[1] / args.seconds:>12.1f} {sums[2] / 1e6 / args.seconds:>9.2f}")


if __name__ == "__main__":
    main()
