"""Writes exact bytes to stdout and stderr for the per-rank log file tests (no torch needed).

--pattern NAME selects what: `long` (a 300 KiB line, then binary bytes with NUL, then a last line
without a newline), `rank` (a line naming the rank on each stream), `nul-error` (an error file whose
message holds a NUL byte, a stderr line with one, exit 3), `raw-error` (an error file that is
not valid JSON: a raw NUL and bytes that are not UTF-8, exit 3)."""
import json
import os
import sys


def payload(stream_name):
    rank = os.environ.get("RANK", "?")
    long_line = (f"{stream_name} rank {rank} " + "x" * (300 * 1024)).encode() + b"\n"
    binary = b"bin\x00ary \xff\xfe\x01 bytes\n"
    last = f"{stream_name} rank {rank} last line without newline".encode()
    return long_line + binary + last


def main():
    pattern = sys.argv[sys.argv.index("--pattern") + 1]
    rank = os.environ.get("RANK", "?")
    if pattern == "long":
        for fd, name in ((1, "out"), (2, "err")):
            data = payload(name)
            # in uneven pieces, as a real program's writes arrive
            for i in range(0, len(data), 70001):
                os.write(fd, data[i:i + 70001])
    elif pattern == "rank":
        os.write(1, f"out from rank {rank}\n".encode())
        os.write(2, f"err from rank {rank}\n".encode())
    elif pattern == "raw-error":
        # not valid JSON: a raw NUL and bytes that are not UTF-8 (a torn or foreign writer)
        with open(os.environ["TORCHELASTIC_ERROR_FILE"], "wb") as f:
            f.write(b'{"message": "RuntimeError: before\x00after the NUL \xff\xfe and the rest"}')
        sys.exit(3)
    elif pattern == "nul-error":
        with open(os.environ["TORCHELASTIC_ERROR_FILE"], "w") as f:
            json.dump({"message": {"message": "RuntimeError: before\u0000after the NUL",
                                   "extraInfo": {"py_callstack": "stack", "timestamp": "0"}}}, f)
        os.write(2, b"stderr before\x00after the NUL\n")
        sys.exit(3)


if __name__ == "__main__":
    main()
