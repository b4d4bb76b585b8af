"""Line layouts: how to read a source's lines, kept apart from what to look for in them.

A layout is data (layouts/layouts.yaml, schema schemas/layouts.schema.json): a Java regex for an event's first
line, and how to read its time. The file is checked at load, with file:line for every problem (unknown keys,
a bad or backtracking regex, duplicate ids). Detection runs on a sample of each source on the driver, with the
same regex translated to Python.

The package's own file, once checked, is kept in the user's state folder (userstate.py) under a digest of its
bytes and of the code that checks it: every Spark worker looks its parts' layouts up, and checking the file
there again (the YAML parser, jsonschema's import and the schema) cost each worker 0.1 s of CPU.
"""

from __future__ import annotations

import hashlib
import re
import sys
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import RuleError
from ..knowledge.regexes import checked, python_regex
from ..runtime.userstate import cached, store

if TYPE_CHECKING:
    from importlib.abc import Traversable

FIELDS = ("ts", "level", "logger", "thread", "msg", "host", "uptime")
# what the check of the package's layouts.yaml reads, beside the file: its answer is kept under their digest
CHECKED_BY = ("schemas/layouts.schema.json", "sources/layouts.py", "knowledge/regexes.py", "knowledge/validation.py")

__all__ = ["FIELDS", "Layout", "detect_layout", "layout_by_id", "layout_ids", "load_layouts", "python_regex"]


@dataclass(frozen=True)
class Layout:
    id: str
    header: str  # Java regex, evaluated by Spark
    time_format: str | None
    timed: bool
    year_from_bundle: bool
    fixed_logger: str | None
    utc: bool = False  # times are UTC already (no --timezone shift)
    detect: bool = True  # offered to layout detection (False: only set by flinkdoctor itself)

    @cached_property
    def python_regex(self) -> re.Pattern[str]:
        """Compiled once per layout: detection asks for it per sample line."""
        return python_regex(self.header)

    def group_index(self, name: str) -> int:
        """Index of a named group (0 if absent), for Spark's regexp_extract which takes numbers."""
        return self.python_regex.groupindex.get(name, 0)


def layouts_file() -> Traversable:
    """The package's layouts.yaml, read through importlib.resources: executors may import flinkdoctor from a zip
    shipped with --py-files, where it is no file on disk."""
    return resources.files("flinkdoctor").joinpath("sources/layouts/layouts.yaml")


@cache
def load_layouts(path: Path | Traversable | None = None) -> tuple[Layout, ...]:
    """Every layout of layouts.yaml (or of `path`), checked; raise RuleError listing all problems. The package's
    own layouts come from the user's state folder when that holds them checked for the same bytes and code."""
    key = None if path is not None else _checked_key()
    if key is None:
        return _checked(path or layouts_file())
    kept = cached("layouts", key)
    if isinstance(kept, tuple) and kept and all(type(layout) is Layout for layout in kept):
        return kept
    layouts = _checked(layouts_file())
    store("layouts", key, layouts)
    return layouts


def _checked_key() -> str | None:
    """A digest of the package's layouts.yaml, of the code and schema that check it, and of the Python that
    runs them (its `re` reads the regexes); None when one of them cannot be read (a package without sources)."""
    package = resources.files("flinkdoctor")
    try:
        digest = hashlib.sha256(sys.version.encode("utf-8") + b"\0" + layouts_file().read_bytes())
        for name in CHECKED_BY:
            digest.update(b"\0" + name.encode("utf-8") + b"\0" + package.joinpath(name).read_bytes())
    except OSError:
        return None
    return digest.hexdigest()[:32]


def _checked(path: Path | Traversable) -> tuple[Layout, ...]:
    """The layouts of the file at `path`, checked."""
    import jsonschema

    from ..knowledge.validation import line_of, read_yaml, schema, schema_problems

    problems: list[str] = []
    data, node = read_yaml(str(path), path.read_text(encoding="utf-8"), problems)
    if not problems:
        layout_schema = schema("layouts")
        problems += schema_problems(jsonschema.Draft202012Validator(layout_schema), data, node, str(path))
    if problems:
        raise RuleError("\n".join(problems))
    defaults = {key: spec["default"] for key, spec in layout_schema["items"]["properties"].items() if "default" in spec}
    layouts, seen = [], set()
    for i, raw in enumerate(data):
        where = f"{path}:{line_of(node, [i, 'header'])}: layout {raw['id']}"
        if raw["id"] in seen:
            problems.append(f"{path}:{line_of(node, [i, 'id'])}: layout id {raw['id']!r} is defined twice")
        seen.add(raw["id"])
        regex, problem = checked(raw["header"])
        if problem:
            problems.append(f"{where}: {problem}")
        if regex is None:
            continue
        unknown = set(regex.groupindex) - set(FIELDS)
        if unknown:
            problems.append(f"{where}: unknown named groups {sorted(unknown)} (known: {', '.join(FIELDS)})")
        values = {**defaults, **raw}
        if values["timed"] and not ("time_format" in raw and "ts" in regex.groupindex):
            problems.append(f"{where}: a timed layout needs a ts group and a time_format (or timed: false)")
        layouts.append(
            Layout(
                id=raw["id"],
                header=raw["header"],
                time_format=raw.get("time_format"),
                timed=values["timed"],
                year_from_bundle=values["year_from_bundle"],
                fixed_logger=raw.get("fixed_logger"),
                utc=values["utc"],
                detect=values["detect"],
            )
        )
    if problems:
        raise RuleError("\n".join(problems))
    return tuple(layouts)


def layout_ids() -> tuple[str, ...]:
    return tuple(layout.id for layout in load_layouts())


def layout_by_id(layout_id: str) -> Layout:
    for layout in load_layouts():
        if layout.id == layout_id:
            return layout
    raise KeyError(layout_id)


NEARLY = 0.9  # share of the best layout's matches within which a layout with levels is preferred


def detect_layout(lines: list[str]) -> str:
    """The layout whose header matches most sample lines; 'plain' when no timestamped layout matches any. A layout
    that reads a level wins over one that does not when it matches nearly as many (NEARLY): one damaged header (a
    foreign byte in it) must not hand a log to a layout that reads only its times.

    Layouts are counted in order, and counting stops at a layout with levels that reads every line some layout
    reads: none after it can read more, and of equals the first wins, so the answer is that of counting all. A
    log of a known layout so costs about two matches a line instead of one per layout."""
    sample = [line for line in lines if line.strip()][:400]
    if not sample:
        return "plain"
    offered = _detected()
    readable = sum(1 for line in sample if any(regex.match(line) for _, regex, _ in offered))
    if not readable:
        return "plain"
    counted = []
    for layout, regex, levels in offered:
        hits = sum(1 for line in sample if regex.match(line))
        counted.append((layout, hits, levels))
        if levels and hits == readable:
            break
    most = max(hits for _, hits, _ in counted)
    near = [(layout, hits, levels) for layout, hits, levels in counted if hits >= NEARLY * most]
    best, _, _ = max(near, key=lambda item: (item[2], item[1]))  # first of equals
    return best.id


@cache
def _detected() -> tuple[tuple[Layout, re.Pattern[str], bool], ...]:
    """(layout, its regex, whether it reads a level) of every layout offered to detection, in the file's order."""
    return tuple(
        (layout, layout.python_regex, "level" in layout.python_regex.groupindex)
        for layout in load_layouts()
        if layout.id != "plain" and layout.detect
    )
