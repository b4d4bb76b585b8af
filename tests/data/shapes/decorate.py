"""Decorate a real log the way users paste or collectors ship it (the lines themselves are unchanged):

    quoted     Markdown / e-mail quote marker '> ' in front of every line
    bullets    a Markdown list: '- ' before each log4j header line, its continuation lines indented by two
    table      each line in a table cell: '| ' before, padding and ' |' after
    indented   four spaces before every line (a Markdown code block pasted into a mail)
    kubectl    kubectl logs --prefix --timestamps: '<RFC 3339 nanoseconds> [pod/<pod>/<container>] '

    python decorate.py STYLE SOURCE OUT
"""

import re
import sys

HEADER = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3} ")
STAMP = re.compile(r"^(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}),(\d{3})")


def decorate(style: str, lines: list[str]) -> list[str]:
    width = max(map(len, lines))
    stamp = "1970-01-01T00:00:00.000000000Z"
    out = []
    for line in lines:
        if style == "quoted":
            out.append("> " + line)
        elif style == "bullets":
            out.append(("- " if HEADER.match(line) else "  ") + line)
        elif style == "table":
            out.append(f"| {line.ljust(width)} |")
        elif style == "indented":
            out.append("    " + line)
        elif style == "kubectl":
            m = STAMP.match(line)
            if m:
                stamp = f"{m.group(1)}T{m.group(2)}.{m.group(3)}000000Z"
            out.append(f"{stamp} [pod/flink-session-7d9c5b6f4-x2k8q/flink-main-container] {line}")
    return out


if __name__ == "__main__":
    style, source, target = sys.argv[1:4]
    with open(source, encoding="utf-8") as handle:
        text = handle.read().splitlines()
    with open(target, "w", encoding="utf-8") as handle:
        handle.write("\n".join(decorate(style, text)) + "\n")
