"""A worker that draws its progress as tqdm does, byte for byte (python3-tqdm is not installed for
/usr/bin/python3 here): every redraw is "\\r" + the bar on stderr, flushed, and no newline until
the bar closes (tqdm 4.x, leave=True: the last redraw, then "\\n").

--lines N: N ordinary lines first (0.1 s apart), as a script prints its set-up.
--steps N --step-s S: the bar's N steps, S seconds each.
--stop-after K: after K steps the bar stops redrawing and the worker sleeps 600 s (a real hang).
"""
import argparse
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--lines", type=int, default=0)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--step-s", type=float, default=0.5)
p.add_argument("--stop-after", type=int, default=-1)
args = p.parse_args()

for i in range(args.lines):
    print(f"setting up {i}", flush=True)
    time.sleep(0.1)


def fmt_time(s):
    return f"{int(s) // 60:02d}:{int(s) % 60:02d}"


def bar(n, total, elapsed):
    # tqdm.format_meter's default: "{l_bar}{bar}{r_bar}", a 10-cell bar of full and partial blocks.
    frac = n / total
    cells = frac * 10
    full = int(cells)
    partial = " ▏▎▍▌▋▊▉"[int((cells - full) * 8)] if full < 10 else ""
    body = ("█" * full + partial).ljust(10)
    rate = f"{n / elapsed:5.2f}it/s" if elapsed > 0 and n else "?it/s"
    remaining = fmt_time((total - n) * elapsed / n) if n else "?"
    return f"{frac * 100:3.0f}%|{body}| {n}/{total} [{fmt_time(elapsed)}<{remaining}, {rate}]"


err = sys.stderr
start = time.monotonic()
last_len = 0
for n in range(args.steps + 1):
    s = bar(n, args.steps, time.monotonic() - start)
    err.write("\r" + s + " " * max(last_len - len(s), 0))  # tqdm's status_printer
    err.flush()
    last_len = len(s)
    if n == args.stop_after:
        time.sleep(600)
    if n < args.steps:
        time.sleep(args.step_s)
err.write("\n")  # close(): the bar stays, the line ends
err.flush()
print("done", flush=True)
