"""A rank that writes what a careless or hostile program writes, for the dashboard's hostile browser
test: once the gate file (argv[1]) exists, a 1 MB line without a newline (in pieces, as a live
page receives it) that goes on only once argv[1] + "-2" exists, then markup that would run script if parsed (argv[2]: the text to put in it), colour
codes, a progress bar's carriage returns, bytes that are not UTF-8, a NUL, metric lines, markup on
stderr, then END-OF-LOG; it fails with an error file whose message is markup too (the job's
reason and its timeline's root cause)."""
import json
import os
import sys
import time

gate, markup = sys.argv[1], sys.argv[2]
out = sys.stdout.buffer
out.write(b"ready\n")
out.flush()


def wait_for(path):
    deadline = time.monotonic() + 120
    while not os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.1)


wait_for(gate)
for _ in range(16):
    out.write(b"x" * 65536)
    out.flush()
    time.sleep(0.05)
out.write(b"MID-LINE")
out.flush()
wait_for(gate + "-2")
out.write(b"\n")
out.write(markup.replace("TAG", "log").encode() + b"\n")
out.write(b"\x1b[1;31mRED\x1b[0m \x1b]0;a window title\x07coloured\n")
out.write(b" 10%|#  |\r 50%|## |\r100%|###|\n")
out.write(b"not UTF-8: \xff\xfe\xc3( and a NUL:\x00.\n")
out.write(b"loss=1.5\nloss=0.5\nloss=" + markup.replace("TAG", "metric").encode() + b"\n")
out.write(b"END-OF-LOG\n")
out.flush()
sys.stderr.write(markup.replace("TAG", "stderr") + "\n")
sys.stderr.flush()
error_file = os.environ.get("TORCHELASTIC_ERROR_FILE")
if error_file:
    with open(error_file, "w") as f:
        json.dump({"message": {"message": "ValueError: " + markup.replace("TAG", "reason"),
                               "extraInfo": {"timestamp": str(int(time.time()))}}}, f)
sys.exit(1)
