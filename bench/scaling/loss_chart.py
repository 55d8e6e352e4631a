#!/usr/bin/env python3
"""Loss curves from `@ddp-metric` lines as an SVG chart (stdlib only; used by run_scaling.py and
the demo when `ddp-launch report` is not available).

    loss_chart.py LOG [LOG...] --out chart.svg [--title T]

LOG is the captured stdout of `ddp-launch run` (lines `[rank R]: @ddp-metric step=… loss=…`); each
log becomes one curve, the loss at each step averaged over the ranks.
"""
import argparse
import os
import re

METRIC = re.compile(r"^\[rank (\d+)\]: @ddp-metric (.*)$")
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]


def parse_metrics(stdout):
    """rank -> list of dicts, in output order."""
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


def svg_chart(curves, path, title):
    """curves: {program: {world: [(step, loss)]}} → one panel per program, one line per world size."""
    programs = list(curves)
    pw, ph, ml, mr, mt, mb = 420, 300, 60, 20, 40, 45
    width, height = pw * len(programs), ph
    all_loss = [l for p in curves.values() for c in p.values() for _, l in c]
    all_step = [s for p in curves.values() for c in p.values() for s, _ in c]
    lo, hi = min(all_loss), max(all_loss)
    pad = (hi - lo) * 0.05 or 0.1
    lo, hi = lo - pad, hi + pad
    smax = max(all_step)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for i, prog in enumerate(programs):
        x0 = i * pw + ml
        x1 = (i + 1) * pw - mr
        y0, y1 = mt, ph - mb

        def sx(s):
            return x0 + (x1 - x0) * s / smax

        def sy(v):
            return y1 - (y1 - y0) * (v - lo) / (hi - lo)

        out.append(f'<text x="{(x0 + x1) / 2}" y="20" text-anchor="middle" font-weight="bold">'
                   f'{title}: {prog}</text>')
        out.append(f'<line x1="{x0}" y1="{y1}" x2="{x1}" y2="{y1}" stroke="black"/>')
        out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="black"/>')
        for k in range(5):
            v = lo + (hi - lo) * k / 4
            out.append(f'<text x="{x0 - 6}" y="{sy(v) + 4:.1f}" text-anchor="end">{v:.2f}</text>')
            out.append(f'<line x1="{x0}" y1="{sy(v):.1f}" x2="{x1}" y2="{sy(v):.1f}" stroke="#ddd"/>')
        for k in range(5):
            s = smax * k / 4
            out.append(f'<text x="{sx(s):.1f}" y="{y1 + 16}" text-anchor="middle">{s:.0f}</text>')
        out.append(f'<text x="{(x0 + x1) / 2}" y="{ph - 8}" text-anchor="middle">step</text>')
        out.append(f'<text x="14" y="{(y0 + y1) / 2}" transform="rotate(-90 14 {(y0 + y1) / 2})" '
                   f'text-anchor="middle">loss</text>' if i == 0 else "")
        for j, (world, curve) in enumerate(sorted(curves[prog].items())):
            color = COLORS[j % len(COLORS)]
            dash = "" if j == 0 else ' stroke-dasharray="6 3"'
            pts = " ".join(f"{sx(s):.1f},{sy(v):.1f}" for s, v in curve)
            out.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"{dash}/>')
            out.append(f'<text x="{x1 - 110}" y="{y0 + 16 + 16 * j}" fill="{color}">{world}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")



def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--title", default="loss")
    args = ap.parse_args()
    curves = {}
    for log in args.logs:
        with open(log) as f:
            curve = mean_curve(parse_metrics(f.read()))
        if not curve:
            raise SystemExit(f"{log}: no @ddp-metric lines with a loss")
        curves[os.path.basename(log)] = curve
    svg_chart({"": curves}, args.out, args.title)
    print(args.out)


if __name__ == "__main__":
    main()
