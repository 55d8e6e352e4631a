#!/usr/bin/python3
"""Store benchmark: our store, torch 1.13's own TCPStore server and the floor server, side by side.
The big-request scenarios (big_requests.py) run against ours and torch (the floor knows no CHECK);
--before BIN adds an older ddp-launch as server "before".

Run with the interpreter that has torch 1.13 (/usr/bin/python3):

    /usr/bin/python3 bench/run_store_bench.py --build-dir build-bench

Every measurement gets a fresh server process (no state or teardown left over from the previous
one); servers take turns within each repetition so that a noisy moment hits all of them. The
table shows medians and ratios; the ratios are the result, the absolute times depend on how busy
the machine is. Each server's CPU time (from /proc) is reported too: it is much less sensitive to
other load than wall time.

Every wait has a timeout: a server that resets connections or stalls is reported as such.
"""
import argparse
import json
import select
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import big_requests

HERE = os.path.dirname(os.path.abspath(__file__))
TORCH_PYTHON = "/usr/bin/python3"
CLK_TCK = os.sysconf("SC_CLK_TCK")

# torch 1.13's server, hosted the way a torchrun agent hosts it (is_master=True); port 0 picks a
# free port. The open-file limit is raised as far as the hard limit allows, like ours does, so
# the comparison is of servers and not of ulimit defaults.
TORCH_SERVER = r"""
import datetime, resource, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
import torch.distributed as dist
store = dist.TCPStore("127.0.0.1", 0, None, True, timeout=datetime.timedelta(seconds=600),
                      wait_for_workers=False)
print(f"port={store.port}", flush=True)
sys.stdin.read()  # runs until the benchmark closes our stdin (or kills us)
"""

# Goals from the issue: scenario -> (what, ratio name, bound, "min" or "max"); a goal whose ratio
# could not be measured (a server failed or was not run) is left unjudged.
GOALS = {
    "rendezvous 8192": [("ours >= 7x torch", "torch/ours", 7, "min")],
    "rendezvous 16384": [("ours <= 1.3x floor", "ours/floor", 1.3, "max")],
    "throughput 256": [("ours >= 5x torch", "torch/ours", 5, "min"), ("ours <= 1.5x floor", "ours/floor", 1.5, "max")],
}


def judge(row, goals):
    verdicts = []
    for _, ratio, bound, kind in goals:
        v = row[ratio]
        verdicts.append(None if v is None else (v >= bound if kind == "min" else v <= bound))
    if any(v is False for v in verdicts):
        return False
    return None if any(v is None for v in verdicts) else True


class ServerProcess:
    """A server child that prints port=<n> on stdout once it listens."""

    def __init__(self, name, argv, start_timeout=60.0):
        self.name = name
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     start_new_session=True)
        self.port = self._read_port(start_timeout)

    def _read_port(self, timeout):
        deadline = time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        buf = b""
        while (left := deadline - time.monotonic()) > 0:
            ready, _, _ = select.select([fd], [], [], min(left, 0.5))
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                break  # the server exited
            buf += chunk
            for line in buf.decode(errors="replace").splitlines():
                if line.startswith("port="):
                    return int(line.split("=", 1)[1])
        self.stop()
        raise RuntimeError(f"{self.name} did not print port=<n> within {timeout:.0f} s; stderr: {self.stderr()}")

    def cpu_seconds(self):
        """User + system CPU of the server process (all threads), from /proc/<pid>/stat."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / CLK_TCK
        except (OSError, IndexError, ValueError):
            return float("nan")

    def stderr(self):
        self.log.seek(0)
        return self.log.read()[-2000:]

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self.log.close()


def start_server(name, bin_dir, before_bin=None):
    if name == "before":
        return ServerProcess(name, [before_bin, "store", "--port", "0"])
    if name == "ours":
        return ServerProcess(name, [os.path.join(bin_dir, "ddp-launch"), "store", "--port", "0"])
    if name == "floor":
        return ServerProcess(name, [os.path.join(bin_dir, "floor_server"), "--port", "0"])
    if name == "torch":
        return ServerProcess(name, [TORCH_PYTHON, "-c", TORCH_SERVER])
    raise ValueError(name)


# What each scenario's table cell shows.
METRIC = {"rendezvous": "seconds", "throughput": "ops_per_s", "bigreq": "seconds", "bigwait": "worst_rtt_s"}


def metric_of(scenario):
    return METRIC[scenario.split()[0]]


def runs_on(name, scenario):
    """The floor server knows only SET, GET, ADD and WAIT: no big CHECKs."""
    return not (name == "floor" and scenario.startswith("big"))


def run_loadgen(bin_dir, port, scenario, args):
    """One loadgen run; returns its JSON result (plus the outcome if the generator itself failed)."""
    kind, size = scenario.split()
    timeout = args.timeout
    cmd = [os.path.join(bin_dir, "store_loadgen"), "--json", "--port", str(port), "--timeout", str(timeout),
           "--stall", str(args.stall)]
    if kind == "rendezvous":
        cmd += ["rendezvous", "--ranks", size]
    else:
        cmd += ["throughput", "--connections", size, "--duration", str(args.duration)]
        timeout += args.duration
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout + 30)
    except subprocess.TimeoutExpired:
        return {"outcome": "loadgen-hung", "errors": -1, "first_error": "store_loadgen did not finish"}
    for line in out.stdout.splitlines():
        if line.startswith("{"):
            return json.loads(line)
    return {"outcome": f"loadgen-exit-{out.returncode}", "errors": -1, "first_error": out.stderr.strip()[-300:]}


def measure(name, scenario, args):
    server = start_server(name, args.bin_dir, args.before)
    try:
        cpu_before = server.cpu_seconds()
        if scenario.startswith("big"):
            result = big_requests.run(scenario, server.port, args.timeout, server.proc.pid)
        else:
            result = run_loadgen(args.bin_dir, server.port, scenario, args)
        result["server_cpu_s"] = server.cpu_seconds() - cpu_before
        if server.proc.poll() is not None:
            result["outcome"] = f"server-exited-{server.proc.returncode}"
            result["server_stderr"] = server.stderr()
    finally:
        server.stop()
    return result


def summarize(runs, metric):
    """Median of the metric over complete runs; None if no run completed."""
    values = [r[metric] for r in runs if r.get("outcome") == "complete"]
    return statistics.median(values) if values else None


def describe_failure(runs):
    bad = [r for r in runs if r.get("outcome") != "complete"]
    if not bad:
        return ""
    r = bad[0]
    bits = [r.get("outcome", "?")]
    if "released" in r:
        bits.append(f"released {r['released']}/{r['ranks']}, connected {r.get('connected')}")
    if r.get("errors"):
        kinds = [f"{k}={r[k]}" for k in ("resets", "eof", "refused", "connect_errors", "protocol_errors",
                                         "other_errors") if r.get(k)]
        bits.append(f"errors {r['errors']} ({', '.join(kinds)})")
    if r.get("first_error"):
        bits.append(r["first_error"])
    return "; ".join(bits)


def fmt_num(v, spec):
    return "—" if v is None else format(v, spec)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", default=os.path.join(HERE, "..", "build-bench"),
                   help="build tree whose bin/ has ddp-launch, store_loadgen, floor_server")
    p.add_argument("--servers", default="torch,ours,floor")
    p.add_argument("--ranks", default="1024,4096,8192,16384", help="rendezvous sizes")
    p.add_argument("--connections", type=int, default=256, help="throughput connections (0: skip)")
    p.add_argument("--duration", type=float, default=3.0, help="throughput seconds")
    p.add_argument("--reps", type=int, default=3, help="repetitions per server and scenario (median)")
    p.add_argument("--timeout", type=float, default=150.0,
                   help="loadgen timeout per run (s); torch needs ~110 s to fail at 16384 ranks")
    p.add_argument("--stall", type=float, default=5.0,
                   help="after a connection error, stop a run once nothing moved for this long (s)")
    p.add_argument("--retry-failed", action="store_true",
                   help="keep repeating a server/scenario that already failed (default: one failure is the result)")
    p.add_argument("--big-requests", default="12.5,50",
                   help="bigreq sizes in MB: one CHECK of that many bytes of keys ('' to skip)")
    p.add_argument("--big-concurrent", default="6x40",
                   help="bigwait: KxMB big CHECKs at once while another client does round trips ('' to skip)")
    p.add_argument("--before", help="an older ddp-launch binary, run as server 'before' beside ours")
    p.add_argument("--only-big", action="store_true", help="only the big-request scenarios")
    p.add_argument("--json-out", help="write every run's result here")
    args = p.parse_args()
    args.bin_dir = os.path.join(os.path.abspath(args.build_dir), "bin")

    servers = args.servers.split(",")
    if args.before:
        servers.insert(servers.index("ours") if "ours" in servers else len(servers), "before")
    scenarios = [] if args.only_big else [f"rendezvous {n}" for n in args.ranks.split(",") if n]
    if args.connections and not args.only_big:
        scenarios.append(f"throughput {args.connections}")
    scenarios += [f"bigreq {n}MB" for n in args.big_requests.split(",") if n]
    scenarios += [f"bigwait {k}MB" for k in args.big_concurrent.split(",") if k]
    runs = {(s, sc): [] for s in servers for sc in scenarios}

    load_before = os.getloadavg()
    started = time.time()
    for rep in range(args.reps):
        for sc in scenarios:
            # Rotate who goes first so a busy moment does not always land on the same server.
            order = servers[rep % len(servers):] + servers[:rep % len(servers)]
            for name in order:
                past = runs[(name, sc)]
                if not runs_on(name, sc):
                    continue
                if past and not args.retry_failed and any(r.get("outcome") != "complete" for r in past):
                    continue
                r = measure(name, sc, args)
                past.append(r)
                key = metric_of(sc)
                print(f"# rep {rep + 1} {sc:17} {name:5} {r.get('outcome'):9} {key}={r.get(key)} "
                      f"server_cpu={r.get('server_cpu_s', float('nan')):.2f}s "
                      f"loadgen_cpu={r.get('loadgen_cpu_s', float('nan')):.2f}s errors={r.get('errors')}",
                      file=sys.stderr, flush=True)
                time.sleep(0.5)  # let the kernel finish tearing the last run's sockets down
    load_after = os.getloadavg()

    # The table.
    rows = []
    for sc in scenarios:
        tp = sc.startswith("throughput")
        metric = metric_of(sc)
        med = {s: summarize(runs[(s, sc)], metric) for s in servers}
        cpu = {s: summarize(runs[(s, sc)], "server_cpu_s") for s in servers}
        rss = {s: summarize(runs[(s, sc)], "peak_rss_mb") for s in servers} if sc.startswith("bigwait") else {}

        def ratio(a, b):
            if med.get(a) is None or med.get(b) is None or med[b] == 0:
                return None
            # Always "how many times faster is the first": for ops/s the bigger number is better.
            return med[b] / med[a] if tp else med[a] / med[b]

        row = {"scenario": sc, "metric": metric, "median": med, "server_cpu_s": cpu, "peak_rss_mb": rss,
               "torch/ours": ratio("torch", "ours"), "ours/floor": ratio("ours", "floor"),
               "failures": {s: describe_failure(runs[(s, sc)]) for s in servers},
               "runs": {s: len(runs[(s, sc)]) for s in servers}}
        goals = GOALS.get(sc, [])
        row["goal"] = ", ".join(g[0] for g in goals)
        row["met"] = judge(row, goals) if goals else None
        rows.append(row)

    unit = {"seconds": "s", "ops_per_s": "ops/s", "worst_rtt_s": "s worst RTT"}
    header = ("| scenario | " + " | ".join(servers) + " | ours: × faster than torch | ours: × slower than floor"
              " | server CPU s (" + " / ".join(servers) + ") | goal | met |")
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for row in rows:
        cells = []
        for s in servers:
            v = row["median"][s]
            if not runs_on(s, row["scenario"]):
                cells.append("n/a")
                continue
            spec = ".0f" if row["metric"] == "ops_per_s" else ".3f"
            cells.append(f"{fmt_num(v, spec)} {unit[row['metric']]}" if v is not None else "failed")
        cpu = " / ".join(fmt_num(row["server_cpu_s"][s], ".2f") for s in servers)
        met = "" if row["met"] is None else ("yes" if row["met"] else "**no**")
        print(f"| {row['scenario']} | " + " | ".join(cells) +
              f" | {fmt_num(row['torch/ours'], '.1f')}× | {fmt_num(row['ours/floor'], '.2f')}× | {cpu} | "
              f"{row['goal']} | {met} |")
    print()
    for row in rows:
        if row["peak_rss_mb"]:
            print(f"- {row['scenario']}: server peak RSS (" + " / ".join(servers) + "): "
                  + " / ".join(fmt_num(row["peak_rss_mb"].get(s), ".0f") + " MB" for s in servers))
    print("Ratios are 'how many times faster' (time ratio for rendezvous, ops/s ratio for throughput); "
          f"medians of up to {args.reps} runs.")
    for row in rows:
        for s in servers:
            if row["failures"][s]:
                print(f"- {row['scenario']}, {s}: {row['failures'][s]}")
    print(f"- load average before/after: {load_before[0]:.2f} / {load_after[0]:.2f} "
          f"({os.cpu_count()} CPUs); wall time {time.time() - started:.0f} s")

    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump({"rows": rows, "runs": {f"{s} {sc}": v for (s, sc), v in runs.items()},
                       "load_before": load_before, "load_after": load_after}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
