"""Loss curves from `@ddp-metric` lines, and the scaling benchmark's side-by-side SVG chart (stdlib
only; used by run_scaling.py). One panel per program, one curve per world size: the loss-parity
picture. A single run's chart is `ddp-launch report RUN_DIR --out chart.svg` (or .png).
"""
import math
import re

METRIC = re.compile(r"^\[rank (\d+)\]: @ddp-metric (.*)$")
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]


def parse_metrics(stdout):
    """rank -> list of dicts, in output order, from `ddp-launch run`'s prefixed stdout."""
    out = {}
    for line in stdout.splitlines():
        m = METRIC.match(line)
        if m:
            out.setdefault(int(m.group(1)), []).append(
                {k: float(v) for k, v in (kv.split("=", 1) for kv in m.group(2).split())})
    return out


def mean_curve(metrics):
    """[(step, loss averaged over the ranks that logged that step)] from parse_metrics' output."""
    by_step = {}
    for series in metrics.values():
        for s in series:
            if "loss" in s:
                by_step.setdefault(int(s["step"]), []).append(s["loss"])
    return [(step, sum(v) / len(v)) for step, v in sorted(by_step.items())]


def nice_ticks(lo, hi, target=6):
    """Round tick values enclosing [lo, hi], 1, 2 or 5 × 10^k apart."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / target
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step + 1e-9) * step
    ticks = []
    v = first
    while v < hi + step * 0.999:
        ticks.append(round(v, 10))
        v += step
    return ticks


def svg_chart(curves, path, title):
    """curves: {program: {label: [(step, loss)]}} → one panel per program (its own loss axis, steps
    from 0), one line per label (world size), the legend above the plot; title goes under the step axis."""
    programs = list(curves)
    pw, ph, ml, mr, mt, mb = 440, 330, 60, 20, 66, 45
    width, height = pw * len(programs), ph
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for i, prog in enumerate(programs):
        x0, x1 = i * pw + ml, (i + 1) * pw - mr
        y0, y1 = mt, ph - mb
        losses = [v for c in curves[prog].values() for _, v in c]
        xt = nice_ticks(0, max(s for c in curves[prog].values() for s, _ in c))
        yt = nice_ticks(min(losses), max(losses))

        def sx(s):
            return x0 + (x1 - x0) * (s - xt[0]) / (xt[-1] - xt[0])

        def sy(v):
            return y1 - (y1 - y0) * (v - yt[0]) / (yt[-1] - yt[0])

        out.append(f'<text x="{(x0 + x1) / 2}" y="18" text-anchor="middle" font-weight="bold">{prog}</text>')
        for v in yt:
            out.append(f'<line x1="{x0}" y1="{sy(v):.1f}" x2="{x1}" y2="{sy(v):.1f}" stroke="#ddd"/>')
            out.append(f'<text x="{x0 - 6}" y="{sy(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
        for s in xt:
            out.append(f'<text x="{sx(s):.1f}" y="{y1 + 16}" text-anchor="middle">{s:g}</text>')
        out.append(f'<line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="black"/>')
        out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="black"/>')
        out.append(f'<text x="{(x0 + x1) / 2}" y="{ph - 8}" text-anchor="middle">step ({title})</text>')
        out.append(f'<text x="{i * pw + 14}" y="{(y0 + y1) / 2}" transform="rotate(-90 {i * pw + 14} '
                   f'{(y0 + y1) / 2})" text-anchor="middle">loss</text>')
        lx, ly = x0, 38
        for j, (label, curve) in enumerate(curves[prog].items()):
            color = COLORS[j % len(COLORS)]
            dash = "" if j == 0 else ' stroke-dasharray="6 3"'
            pts = " ".join(f"{sx(s):.1f},{sy(v):.1f}" for s, v in curve)
            out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
            needed = 30 + 7 * len(label)
            if lx > x0 and lx + needed > x1:
                lx, ly = x0, ly + 14
            out.append(f'<line x1="{lx}" y1="{ly - 4}" x2="{lx + 24}" y2="{ly - 4}" stroke="{color}" '
                       f'stroke-width="2"{dash}/>')
            out.append(f'<text x="{lx + 30}" y="{ly}" fill="{color}">{label}</text>')
            lx += needed + 16
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
