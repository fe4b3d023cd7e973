#!/usr/bin/env python3
"""Builds benchmarks/RESULTS.md and benchmarks/chart.svg from benchmarks/results/*.json.

Each results file is one table (the contract in the benchmark scripts):
{"part", "title", "method", "columns", "rows", "headline": [{"label", "ratio",
"target", "lower_is_better"}], "notes"} — or {"part", "failed": "reason"}.
A part whose file is missing or failed is listed as not measured. Standard
library only. Usage: python3 benchmarks/report.py [--results DIR] [--out DIR]
"""
import argparse, datetime, glob, html, json, math, os, platform, re, subprocess

# The parts in the order make bench runs them; others follow alphabetically.
PARTS = ["decode", "pipeline", "ringbuffer", "scaling", "latency", "footprint", "footprint-pipewire", "underruns", "scan",
         "update"]
PART_NAMES = {"decode": "Decode throughput", "pipeline": "Whole pipeline", "ringbuffer": "Ring buffer",
              "scaling": "Scaling", "latency": "Latency through PulseAudio",
              "footprint": "Footprint", "footprint-pipewire": "Footprint on PipeWire", "underruns": "Underruns under load", "scan": "Library scan",
              "update": "Library update"}


def sh(argv, first_line=True):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        out = (p.stdout or p.stderr).strip()
        if not out:
            return None
        return out.splitlines()[0].strip() if first_line else out
    except (OSError, subprocess.SubprocessError):
        return None


def machine():
    facts = []
    cpu, cores = None, os.cpu_count()
    try:
        for line in open("/proc/cpuinfo"):
            if line.lower().startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    facts.append(("CPU", f"{cpu or platform.processor() or 'unknown'} — {cores} logical cores available"))
    try:
        mem = next(l for l in open("/proc/meminfo") if l.startswith("MemTotal"))
        facts.append(("Memory", f"{int(mem.split()[1]) / 1024 / 1024:.1f} GiB"))
    except (OSError, StopIteration):
        pass
    facts.append(("Kernel", f"{platform.system()} {platform.release()} ({platform.machine()})"))
    try:
        osr = dict(l.rstrip("\n").split("=", 1) for l in open("/etc/os-release") if "=" in l)
        facts.append(("OS", osr.get("PRETTY_NAME", "").strip('"')))
    except OSError:
        pass
    swift = os.environ.get("SWIFT") or "swift"
    for label, argv in [("Swift", [swift, "--version"]), ("FFmpeg", ["ffmpeg", "-version"]),
                        ("PulseAudio", ["pulseaudio", "--version"]), ("mpv", ["mpv", "--version"]),
                        ("MPD", ["mpd", "--version"]), ("mpc", ["dpkg-query", "-W", "-f", "mpc ${Version}", "mpc"]),
                        ("mpg123", ["mpg123", "--version"]), ("paplay", ["paplay", "--version"]),
                        ("hyperfine", ["hyperfine", "--version"]), ("Python", ["python3", "--version"])]:
        v = sh(argv)
        if label == "Swift" and not v and os.path.exists("/opt/swift/usr/bin/swift"):
            v = sh(["/opt/swift/usr/bin/swift", "--version"])
        if v:
            facts.append((label, v))
    facts.append(("Date", datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")))
    commit = sh(["git", "rev-parse", "--short", "HEAD"])
    if commit:
        dirty = sh(["git", "status", "--porcelain", "--untracked-files=no"], first_line=False)
        facts.append(("Commit", commit + (" (with local changes)" if dirty else "")))
    return facts


def load(results_dir):
    found = {}
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        name = os.path.splitext(os.path.basename(path))[0]
        try:
            with open(path) as f:
                d = json.load(f)
            if not isinstance(d, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as e:
            d = {"part": name, "failed": f"unreadable results file: {e}"}
        d.setdefault("part", name)
        found[name] = d
    order = [p for p in PARTS if p in found] + sorted(p for p in found if p not in PARTS)
    missing = [p for p in PARTS if p not in found]
    return [found[p] for p in order], missing


def fmt(v):
    if v is None:
        return "—"
    if v is True:
        return "✅ met"
    if v is False:
        return "❌ **missed**"
    if isinstance(v, float):
        if v == 0:
            return "0"
        a = abs(v)
        if a >= 1000:
            return f"{v:,.0f}"
        if a >= 100:
            return f"{v:.1f}".rstrip("0").rstrip(".")
        if a >= 0.01:
            return f"{v:.3f}".rstrip("0").rstrip(".") if a < 1 else f"{v:.2f}".rstrip("0").rstrip(".")
        return f"{v:.2g}"
    if isinstance(v, int):
        return f"{v:,}" if abs(v) >= 10000 else str(v)
    return str(v).replace("|", "\\|").replace("\n", " ")


def table(columns, rows):
    out = ["| " + " | ".join(fmt(c) for c in columns) + " |",
           "|" + "|".join(" --- " for _ in columns) + "|"]
    for r in rows:
        r = list(r) + [None] * (len(columns) - len(r))
        out.append("| " + " | ".join(fmt(c) for c in r) + " |")
    return "\n".join(out)


def verdict(h):
    """(met: bool|None, text) for a headline item."""
    r, t, lower = h.get("ratio"), h.get("target"), h.get("lower_is_better", True)
    if not isinstance(r, (int, float)) or not isinstance(t, (int, float)):
        return None, "no target"
    met = h.get("met")
    if met is None:
        met = r < t if lower else r > t
    sign = "<" if lower else ">"
    if met:
        return True, f"✅ met ({fmt(float(r))} {sign} {fmt(float(t))})"
    off = (r / t - 1) * 100 if lower else (1 - r / t) * 100
    return False, (f"❌ **missed** by {abs(r - t):.2f} ({abs(off):.0f} %): {fmt(float(r))}, "
                   f"target {sign} {fmt(float(t))}")


def ratio_text(h):
    r = h.get("ratio")
    return "—" if not isinstance(r, (int, float)) else f"{fmt(float(r))}×"


def write_markdown(parts, missing, facts, out_dir, chart_name):
    L = ["# Benchmark results", "",
         "Generated by `make bench` (`benchmarks/report.py` from `benchmarks/results/*.json`) — "
         "never edited by hand. Every figure is the median over several runs; every comparison is a "
         "ratio **ours ÷ peer** measured in the same run, the two programs alternating, so that "
         "machine noise cancels. For times, CPU and memory a ratio below 1 means we are better; "
         "for throughput the table says which way is better. Method and notes are given with each table.",
         ""]
    headlines = [(p, h) for p in parts if not p.get("failed") for h in p.get("headline") or []]
    failed = [p for p in parts if p.get("failed")]
    if headlines:
        L += ["## Headline comparisons", "", f"![Headline ratios]({chart_name})", "",
              "| Comparison | Ratio (ours ÷ peer) | Better when | Target |", "| --- | --- | --- | --- |"]
        for p, h in headlines:
            _, v = verdict(h)
            better = "lower" if h.get("lower_is_better", True) else "higher"
            L.append(f"| {fmt(h.get('label', '?'))} | {ratio_text(h)} | {better} | {v} |")
        n_met = sum(1 for _, h in headlines if verdict(h)[0] is True)
        n_missed = sum(1 for _, h in headlines if verdict(h)[0] is False)
        L += ["", f"Targets: {n_met} met, {n_missed} missed"
              + (f"; {len(failed) + len(missing)} part(s) not measured" if failed or missing else "") + ".", ""]
    if failed or missing:
        L += ["## Not measured", ""]
        for p in failed:
            L.append(f"- **{PART_NAMES.get(p['part'], p['part'])}** (`{p['part']}`): failed — {fmt(p['failed'])}")
        for m in missing:
            L.append(f"- **{PART_NAMES[m]}** (`{m}`): no results file (the part did not run or does not exist yet)")
        L.append("")
    for p in parts:
        if p.get("failed"):
            continue
        L += [f"## {p.get('title') or PART_NAMES.get(p['part'], p['part'])}", ""]
        if p.get("method"):
            L += [f"*Method.* {p['method']}", ""]
        cols, rows = p.get("columns") or [], p.get("rows") or []
        if cols:
            L += [table(cols, rows), ""]
        misses = [r for r in rows if "met" in cols and len(r) > cols.index("met") and r[cols.index("met")] is False]
        if misses:
            L += [f"**Target missed** in {len(misses)} of {len(rows)} row(s) — see the notes.", ""]
        for h in p.get("headline") or []:
            met, v = verdict(h)
            if met is False:
                L.append(f"- {fmt(h.get('label', '?'))}: {v}")
        if any(verdict(h)[0] is False for h in p.get("headline") or []):
            L.append("")
        notes = p.get("notes") or []
        if notes:
            L += ["*Notes.*", ""] + [f"- {fmt(n)}" for n in notes] + [""]
    L += ["## Machine", "", "| | |", "| --- | --- |"] + [f"| {k} | {fmt(v)} |" for k, v in facts] + [""]
    L += ["Regenerate with `make bench` (installs what is missing, builds release, starts a private "
          "PulseAudio server, runs every `benchmarks/run-*.sh`, then this report).", ""]
    with open(os.path.join(out_dir, "RESULTS.md"), "w") as f:
        f.write("\n".join(L))


def write_svg(parts, out_dir):
    items = [h for p in parts if not p.get("failed") for h in p.get("headline") or []
             if isinstance(h.get("ratio"), (int, float)) and h["ratio"] > 0]
    W, label_w, right = 960, 330, 120
    row_h, top = 30, 58
    H = top + max(1, len(items)) * row_h + 50
    S = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" '
         f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="13">',
         f'<rect width="{W}" height="{H}" fill="#ffffff"/>',
         f'<text x="{W / 2}" y="22" text-anchor="middle" font-size="16" font-weight="bold">'
         f'Headline ratios, ours ÷ peer (log scale; medians, same-run alternation)</text>',
         f'<text x="{W / 2}" y="40" text-anchor="middle" fill="#555">green: better than the peer, '
         f'amber: better but target missed, red: worse; blue tick: target; dashed line: parity (1.0)</text>']
    if not items:
        S.append(f'<text x="{W / 2}" y="{top + 20}" text-anchor="middle" fill="#a00">no headline ratios measured</text>')
        S.append("</svg>")
        with open(os.path.join(out_dir, "chart.svg"), "w") as f:
            f.write("\n".join(S) + "\n")
        return
    vals = [h["ratio"] for h in items] + [h["target"] for h in items
                                          if isinstance(h.get("target"), (int, float)) and h["target"] > 0] + [1.0]
    lo = 10 ** math.floor(math.log10(min(vals) * 0.9))
    hi = 10 ** math.ceil(math.log10(max(vals) * 1.1))
    x0, x1 = label_w, W - right

    def X(v):
        return x0 + (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * (x1 - x0)
    bottom = top + len(items) * row_h
    # Grid and ticks: 1, 2, 5 per decade.
    d = lo
    while d <= hi * 1.0001:
        for m in (1, 2, 5):
            v = d * m
            if lo <= v <= hi * 1.0001:
                x = X(v)
                S.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{bottom}" stroke="#e3e3e3"/>')
                S.append(f'<text x="{x:.1f}" y="{bottom + 16}" text-anchor="middle" fill="#444">{fmt(float(v))}</text>')
        d *= 10
    S.append(f'<text x="{(x0 + x1) / 2}" y="{bottom + 36}" text-anchor="middle" fill="#444">ratio ours ÷ peer</text>')
    for i, h in enumerate(items):
        y = top + i * row_h
        r, lower = h["ratio"], h.get("lower_is_better", True)
        better = r < 1 if lower else r > 1
        met, _ = verdict(h)
        colour = ("#c0392b" if not better and r != 1 else "#999999" if r == 1
                  else "#e0a800" if met is False else "#2e8b57")
        xa, xb = sorted((X(1.0), X(r)))
        label = h.get("label", "?") + ("" if lower else " (higher is better)")
        S.append(f'<text x="{x0 - 8}" y="{y + row_h / 2 + 4:.1f}" text-anchor="end">{html.escape(label)}</text>')
        S.append(f'<rect x="{xa:.1f}" y="{y + 6}" width="{max(1.5, xb - xa):.1f}" height="{row_h - 12}" fill="{colour}" opacity="0.85"/>')
        S.append(f'<text x="{max(xb, X(1.0)) + 6:.1f}" y="{y + row_h / 2 + 4:.1f}" fill="#222">{fmt(float(r))}×</text>')
        t = h.get("target")
        if isinstance(t, (int, float)) and t > 0:
            xt = X(t)
            S.append(f'<line x1="{xt:.1f}" y1="{y + 2}" x2="{xt:.1f}" y2="{y + row_h - 2}" stroke="#1f3b8c" '
                     f'stroke-width="3"><title>target {html.escape("<" if lower else ">")} {t}</title></line>')
    S.append(f'<line x1="{X(1.0):.1f}" y1="{top - 6}" x2="{X(1.0):.1f}" y2="{bottom}" stroke="#000" stroke-width="1.5" stroke-dasharray="5,3"/>')
    S.append("</svg>")
    with open(os.path.join(out_dir, "chart.svg"), "w") as f:
        f.write("\n".join(S) + "\n")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", default=os.path.join(here, "results"))
    ap.add_argument("--out", default=here)
    a = ap.parse_args()
    parts, missing = load(a.results)
    write_svg(parts, a.out)
    write_markdown(parts, missing, machine(), a.out, "chart.svg")
    print(f"report: wrote {os.path.join(a.out, 'RESULTS.md')} and {os.path.join(a.out, 'chart.svg')}")


if __name__ == "__main__":
    main()
