"""Writes the fuzzer's seed corpus from captured_requests.txt (real torch client bytes).

Usage: make_corpus.py <captured_requests.txt> <regressions.txt> <output dir>

Each seed is fuzz_codec's header byte followed by client bytes (see fuzz_codec.cpp):
  - every captured connection, whole, under a few headers: legacy A with one connection (0x00)
    and with two (0x04), legacy B (0x01), and two connections with torch's stale waits kept
    (0x14), so the fuzzer starts from real sequences of SET/WAIT/GET/ADD/... in each mode;
  - every distinct captured chunk on its own (header 0x00): single requests, and 1.13's MSG_MORE
    fragments, which read as other requests in the legacy numbering;
  - every input in regressions.txt as it is (header included): inputs that once broke a
    property, re-checked on every run.
Seed names are content hashes, so rerunning is idempotent.
"""
import hashlib
import os
import sys


def read_streams(path):
    streams, current = [], []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("#"):
                continue
            if not line:
                if current:
                    streams.append(current)
                current = []
                continue
            current.append(bytes.fromhex(line))
    if current:
        streams.append(current)
    return streams


def read_regressions(path):
    with open(path) as f:
        return [bytes.fromhex(line.split("#")[0].strip()) for line in f
                if line.split("#")[0].strip()]


def main():
    src, regressions, out_dir = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(out_dir, exist_ok=True)
    seeds = set(read_regressions(regressions))
    streams = read_streams(src)
    for chunks in streams:
        whole = b"".join(chunks)
        for header in (0x00, 0x04, 0x01, 0x14):
            seeds.add(bytes([header]) + whole)
        for chunk in chunks:
            seeds.add(b"\x00" + chunk)
    for seed in seeds:
        name = hashlib.sha1(seed).hexdigest()
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(seed)
    print(f"{len(seeds)} seeds from {len(streams)} captured connections in {out_dir}")
    if not seeds:
        sys.exit("no seeds: is captured_requests.txt empty?")


main()
