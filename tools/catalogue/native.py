"""Texts that come from native code: HotSpot's fatal-error and OutOfMemoryError texts (the strings of libjvm.so,
selected by the patterns of sources.yaml) and the operating system's error strings that Java surfaces in
IOException messages (strerror, as this machine's C library words them)."""

from __future__ import annotations

import errno
import os
import re
import subprocess
from pathlib import Path

from . import template as tpl
from .candidate import Candidate

C_FORMAT = re.compile(r"%[-#+ 0]*\d*(?:\.\d+)?(?:hh|h|ll|l|z|j|t|L|I64)?[diouxXeEfgGcspn%]|%#?0?\d*l?x")


def from_printf(text: str) -> tpl.Template:
    parts: list[tpl.Part] = []
    last = 0
    for match in C_FORMAT.finditer(text):
        parts.append(text[last : match.start()])
        parts.append("%" if match.group() == "%%" else tpl.HOLE)
        last = match.end()
    parts.append(text[last:])
    return tpl.normalise(parts)


def binary_strings(path: Path, minimum: int = 8) -> list[str]:
    """The printable strings of a binary (binutils `strings`), in file order."""
    out = subprocess.run(["strings", "-n", str(minimum), str(path)], capture_output=True, text=True, check=True)
    return out.stdout.splitlines()


def read_hotspot(libjvm: Path, label: str, select: list[dict], origin: str = "hotspot") -> list[Candidate]:
    """The strings of libjvm.so (or another of the JDK's native libraries, `origin` naming what writes them) that
    a `select` item's `pattern` matches (its first group, when it has one: the linker merges a short string into
    the tail of a longer one, so `Metaspace` is only found as the end of `Purge Metaspace`); its `prefix` is
    printed before the string in a log (an OutOfMemoryError's reason follows `java.lang.OutOfMemoryError: `), its
    `level` and `cls` say how."""
    found = []
    seen: set[str] = set()
    strings = binary_strings(libjvm)
    for item in select:
        pattern = re.compile(item["pattern"])
        for text in strings:
            match = pattern.search(text.strip())
            if match is None:
                continue
            text = match.group(1) if pattern.groups else text.strip()
            if text in seen:
                continue
            seen.add(text)
            shown = text.lstrip("#").strip()
            template = tpl.normalise((item.get("prefix", ""), *from_printf(shown)))
            found.append(Candidate("message", text, template, item.get("cls"), item.get("level"),
                                   item.get("origin", origin), f"{label}!{libjvm.name}"))  # fmt: skip
    return found


def read_errno(label: str) -> list[Candidate]:
    """strerror() of every errno this platform defines: the tail of `java.io.IOException: No space left on device`."""
    found = []
    for code in sorted(errno.errorcode):
        text = os.strerror(code)
        if text.startswith("Unknown error"):
            continue
        found.append(Candidate("message", text, (text,), None, None, f"errno.{errno.errorcode[code]}",
                               f"{label} strerror({errno.errorcode[code]})"))  # fmt: skip
    return found
