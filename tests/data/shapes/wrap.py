"""Wrap a real log the way container runtimes store it (both formats are fixed and documented):

- Docker's json-file logging driver writes one JSON object per line, `{"log": "<line>\\n", "stream": "stdout",
  "time": "<RFC 3339 nanoseconds>"}`; a line longer than the driver's buffer (16 KiB) is cut into several
  objects, each but the last without the trailing "\\n".
- CRI (containerd, CRI-O; what the kubelet reads) writes `<RFC 3339 nanoseconds> <stream> <tag> <line>`, tag `F`
  for a full line and `P` for a partial one that the next entry continues.

The times are taken from the log4j line when it has one (else the last one seen), as the runtime stamps a line
when it receives it. `--part N` cuts lines longer than N characters into partial entries (the runtimes cut at
16 KiB; a smaller N exercises the joining on a small fixture).

    python wrap.py docker|cri SOURCE OUT [--part N]
"""

import json
import re
import sys

STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}),(\d{3})")


def wrap(kind: str, source: str, out: str, part: int) -> None:
    stamp = "1970-01-01T00:00:00.000000000Z"
    with open(source, encoding="utf-8") as lines, open(out, "w", encoding="utf-8") as sink:
        for line in lines:
            line = line.rstrip("\n")
            m = STAMP.match(line)
            if m:
                stamp = f"{m.group(1)}T{m.group(2)}.{m.group(3)}000000Z"
            pieces = [line[i : i + part] for i in range(0, len(line), part)] or [""]
            for k, piece in enumerate(pieces):
                last = k == len(pieces) - 1
                if kind == "docker":
                    record = {"log": piece + ("\n" if last else ""), "stream": "stdout", "time": stamp}
                    sink.write(json.dumps(record, separators=(",", ":")) + "\n")
                else:
                    sink.write(f"{stamp} stdout {'F' if last else 'P'} {piece}\n")


if __name__ == "__main__":
    args = sys.argv[1:]
    size = 16 * 1024
    if "--part" in args:
        i = args.index("--part")
        size = int(args[i + 1])
        del args[i : i + 2]
    wrap(args[0], args[1], args[2], size)
