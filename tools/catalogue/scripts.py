"""Error lines of Flink's bin/ scripts: what `echo` prints on a failure path.

An echo is on a failure path when it writes to stderr (`>&2`, `1>&2`), is marked `[ERROR]` / `[WARN]`, or is
followed in its block by `exit` with a non-zero status. Shell expansions (`$VAR`, `${...}`, `$(...)`) are holes.
Level: `exit` when the script exits after it, else `stderr` (`warn` for `[WARN]`).
"""

from __future__ import annotations

import re
from pathlib import Path

from . import template as tpl
from .candidate import Candidate

ECHO = re.compile(r"""\becho\s+(?:-[en]+\s+)*(?:"((?:[^"\\]|\\.)*)"|'([^']*)')(.*)$""")
EXPANSION = re.compile(r"\$\{[^}]*\}|\$\([^)]*\)|\$[A-Za-z_][A-Za-z0-9_]*|\$[0-9?#@*!$-]")
STDERR = re.compile(r"(?:^|[\s(])(?:1?>&2|>\s*/dev/stderr)")
EXIT = re.compile(r"^\s*exit\s+(?:[1-9]\d*|\$\?|\"?\$\w+\"?)\s*(?:;|$)")
BLOCK_END = re.compile(r"^\s*(?:fi|esac|done|\}|;;)\b|^\s*(?:else|elif)\b")


def shell_template(text: str) -> tpl.Template:
    parts: list[tpl.Part] = []
    last = 0
    for match in EXPANSION.finditer(text):
        parts.append(text[last : match.start()])
        parts.append(tpl.HOLE)
        last = match.end()
    parts.append(text[last:])
    return tpl.normalise(p if p is tpl.HOLE else re.sub(r"\\(.)", r"\1", p) for p in parts)


def read_script(path: Path, label: str) -> list[Candidate]:
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    found = []
    for number, line in enumerate(lines, 1):
        if line.lstrip().startswith("#"):
            continue
        match = ECHO.search(line)
        if not match:
            continue
        text = match.group(1) if match.group(1) is not None else match.group(2)
        to_stderr = bool(STDERR.search(line[: match.start()]) or STDERR.search(match.group(3)))
        exits = False
        for after in lines[number : number + 6]:
            if EXIT.match(after):
                exits = True
                break
            if BLOCK_END.match(after):
                break
        marked = text.lstrip().startswith(("[ERROR]", "[WARN]", "Error", "ERROR"))
        if not (to_stderr or exits or marked):
            continue
        level = "exit" if exits else "warn" if text.lstrip().startswith("[WARN]") else "stderr"
        found.append(Candidate("message", text, shell_template(text), None, level, f"bin/{path.name}",
                               f"{label}bin/{path.name}:{number}"))  # fmt: skip
    return found


def read_scripts(bin_dir: Path, label: str) -> list[Candidate]:
    """Every script of a Flink bin/ folder (shell scripts: *.sh and the extension-less launchers)."""
    found = []
    for path in sorted(bin_dir.iterdir()):
        if path.is_file() and (path.suffix == ".sh" or not path.suffix):
            found += read_script(path, label)
    return found
