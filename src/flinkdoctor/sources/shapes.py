"""Shapes: logs wrapped, structured or decorated in ways no layout reads, read into plain text at staging.

Users ship logs as container runtimes wrote them (Docker json-file, CRI), as JSON lines or logfmt, behind a
collector's prefix, or pasted with quote markers, bullets, table or box borders and indentation, hard-wrapped by
a mail archive or run together by a CI console, or as a Kubernetes resource in YAML. Rather than teach every
layout every shape, staging reads such a file once into a copy a layout reads: a wrapper is taken off (CRI
partial lines joined), lines run together are cut apart, prefixes are stripped, hard-wrapped lines are joined,
a structured record becomes one 'shape-record' header line followed by its message's further lines and its stack
trace (escaped `\\n\\t` unescaped), a resource becomes a line per field (kubernetes.py). The shape is decided from
the head alone (`plan`), the copy is written streaming (`normalise`), and a `LineMap` keeps, per copied line, the
line of the original file it came from, so evidence cites the original. Files in no unusual shape cost the head
check and nothing more; a rolled file of a family read plainly costs only `reads_as`. The shapes themselves are
data (layouts/shapes.yaml). Which shapes real pastes take, and how well they are read, is measured by the
shape-invariance suite (tests/metamorphic).
"""

from __future__ import annotations

import json
import re
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..errors import RuleError
from ..jsondata import JSONObject
from ..knowledge.regexes import checked, sre, sre_parse
from ..knowledge.validation import read_yaml, schema, schema_problems
from .kubernetes import is_resource, resource_lines
from .layouts import load_layouts

SAMPLE_LINES = 400  # head lines the shape is decided on
MEMBER_LINES = 20  # first lines of a rolled file checked against its family's layout (reads_as)
MAX_JOIN_LINES = 200  # a record (CRI/Docker partial lines, a terminal-wrapped JSON object) spans at most this many
MAX_JOIN_BYTES = 4 * 1024 * 1024
MAX_ROUNDS = 4  # strips applied one after another at most (a quote marker, then indentation, ...)
DECORATION_SHARE = 0.8  # a strip that fits this share of lines is taken even when no layout reads more
# a hard wrap that reads no more headers is still joined when lines fill up to a terminal's or mail's width
MAX_WRAP_WIDTH, WRAP_SLACK, WRAP_SHARE = 240, 20, 0.5
MAIL_WIDTH = (70, 80)  # the widths mail clients and list archives wrap plain text at
RECORD_LAYOUT, UNTIMED_RECORD_LAYOUT = "shape-record", "shape-record-untimed"
TRACE_LINE = re.compile(r"^(?:\s*at [\w$.<>/\[\]-]+\(|Caused by: |Suppressed: |\s*\.\.\. \d+ more)")
EXCEPTION_HEAD = re.compile(r"^[a-z][\w$]*(?:\.[\w$]+)*\.[\w$]*(?:Exception|Error|Throwable)\b")  # java.lang.Error too
# kubectl describe's event table: its header row, and a row (the event's type first)
EVENT_TABLE = re.compile(r"^[ \t]+Type[ \t]+Reason[ \t]+Age[ \t]+From[ \t]+Message[ \t]*$")
EVENT_ROW = re.compile(r"^[ \t]+(?:Warning|Normal)[ \t]{2,}\S")
RULE_LINE = re.compile(r"^[\s─━═┌┐└┘├┤┬┴┼╭╮╰╯+=_-]*$")  # a box's or table's border, or blank
# the start of a log header: a date (ISO, Spark's yy/MM/dd, syslog's), after a bracketed level for some layouts;
# a bracketed time (JVM unified logging, dmesg)
DATED = re.compile(
    r"^(?:\[[A-Z]+\s*\]\s+)?(?:\d{4}-\d\d-\d\d[ T]\d\d:|\d\d/\d\d/\d\d \d\d:|[A-Z][a-z]{2} [ \d]\d \d\d:)"
    r"|^\[(?:\d{4}-\d\d-\d\dT\d\d:|\s*\d+\.\d+s?\])"
)
BORDER = re.compile(r"^[ \t]*[─━═┌┐└┘├┤┬┴┼╭╮╰╯|+-]*[─━═┌┐└┘├┤┬┴┼╭╮╰╯-][─━═┌┐└┘├┤┬┴┼╭╮╰╯|+-]*[ \t]*$")
COLUMNS = re.compile(r"\S(?: {2,}|\t)\S")  # blanks that align columns inside a line
CAUSED = re.compile(r"^\s*Caused by: ")
CAUSE_ALONE = re.compile(r"^\s*(?:Caused by|Suppressed):\s*$")  # its exception was wrapped onto the next line
PIECE = "\x00"  # staging.PIECE, as text: a row that continues an over-long line


@dataclass(frozen=True)
class Strip:
    id: str
    prefix: re.Pattern[str]
    suffix: re.Pattern[str] | None = None
    decoration: bool = False  # carries nothing (no time, no source): taken off text in no layout when it fits

    def apply(self, line: str) -> str:
        m = self.prefix.match(line)
        if m is None:
            return line
        stripped = line[m.end() :]
        return self.suffix.sub("", stripped, count=1) if self.suffix is not None else stripped


@dataclass(frozen=True)
class Split:
    id: str
    marker: re.Pattern[str]  # what stands before each line that was run together with others


@dataclass(frozen=True)
class Shapes:
    cri: re.Pattern[str]
    docker_keys: tuple[str, ...]
    fields: dict[str, tuple[str, ...]]
    levels: dict[str, str]
    strips: tuple[Strip, ...]
    splits: tuple[Split, ...] = ()
    localized: dict[str, str] | None = None  # an error text in another language -> the English one
    resource: re.Pattern[str] | None = None  # a Kubernetes resource's top-level key (kubectl get -o yaml)
    resource_exception: dict[str, str] | None = None  # the field names of an exception object held as JSON


def _compiled(path: Path, where: str, regex: str) -> re.Pattern[str]:
    """A shape's regex, refused (with where it is) when it is bad or can backtrack catastrophically."""
    compiled, problem = checked(regex)
    if problem or compiled is None:
        raise RuleError(f"{path}: {where}: {problem}")
    return compiled


@cache
def load_shapes() -> Shapes:
    import jsonschema

    path = Path(str(resources.files("flinkdoctor").joinpath("sources/layouts/shapes.yaml")))
    problems: list[str] = []
    data, node = read_yaml(str(path), path.read_text("utf-8"), problems)
    if data is not None:
        problems += schema_problems(jsonschema.Draft202012Validator(schema("shapes")), data, node, str(path))
    if problems:
        raise RuleError("\n".join(problems))
    records = dict(data["records"])
    levels = {str(k).lower(): str(v) for k, v in records.pop("levels").items()}
    strips = tuple(
        Strip(
            s["id"],
            _compiled(path, f"strip {s['id']}", s["prefix"]),
            _compiled(path, f"strip {s['id']}", s["suffix"]) if s.get("suffix") else None,
            bool(s.get("decoration")),
        )
        for s in data["strips"]
    )
    splits = tuple(Split(s["id"], _compiled(path, f"split {s['id']}", s["marker"])) for s in data.get("splits", ()))
    resource = data["documents"]["kubernetes-yaml"]
    localized = {str(k): str(v) for table in data["localized"]["messages"].values() for k, v in table.items()}
    return Shapes(
        localized=localized,
        resource=_compiled(path, "document kubernetes-yaml", resource["detect"]),
        resource_exception={key: str(value) for key, value in resource["exception"].items()},
        cri=_compiled(path, "wrapper cri", data["wrappers"]["cri"]["regex"]),
        docker_keys=tuple(data["wrappers"]["docker-json"]["keys"]),
        fields={name: tuple(map(str, names)) for name, names in records.items()},
        levels=levels,
        strips=strips,
        splits=splits,
    )


@dataclass(frozen=True)
class Plan:
    """How to read a file, in this order: a wrapper to take off, lines run together to split, strips to apply,
    lines hard-wrapped at a width to join, whether lines are records."""

    wrapper: str | None = None  # 'cri' | 'docker-json'
    records: str | None = None  # 'json' | 'logfmt'
    strips: tuple[str, ...] = ()  # strip ids in order; 'indent:N' removes N leading blanks
    timed: bool = True  # records carry times
    split: str | None = None  # a split id: lines run together behind a marker each
    unwrap: int | None = None  # lines hard-wrapped at this many columns, joined back
    localized: bool = False  # error texts in another language, read with the English after them
    document: str | None = None  # 'kubernetes-yaml': a resource read field by field (kubernetes.py)
    event_table: bool = False  # kubectl describe's event table: each row's message on a line of its own
    wrap_first: bool = False  # the hard wrap is joined before the strips are applied

    @property
    def layout(self) -> str | None:
        """The layout of the copy when it is fixed by the shape (records), else None: detect it."""
        if self.records is None:
            return None
        return RECORD_LAYOUT if self.timed else UNTIMED_RECORD_LAYOUT

    def describe(self) -> str:
        parts = [p for p in (self.wrapper, self.document, self.split and f"split {self.split}") if p]
        parts += [f"stripped {s}" for s in self.strips]
        parts += [f"unwrapped at {self.unwrap} columns"] if self.unwrap else []
        parts += ["localized messages"] if self.localized else []
        parts += ["kubectl events"] if self.event_table else []
        return ", ".join(parts + ([f"{self.records} records"] if self.records else []))


class LineMap:
    """Line of the copy -> line of the original, as runs: a run either advances with the copy (one line each)
    or stays on one original line (a record read into several lines). Memory grows with the runs, not lines."""

    def __init__(self) -> None:
        self.starts = array("q")  # first copied line of each run (1-based)
        self.origins = array("q")  # its original line
        self.steps = array("b")  # 1: advances with the copy; 0: stays
        self.copied = 0  # lines written
        self.original_lines = 0  # lines read

    def add(self, original: int) -> None:
        self.copied += 1
        if self.starts:
            at = self.copied - self.starts[-1]
            if self.origins[-1] + self.steps[-1] * at == original:
                return
            if at == 1 and self.steps[-1] == 1 and self.origins[-1] == original:
                self.steps[-1] = 0
                return
        self.starts.append(self.copied)
        self.origins.append(original)
        self.steps.append(1)

    def original(self, copied: int) -> int:
        """The original line of copied line `copied` (1-based); lines past the end map past the last."""
        i = bisect_right(self.starts, copied) - 1
        if i < 0:
            return copied
        return self.origins[i] + self.steps[i] * (copied - self.starts[i])


# -- detection -------------------------------------------------------------------------------------------------


def _sample(head: bytes) -> list[str]:
    """The head's first SAMPLE_LINES lines that are not blank, a last line cut by the head's size left out."""
    lines = head.decode("utf-8", "replace").splitlines()
    if len(lines) > 1 and not head.endswith(b"\n"):
        lines = lines[:-1]  # cut by the head's size
    return [line for line in lines if line.strip()][:SAMPLE_LINES]


def plan(head: bytes) -> Plan | None:
    """The shape of a file from its head (UTF-8, as staged), or None when it is read as it is."""
    lines = _sample(head)
    if not lines:
        return None
    shapes = load_shapes()
    wrapper = _wrapper(lines, shapes)
    if wrapper is not None:
        lines = [text for _, text in _unwrap(wrapper, enumerate(lines, 1), shapes)]
    records, timed = _records(lines, shapes)
    if records is not None:
        return Plan(wrapper, records, (), timed)
    if shapes.resource is not None and is_resource(lines, shapes.resource):
        return Plan(wrapper, document="kubernetes-yaml")
    split = _split_of(lines, shapes)
    if split is not None:
        lines = [text for _, text in _split(split, enumerate(lines, 1), shapes)]
    strips, width, wrap_first, lines = _line_plan(lines, shapes)
    records, timed = _records(lines, shapes)
    localized = _localized_in(lines, shapes)
    table = _event_table(lines)
    if wrapper is None and split is None and not strips and width is None and not localized and not table:
        return None
    split_id = split.id if split else None
    return Plan(
        wrapper, records, strips, timed, split_id, width, localized=localized, event_table=table, wrap_first=wrap_first
    )


def reads_as(head: bytes, header: re.Pattern[str]) -> bool:
    """Whether a file plainly reads as a log of the layout `header` (its header regex) with no shape to take off:
    its first MEMBER_LINES lines are each that layout's header or a stack trace line (no prefix, wrapper, record,
    or hard-wrapped remainder), and no line of the sample holds lines run together, a localized error text or an
    event table. The check for a rolled file (`jobmanager.log.3`) of a family whose first file was read so
    (ingest): cheaper than `plan` and detection, and False (read in full) whenever it is not plain."""
    lines = _sample(head)
    first = lines[:MEMBER_LINES]
    if not first or not header.match(first[0]):
        return False
    if not all(header.match(line) or TRACE_LINE.match(line) or EXCEPTION_HEAD.match(line) for line in first):
        return False
    shapes = load_shapes()
    return not (_split_of(lines, shapes) is not None or _localized_in(lines, shapes) or _event_table(lines))


def _event_table(lines: list[str]) -> bool:
    """Whether a line is the header of `kubectl describe`'s event table (a line without its word Reason is not:
    told by a substring test, far faster than the regex on every line of 100,000 files' heads)."""
    return any(EVENT_TABLE.match(line) for line in lines if "Reason" in line)


def _line_plan(lines: list[str], shapes: Shapes) -> tuple[tuple[str, ...], int | None, bool, list[str]]:
    """(strips, wrap width, whether the wrap is joined before the strips, the sample read so): decoration put
    on after the wrap (a box around folded lines) comes off first, decoration the wrap cut through (a mail
    archive wrapping prefixed lines) after; whichever reads more of the sample."""
    strip_by_id = {s.id: s for s in shapes.strips}

    def stripped(sample: list[str], strips: tuple[str, ...]) -> list[str]:
        for strip_id in strips:
            sample = [_apply(strip_id, strip_by_id.get(strip_id), line) for line in sample]
        return [line for line in sample if not BORDER.match(line)] if "table" in strips else sample

    strips = _strips(lines, shapes)
    after = stripped(lines, strips)
    width = _wrap_width(after, framed="table" in strips)
    best = (strips, width, False, after if width is None else [t for _, t in _unwrapped(width, enumerate(after, 1))])
    first = width if not strips else _wrap_width(lines)  # nothing stripped: the same sample, the same width
    if first is not None:
        joined = [t for _, t in _unwrapped(first, enumerate(lines, 1))]
        later = _strips(joined, shapes)
        other = (later, first, True, stripped(joined, later))
        if _score(other[3]) > _score(best[3]):
            best = other
    return best


def _wrapper(lines: list[str], shapes: Shapes) -> str | None:
    if not (shapes.cri.match(lines[0]) or lines[0].startswith('{"')):  # the first line tells, cheaply
        return None
    if _share(lines, lambda line: shapes.cri.match(line) is not None) >= 0.8:
        return "cri"
    if _share(lines, lambda line: _docker(line, shapes) is not None) >= 0.8:
        return "docker-json"
    return None


def _share(lines: list[str], test: Callable[[str], bool]) -> float:
    return sum(1 for line in lines if test(line)) / len(lines) if lines else 0.0


def _records(lines: list[str], shapes: Shapes) -> tuple[str | None, bool]:
    """('json' | 'logfmt' | None, whether records carry a time)."""
    lines = [line for line in lines if line.strip()] or [""]
    if lines[0].lstrip().startswith("{"):  # records, also when a terminal wrapped them over several lines
        read = list(_json_records(enumerate(lines, 1), shapes))
        records = [record for _, record, _ in read if record is not None]
        if records and len(read) - len(records) <= 0.5 * len(lines):
            return "json", any(_first(record, shapes.fields["time"]) is not None for record in records)
    if _logfmt(lines[0]) is None:
        return None, True
    parsed = [_logfmt(line) for line in lines]
    good = [p for p in parsed if p and _first(p, shapes.fields["message"]) is not None]
    if len(good) >= 0.5 * len(lines):
        return "logfmt", any(_first(p, shapes.fields["time"]) is not None for p in good)
    return None, True


def _score(lines: list[str]) -> int:
    """How readable lines are: headers of the known layout that reads most of them (one that has levels or a
    wall-clock time; a header with a level or a logger counts twice), structured records (twice), and stack trace
    lines."""
    best = 0
    for layout in load_layouts():
        groups = layout.python_regex.groupindex
        if layout.detect and ("level" in groups or layout.timed):
            weight = 2 if "level" in groups or "logger" in groups else 1  # a time alone reads less of a line
            best = max(best, weight * sum(1 for line in lines if layout.python_regex.match(line)))
    trace = sum(1 for line in lines if TRACE_LINE.match(line) or EXCEPTION_HEAD.match(line))
    return best + trace + 2 * _record_lines(lines)


def _record_lines(lines: list[str]) -> int:
    """Lines that are (part of) a structured record: a JSON object with a message, also one a terminal wrapped
    over several lines, or logfmt pairs with a message."""
    shapes = load_shapes()
    others = [line for _, record, line in _json_records(enumerate(lines, 1), shapes) if record is None]
    logfmt = [pairs for line in others if "=" in line and (pairs := _logfmt(line)) is not None]
    return len(lines) - len(others) + sum(1 for pairs in logfmt if _first(pairs, shapes.fields["message"]) is not None)


def _strips(lines: list[str], shapes: Shapes) -> tuple[str, ...]:
    """The strips that make the sample more readable, greedily, best first. A strip that leaves it as readable
    is taken too when it fits nearly every line (decoration: text without a known layout in a quote or a box);
    when no strip alone reads more, two in a row are tried (a bullet before a quote marker)."""
    chosen: list[str] = []
    score: int | None = None  # scored only when some strip fits a line: most files pay nothing more
    for _ in range(MAX_ROUNDS):
        score = _score(lines) if score is None and _fitting(lines, shapes) else score
        if score is None:
            break
        best, stones = _best_strip(lines, shapes, score)
        if best is None:
            pairs = [
                (first, found)
                for first, stone in stones
                if (found := _best_strip(stone, shapes, score)[0]) is not None and found[0] > score
            ]
            if not pairs:
                break
            first, best = max(pairs, key=lambda pair: pair[1][:2])
            chosen.append(first)
        score, _, strip_id, lines = best
        chosen.append(strip_id)
    return tuple(chosen)


def _candidates(lines: list[str], shapes: Shapes) -> list[tuple[str, Strip | None]]:
    indent = min(_indent(line) for line in lines)
    candidates: list[tuple[str, Strip | None]] = [(f"indent:{indent}", None)] if indent else []
    return candidates + [(s.id, s) for s in shapes.strips]  # on a tie the first wins: plain indentation first


def _fitting(lines: list[str], shapes: Shapes) -> bool:
    """Whether some strip fits some line (indentation fits when every line is indented)."""
    if min(_indent(line) for line in lines):
        return True
    prefixes = _any_prefix(shapes.strips)
    if prefixes is None:
        return any(strip.prefix.match(line) for strip in shapes.strips for line in lines)
    return any(prefixes.match(line) for line in lines)


@cache
def _any_prefix(strips: tuple[Strip, ...]) -> re.Pattern[str] | None:
    """The strips' prefixes as one alternation, which matches at a line's start exactly when one of them does; None
    when they cannot be joined so (a backreference the alternation would renumber, a flag of their own): then each
    is tried on its own."""
    if any(re.search(r"\(\?P=|\\[1-9]", strip.prefix.pattern) for strip in strips):
        return None
    unnamed = (re.sub(r"\(\?P<\w+>", "(", strip.prefix.pattern) for strip in strips)  # names may repeat
    try:
        return re.compile("|".join(f"(?:{pattern})" for pattern in unnamed) or "(?!)")
    except re.error:
        return None


def _best_strip(
    lines: list[str], shapes: Shapes, score: int
) -> tuple[tuple[int, bool, str, list[str]] | None, list[tuple[str, list[str]]]]:
    """(the strip that reads most, as (score, fits everywhere, id, lines), or None; the strips that fit some
    lines without reading more, as (id, lines): stepping stones for a second strip)."""
    best: tuple[int, bool, str, list[str]] | None = None
    stones: list[tuple[str, list[str]]] = []
    framed = [line for line in lines if not RULE_LINE.match(line)] or lines
    for strip_id, strip in _candidates(lines, shapes):
        fits = len(framed) if strip is None else sum(1 for line in framed if strip.prefix.match(line))
        if not fits:
            continue
        stripped = [_apply(strip_id, strip, line) for line in lines]
        new = _score(stripped)
        everywhere = (strip is None or strip.decoration) and fits >= DECORATION_SHARE * len(framed)
        if (new > score or (new == score and everywhere)) and (best is None or (new, everywhere) > best[:2]):
            best = (new, everywhere, strip_id, stripped)
        elif new == score:
            stones.append((strip_id, stripped))
    return best, stones


def _split_of(lines: list[str], shapes: Shapes) -> Split | None:
    """The split whose marker stands several times on the sample's lines (lines run together), if any."""
    for split in shapes.splits:
        needed = _needed_char(split.marker)
        markers = sum(len(split.marker.findall(line)) for line in lines if needed is None or needed in line)
        if markers >= 2 and markers > len(lines):
            return split
    return None


@cache
def _needed_char(pattern: re.Pattern[str]) -> str | None:
    """A character every match of the regex holds (a literal in its top-level sequence), or None: a line without
    it cannot match, which a substring test tells far faster than the regex engine."""
    if pattern.flags & re.IGNORECASE:
        return None
    for op, value in sre_parse.parse(pattern.pattern, pattern.flags):
        if op is sre.LITERAL:
            return chr(value)
    return None


def _split(split: Split, numbered: Iterable[tuple[int, str]], shapes: Shapes) -> Iterator[tuple[int, str]]:
    """Each line cut before every marker, the markers dropped; text before the first marker kept as a line."""
    for number, line in numbered:
        parts = split.marker.split(line)
        if parts[0].strip():
            yield number, parts[0]
        for part in parts[1:]:
            yield number, part


def _wrap_width(lines: list[str], framed: bool = False) -> int | None:
    """The width the sample's lines were hard-wrapped at (a mail archive, a terminal UI), when joining them back
    makes it more readable, or when nearly every join is of a line filled up to a terminal's or mail's width; else
    None. In greedy-wrapped text no line with a blank inside is longer than the width, and a line whose next
    line's first word would have fitted on it was not broken there."""
    inner = [len(line.rstrip()) for line in lines if " " in line.strip()]
    if not inner:
        return None
    width = max(inner)
    joined = list(_unwrapped(width, enumerate(lines, 1)))
    if len(joined) == len(lines):
        return None
    before, after = _score(lines), _score([text for _, text in joined])
    if after > before:
        return width
    starts = {number for number, _ in joined}
    broken = [lines[i - 1] for i in range(1, len(lines)) if i + 1 not in starts]  # a line the next was joined to
    if any(len(COLUMNS.findall(lines[i].strip())) >= 2 for i in range(1, len(lines)) if i + 1 not in starts):
        return None  # the joined lines are a table's rows (aligned columns), not a text's wrapped remainder
    filled = sum(1 for line in broken if len(line) >= width - WRAP_SLACK or DATED.match(line))
    # a fold in a box (whose width is a hard edge), or several at a mail archive's width
    several = len(broken) >= 2 or all(EXCEPTION_HEAD.match(line) or CAUSED.match(line) for line in broken)
    edge = framed or several and MAIL_WIDTH[0] <= width <= MAIL_WIDTH[1]  # an exception's message: once is enough
    accepted = after == before and width <= MAX_WRAP_WIDTH and filled >= WRAP_SHARE * len(broken) and edge
    return width if accepted else None


def _starts_line(line: str) -> bool:
    """A line that begins a log line of its own: a header (or the start of one), a stack trace line, an
    exception."""
    return bool(DATED.match(line) or TRACE_LINE.match(line) or EXCEPTION_HEAD.match(line))


def _header(line: str) -> bool:
    """A whole header of a layout that reads more than a time (a broken one lacks its message)."""
    return any(regex.match(line) for regex in _header_regexes())


@cache
def _header_regexes() -> tuple[re.Pattern[str], ...]:
    return tuple(
        layout.python_regex
        for layout in load_layouts()
        if layout.detect and layout.timed and {"level", "logger"} & set(layout.python_regex.groupindex)
    )


def _unwrapped(width: int, numbered: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """Lines hard-wrapped at `width` joined back: a line continues the one before when its first word did not
    fit after it and it begins no log line of its own; a line that is one word cut at the width is joined
    without a blank. Within MAX_JOIN_* per joined line."""
    pending: tuple[int, str] | None = None
    parts, last = 0, ""  # physical lines joined so far, and the last of them
    for number, line in numbered:
        if pending is not None:
            first, text = pending
            word = line.split(None, 1)[0] if line.strip() else ""
            if (  # the cheap tests first: most lines of a log begin a line of their own
                word
                and last.strip()
                and line[:1] not in " \t"
                and parts < MAX_JOIN_LINES
                and len(text) < MAX_JOIN_BYTES
                and (not _starts_line(line) or CAUSE_ALONE.match(last))
                and not RULE_LINE.match(last)
                and not RULE_LINE.match(line)
                and (len(last) + 1 + len(word) > width or (DATED.match(text) and not _header(text)))  # broken
            ):
                cut_word = len(last) == width and " " not in last.strip()  # a word folded at the width
                pending, parts, last = (first, text + ("" if cut_word else " ") + line), parts + 1, line
                continue
            yield pending
        pending, parts, last = (number, line), 1, line
    if pending is not None:
        yield pending


def _apply(strip_id: str, strip: Strip | None, line: str) -> str:
    if strip is not None:
        return strip.apply(line)
    n = int(strip_id.split(":", 1)[1])
    return line[min(n, _indent(line)) :]


def _indent(line: str) -> int:
    """The blanks (spaces, tabs) the line starts with."""
    return len(line) - len(line.lstrip(" \t"))


# -- reading ---------------------------------------------------------------------------------------------------


def _docker(line: str, shapes: Shapes) -> JSONObject | None:
    if not line.startswith("{"):
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if isinstance(record, dict) and isinstance(record.get("log"), str) and set(shapes.docker_keys) <= set(record):
        return record
    return None


def _unwrap(wrapper: str, numbered: Iterable[tuple[int, str]], shapes: Shapes) -> Iterator[tuple[int, str]]:
    """Inner lines of a container runtime's log, each with the original line it starts on. Partial lines (CRI
    'P', a Docker log without its final newline) are joined with what follows, within MAX_JOIN_*; a line the
    wrapper does not fit is kept as it is."""
    parts: list[str] = []
    first = 0
    for number, line in numbered:
        if wrapper == "cri":
            m = shapes.cri.match(line)
            text, partial = (m.group("line"), "P" in m.group("tag").split(":")) if m else (line, False)
        else:
            record = _docker(line, shapes)
            text = record["log"] if record else line
            partial = record is not None and not text.endswith("\n")
            text = text[:-1] if text.endswith("\n") else text
        if not parts:
            first = number
        parts.append(text)
        if partial and len(parts) < MAX_JOIN_LINES and sum(map(len, parts)) < MAX_JOIN_BYTES:
            continue
        for inner in "".join(parts).split("\n"):  # a Docker log may hold several lines
            yield first, inner.removesuffix("\r")
        parts = []
    if parts:
        yield first, "".join(parts)


def _first(record: JSONObject, names: Iterable[str]) -> Any:
    for name in names:
        value = record.get(name)
        if value is None and "." in name:
            value = record
            for key in name.split("."):
                value = value.get(key) if isinstance(value, dict) else None
        if value is not None and value != "":
            return value
    return None


def _json_records(numbered: Iterable[tuple[int, str]], shapes: Shapes) -> Iterator[tuple[int, JSONObject | None, str]]:
    """(original line, record or None, text) per JSON record or other line. A line may hold several records
    (a terminal pasted them side by side); an object cut by a terminal's wrapping is joined with the lines
    after it, within MAX_JOIN_*."""
    decoder = json.JSONDecoder()
    pending: list[tuple[int, str]] = []
    for number, line in numbered:
        if pending:
            pending.append((number, line))
            text = "".join(t for _, t in pending)
        elif line.lstrip().startswith("{"):
            pending, text = [(number, line)], line
        else:
            yield number, None, line
            continue
        records, complete = _decode_all(decoder, text, shapes)
        if complete and records is not None:
            for record in records:
                yield pending[0][0], record, ""
            pending = []
        elif len(pending) >= MAX_JOIN_LINES or len(text) >= MAX_JOIN_BYTES or records is None:
            for n, t in pending:  # not records after all: kept as they are
                yield n, None, t
            pending = []
    for n, t in pending:
        yield n, None, t


def _decode_all(decoder: json.JSONDecoder, text: str, shapes: Shapes) -> tuple[list[JSONObject] | None, bool]:
    """(records, complete): every JSON object of `text`; complete False when the text ends inside one (join
    more), records None when it is not JSON records at all."""
    records: list[JSONObject] = []
    at, end = 0, len(text)
    while True:
        while at < end and text[at] in " \t\r":
            at += 1
        if at >= end:
            return records, True
        try:
            record, at = decoder.raw_decode(text, at)
        except ValueError as err:
            cut = isinstance(err, json.JSONDecodeError) and err.pos >= end - 1 or "Unterminated" in str(err)
            return ([], False) if cut else (None, False)
        if not isinstance(record, dict) or _first(record, shapes.fields["message"]) is None:
            return None, False
        records.append(record)


LOGFMT_PAIR = re.compile(r'\s*([\w.@-]+)=("(?:[^"\\]|\\.)*"|[^\s"]*)')


def _logfmt(line: str) -> dict[str, str] | None:
    """key=value pairs of a logfmt line (Go logrus and friends), or None when the line is not logfmt."""
    record: dict[str, str] = {}
    at, end = 0, len(line.rstrip())
    while at < end:
        m = LOGFMT_PAIR.match(line, at)
        if m is None:
            return None
        key, value = m.groups()
        if value.startswith('"'):
            try:
                value = json.loads(value)
            except ValueError:
                value = value[1:-1]
        record[key] = value
        at = m.end()
    return record if len(record) >= 2 else None


def _time(value: Any) -> str | None:
    """A record's time as UTC 'yyyy-MM-ddTHH:mm:ss.SSS' (naive times taken as UTC), or None."""
    try:
        if isinstance(value, dict):  # log4j JsonLayout: {"epochSecond": s, "nanoOfSecond": n}
            stamp = datetime.fromtimestamp(
                int(value["epochSecond"]) + int(value.get("nanoOfSecond", 0)) / 1e9, timezone.utc
            )
        elif isinstance(value, int | float) and not isinstance(value, bool):
            seconds = value / 1e9 if value > 1e16 else value / 1e3 if value > 1e11 else value
            stamp = datetime.fromtimestamp(seconds, timezone.utc)
        elif isinstance(value, str):
            stamp = datetime.fromisoformat(value.strip().replace(",", ".", 1) if "T" not in value else value.strip())
            stamp = stamp.astimezone(timezone.utc) if stamp.tzinfo else stamp
        else:
            return None
    except (ValueError, KeyError, TypeError, OverflowError, OSError):
        return None
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}"


def _trace(value: Any) -> list[str]:
    """Stack trace lines of a record's trace field: a string (escaped newlines already decoded by JSON), or
    log4j JsonLayout's object / a list of frames."""
    if isinstance(value, str):
        return value.splitlines()
    frames = value
    head = []
    if isinstance(value, dict):
        name, message = value.get("name") or value.get("className"), value.get("message")
        head = [f"{name}: {message}" if message else str(name)] if name else []
        frames = value.get("extendedStackTrace") or value.get("stackTrace") or []
        if isinstance(frames, str):
            return head + frames.splitlines()
    lines = list(head)
    for frame in frames if isinstance(frames, list) else []:
        if isinstance(frame, dict):
            where = f"{frame.get('file') or frame.get('fileName')}:{frame.get('line') or frame.get('lineNumber')}"
            lines.append(f"\tat {frame.get('class') or frame.get('className')}.{frame.get('method')}({where})")
        else:
            lines.append(f"\tat {frame}")
    return lines


def render(record: JSONObject, shapes: Shapes) -> list[str]:
    """A record as a 'shape-record' header line and continuation lines."""
    fields = shapes.fields

    def text(name: str) -> str:
        value = _first(record, fields[name])
        return "" if value is None or isinstance(value, dict | list) else str(value)

    level = text("level")
    level = shapes.levels.get(level.lower(), level.upper() if level.isalpha() else "")
    thread = text("thread").replace("]", ")").replace("\n", " ")
    logger = "".join(text("logger").split()) or ""
    message = str(_first(record, fields["message"])).splitlines() or [""]
    trace = _first(record, fields["trace"])
    lines = [f"@{_time(_first(record, fields['time'])) or '-'} {level} [{thread}] {logger} - {message[0]}"]
    lines += message[1:]
    if trace is not None:
        lines += _trace(trace)
    return lines


def normalised_lines(plan_: Plan, numbered: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """(original line, text) of the copy, in order: each step of the plan in turn, records last."""
    shapes = load_shapes()
    if plan_.wrapper is not None:
        numbered = _unwrap(plan_.wrapper, numbered, shapes)
    if plan_.document is not None:
        yield from _resource(numbered, shapes)
        return
    numbered = _line_steps(plan_, numbered, shapes)
    if plan_.records == "json":
        for number, record, text in _json_records(numbered, shapes):
            if record is None:
                yield number, text
            else:
                yield from ((number, line) for line in render(record, shapes))
        return
    if plan_.records == "logfmt":
        for number, line in numbered:
            record = _logfmt(line)
            if record is not None and _first(record, shapes.fields["message"]) is not None:
                yield from ((number, out) for out in render(record, shapes))
            else:
                yield number, line
        return
    yield from numbered


def _line_steps(plan_: Plan, numbered: Iterable[tuple[int, str]], shapes: Shapes) -> Iterable[tuple[int, str]]:
    """Lines run together split, strips applied, a hard wrap joined, localized texts read, event rows cut."""
    if plan_.split is not None:
        numbered = _split(next(s for s in shapes.splits if s.id == plan_.split), numbered, shapes)
    if plan_.unwrap is not None and plan_.wrap_first:
        numbered = _unwrapped(plan_.unwrap, numbered)
    if plan_.strips:
        numbered = _stripped(plan_.strips, numbered, shapes)
    if plan_.unwrap is not None and not plan_.wrap_first:
        numbered = _unwrapped(plan_.unwrap, numbered)
    if plan_.localized:
        numbered = _in_english(numbered, shapes)
    if plan_.event_table:
        numbered = event_rows(numbered)
    return numbered


def _localized_in(lines: list[str], shapes: Shapes) -> bool:
    """Whether a sample line holds a localized error text. One search over the lines joined by newlines finds
    what a search per line finds: the texts hold no newline, and the lookahead after one reads a newline as it
    reads a line's end (not ' ('). Lines of ASCII alone hold none when no text is ASCII alone."""
    texts = shapes.localized or {}
    joined = "\n".join(lines)
    if joined.isascii() and not any(text.isascii() for text in texts):
        return False  # every localized text holds a character no ASCII line has (told at C speed)
    pattern = _localized_text(shapes)
    if any("\n" in text for text in texts):
        return any(pattern.search(line) for line in lines)
    return pattern.search(joined) is not None


def _localized_text(shapes: Shapes) -> re.Pattern[str]:
    """A localized error text not already followed by its English (longest first)."""
    return _alternatives(tuple(sorted(shapes.localized or {}, key=len, reverse=True)))


def event_rows(numbered: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """kubectl describe's event table with each row's message on a line of its own, so the message reads as any
    pasted text (an exception, the further lines of a multi-line message after it) and the row keeps its type,
    reason, age and source. kubectl aligns the columns with a tabwriter (padding 2; describe.go): cells are apart
    by two blanks or more, and only the age holds single blanks ('2m (x3 over 5m)')."""
    in_table = False
    for number, line in numbered:
        if EVENT_TABLE.match(line):
            in_table = True
        elif in_table and EVENT_ROW.match(line):
            cells = re.split(r"[ \t]{2,}", line.strip(), maxsplit=4)
            if len(cells) == 5:
                yield number, line[: len(line) - len(line.lstrip())] + "  ".join(cells[:4])
                yield number, cells[4]
                continue
        elif in_table and not line.strip():
            in_table = False  # the table ends at a blank line
        yield number, line


@cache
def _alternatives(words: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(rf"({'|'.join(map(re.escape, words)) or '(?!)'})(?! \()")


def _in_english(numbered: Iterable[tuple[int, str]], shapes: Shapes) -> Iterator[tuple[int, str]]:
    pattern, table = _localized_text(shapes), shapes.localized or {}
    for number, line in numbered:
        yield number, pattern.sub(lambda m: f"{m.group(1)} ({table[m.group(1)]})", line)


def _resource(numbered: Iterable[tuple[int, str]], shapes: Shapes) -> Iterator[tuple[int, str]]:
    """A Kubernetes resource's fields (kubernetes.py); a text that is no YAML after all, as it is."""
    lines = list(numbered)
    read = resource_lines(lines, shapes.resource_exception or {})
    yield from lines if read is None else read


def _stripped(
    strip_ids: tuple[str, ...], numbered: Iterable[tuple[int, str]], shapes: Shapes
) -> Iterator[tuple[int, str]]:
    """Lines with their strips applied; a box's or a table's border line becomes blank (decoration that would
    otherwise start the event the box's first line continues)."""
    strips = {s.id: s for s in shapes.strips}
    framed = "table" in strip_ids
    for number, line in numbered:
        for strip_id in strip_ids:
            line = _apply(strip_id, strips.get(strip_id), line)
        yield number, "" if framed and BORDER.match(line) else line


def read_rows(handle: Iterable[bytes]) -> Iterator[tuple[int, str]]:
    """(line number, text) of a staged file; rows that continue an over-long line (PIECE) are joined back,
    within MAX_JOIN_BYTES (beyond it the rest of the line is dropped from the copy: the shape is per line)."""
    number, current = 0, None
    for raw in handle:
        row = raw.decode("utf-8", "surrogateescape").removesuffix("\n")
        if row.startswith(PIECE) and current is not None:
            if len(current) < MAX_JOIN_BYTES:
                current += row[1:]
            continue
        if current is not None:
            yield number, current.removesuffix("\r")
        number += 1
        current = row[1:] if row.startswith("\x01" + PIECE) else row
    if current is not None:
        yield number, current.removesuffix("\r")


def normalise(plan_: Plan, source: Path, write: Callable[[bytes], object]) -> LineMap:
    """Read `source` (a staged file) in `plan_`'s shape, passing each copied line (bytes, with newline) to
    `write`; returns the map from copied lines to the original's."""
    line_map = LineMap()
    with open(source, "rb") as handle:
        rows = read_rows(handle)

        def counted() -> Iterator[tuple[int, str]]:
            for number, text in rows:
                line_map.original_lines = number
                yield number, text

        for number, line in normalised_lines(plan_, counted()):
            line_map.add(number)
            write(line.encode("utf-8", "surrogateescape") + b"\n")
    return line_map


def is_record(document: object) -> bool:
    """A parsed JSON document that is one log record (a JSON-lines log of one line, or one line of a container
    runtime's log), not a REST snapshot."""
    if not isinstance(document, dict):
        return False
    shapes = load_shapes()
    if isinstance(document.get("log"), str) and set(shapes.docker_keys) <= set(document):
        return True
    fields = shapes.fields
    message = _first(document, fields["message"])
    return isinstance(message, str) and any(_first(document, fields[f]) is not None for f in ("time", "level"))
