"""Line layouts: how to read a source's lines, kept apart from what to look for in them.

A layout is data (layouts/layouts.yaml): a Java regex for an event's first line, and how to read its time.
Detection runs on a sample of each source on the driver, with the same regex translated to Python.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import yaml

FIELDS = ("ts", "level", "logger", "thread", "msg", "host", "uptime")


@dataclass(frozen=True)
class Layout:
    id: str
    header: str  # Java regex, evaluated by Spark
    time_format: str | None
    timed: bool
    year_from_bundle: bool
    fixed_logger: str | None
    utc: bool = False      # times are UTC already (no --timezone shift)
    detect: bool = True    # offered to layout detection (False: only set by flinkdoctor itself)

    @property
    def python_regex(self) -> re.Pattern:
        return python_regex(self.header)

    def group_index(self, name: str) -> int:
        """Index of a named group (0 if absent), for Spark's regexp_extract which takes numbers."""
        return self.python_regex.groupindex.get(name, 0)


@lru_cache(maxsize=None)
def python_regex(java: str) -> re.Pattern:
    return re.compile(re.sub(r"\(\?<(?=[A-Za-z])", "(?P<", java))


@lru_cache(maxsize=None)
def load_layouts() -> tuple[Layout, ...]:
    text = resources.files("flinkdoctor").joinpath("layouts/layouts.yaml").read_text("utf-8")
    layouts = []
    for raw in yaml.safe_load(text):
        layout = Layout(
            id=raw["id"], header=raw["header"], time_format=raw.get("time_format"),
            timed=raw.get("timed", True), year_from_bundle=raw.get("year_from_bundle", False),
            fixed_logger=raw.get("fixed_logger"), utc=raw.get("utc", False), detect=raw.get("detect", True),
        )
        layout.python_regex  # fail at load on a bad pattern
        layouts.append(layout)
    return tuple(layouts)


def layout_by_id(layout_id: str) -> Layout:
    for layout in load_layouts():
        if layout.id == layout_id:
            return layout
    raise KeyError(layout_id)


def detect_layout(lines: list[str]) -> str:
    """The layout whose header matches most sample lines; 'plain' when no timestamped layout matches any."""
    sample = [line for line in lines if line.strip()][:400]
    if not sample:
        return "plain"
    best, best_hits = "plain", 0
    for layout in load_layouts():
        if layout.id == "plain" or not layout.detect:
            continue
        regex = layout.python_regex
        hits = sum(1 for line in sample if regex.match(line))
        if hits > best_hits:
            best, best_hits = layout.id, hits
    return best
