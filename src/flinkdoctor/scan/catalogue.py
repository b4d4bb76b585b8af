"""The failure catalogue (knowledge/catalogue: message formats and exception classes from the code) in the scan.

Tens of thousands of entries are one Hyperscan database of their regexes (patterns.py rewrites each as it does
the rules'), compiled once per catalogue and machine: the driver compiles it (or reads it from the user's state
folder, keyed by the entries' ids and regexes) with its serialized bytes, so no task compiles it. On a local
master the tasks read it from that file, once per Python worker (`for_tasks`), instead of unpickling the
index's 15 MB with every task's function.
It runs in a second pass over the bytes of the events that can be failure evidence only (at WARN level or above,
of more than one line, or without a header: scanner.py), not over every healthy INFO line. Python's `re` then
decides on the candidates, line by line (no stack frame), and the first line an entry matches is its hit.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeAlias, TypeVar

from ..knowledge.regexes import ATOMIC, POSSESSIVE, Node, NodeArg, parse, python_regex, sre
from ..runtime.userstate import cached, read_stored, store, stored_path
from .patterns import first_bytes, hyperscan_pattern, spans_lines
from .prefilter import Bytes, Positions, compiled_with_modes, distinct

if TYPE_CHECKING:
    import hyperscan
    import pyarrow as pa

    from ..knowledge.catalogue import Catalogue


class _Entry(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def regex(self) -> str: ...


class Entries(Protocol):
    """A catalogue as the index reads it: `entries` with an `id` and a `regex` (the shipped one, or another)."""

    @property
    def entries(self) -> Sequence[_Entry]: ...


T = TypeVar("T")
# the bytes of a log line's leading timestamp (`2026-11-22 11:12:07,808 `), which a line's first bytes of them
# are skipped for in the catalogue's pass, by the patterns that cannot start on one
PREFIX_BYTES = frozenset(b"0123456789-:,. ")
PREFIX_CHARS = bytes(sorted(PREFIX_BYTES)).decode("ascii")
FRAME = re.compile(r"\s*(?:at\s+\S|\.\.\.\s+\d+\s+(?:more|common frames omitted))")


@dataclass(frozen=True)
class CatalogueIndex:
    """What the tasks need of the catalogue: picklable, with the compiled database's bytes."""

    ids: tuple[str, ...]  # entry ids, numbered by position
    regexes: tuple[str, ...]  # per entry, its regex (Python's `re`)
    patterns: tuple[str, ...]  # the distinct Hyperscan patterns
    entries_of: tuple[tuple[int, ...], ...]  # per pattern, the entries it stands for
    key: str  # a digest of the entries' ids and regexes
    # the database of the patterns that match within a line and cannot start on a byte of a timestamp
    # (PREFIX_BYTES), serialized (None: no Hyperscan, or no such pattern); the patterns that may run from one
    # line into the next and theirs: only they need the lines as they follow each other in the part
    # (candidates); the database of the patterns within a line that may start on such a byte
    compiled: bytes | None = field(default=None, repr=False, compare=False)
    spanning: tuple[int, ...] = ()
    spanning_compiled: bytes | None = field(default=None, repr=False, compare=False)
    on_prefix: tuple[int, ...] = ()  # the patterns that may start on a byte of PREFIX_BYTES (patterns.first_bytes)
    prefixed_compiled: bytes | None = field(default=None, repr=False, compare=False)

    @cached_property
    def entry_arrays(self) -> tuple[Positions, Positions]:
        """`entries_of` as numpy arrays, once per worker: where each pattern's entries start in the second, the
        entries of every pattern back to back (candidates reads the entries of 50,000 pairs of a lab part)."""
        import numpy as np

        sizes = np.fromiter((len(entries) for entries in self.entries_of), dtype=np.int64, count=len(self.entries_of))
        flat = np.fromiter((e for entries in self.entries_of for e in entries), dtype=np.int64, count=int(sizes.sum()))
        return np.append(0, np.cumsum(sizes)), flat


@dataclass(frozen=True)
class _OnFile(CatalogueIndex):
    """An index the tasks read from its file in the state folder: pickled, it is only the file's path and key."""

    file: str = field(default="", repr=False, compare=False)

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return _read_index, (self.file, self.key)


def for_tasks(index: CatalogueIndex | None, run_dir: Path) -> CatalogueIndex | None:
    """The index as the scan's tasks get it on a local master (where they see the driver's files): read from
    the state folder's file, once per Python worker, when the file is there; else the index itself. The file is
    linked (else copied) into the run's own folder first: another version's run storing its index meanwhile
    removes the state folder's name, never this run's."""
    import os
    import shutil

    stored = None if index is None else stored_path(_store_name(index.key), index.key)
    if index is None or stored is None:
        return index
    path = run_dir / "catalogue-index.pickle"
    try:
        path.unlink(missing_ok=True)
        try:
            os.link(stored, path)
        except OSError:
            shutil.copyfile(stored, path)
            path.chmod(0o600)
    except OSError:
        return index
    return _OnFile(**{f.name: getattr(index, f.name) for f in fields(CatalogueIndex)}, file=str(path))


@lru_cache(maxsize=2)
def _read_index(path: str, key: str) -> CatalogueIndex:
    """The index stored at `path` for `key` (in a task: once per Python worker; its database then once too)."""
    index = read_stored(Path(path))
    if not isinstance(index, CatalogueIndex) or index.key != key:
        raise RuntimeError(f"the failure catalogue's index {path} changed or went while the scan ran")
    return index


def _store_name(key: str) -> str:
    """The state folder's name of an index: another catalogue's never evicts the shipped one's."""
    return "catalogue-index" if key.startswith("files-") else "catalogue-index-other"


def default_catalogue() -> Catalogue:
    """The shipped catalogue (knowledge.catalogue.load_catalogue)."""
    from ..knowledge.catalogue import load_catalogue

    return load_catalogue()


def shipped_index() -> CatalogueIndex | None:
    """The shipped catalogue's index, found in the state folder by the bytes of the catalogue's files, so a run
    whose index is cached does not build the catalogue's 28,000 entries (0.8 s) to name its key."""
    from ..knowledge.catalogue import catalogue_dir

    digest = hashlib.sha256()
    for path in sorted(catalogue_dir().glob("*.json")):
        digest.update(path.name.encode("utf-8") + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return catalogue_index(None, f"files-{digest.hexdigest()[:32]}")


def catalogue_index(catalogue: Entries | None, key: str | None = None) -> CatalogueIndex | None:
    """The index of a catalogue (anything with `entries` of `id` and `regex`; None: the shipped one, loaded
    only when its index is not cached), with its database compiled; cached in the user's state folder by `key`
    (default: the entries' ids and regexes) and the code that makes patterns of them. None for no entries."""
    if key is None:
        if catalogue is None or not catalogue.entries:
            return None
        digest = hashlib.sha256("\0".join(f"{e.id}\1{e.regex}" for e in catalogue.entries).encode("utf-8"))
        key = digest.hexdigest()[:32]
    key = f"{key}-{_code()}-{_engine()}"
    name = _store_name(key)
    index = cached(name, key)
    if isinstance(index, CatalogueIndex) and index.key == key:
        return index
    if catalogue is None:
        catalogue = default_catalogue()
    if not catalogue.entries:
        return None
    pairs = [(entry.id, entry.regex) for entry in catalogue.entries]
    by_pattern: dict[str, list[int]] = {}
    on_prefix: set[str] = set()
    for number, (_, regex) in enumerate(pairs):
        try:
            pattern = hyperscan_pattern(regex)
        except Exception:  # noqa: BLE001 - a regex the rewrite cannot read is never a candidate (counted below)
            pattern = None
        if pattern is not None:
            by_pattern.setdefault(pattern, []).append(number)
            if _may_start_on_prefix(regex):
                on_prefix.add(pattern)
    patterns = tuple(by_pattern)
    prefixed = tuple(i for i, pattern in enumerate(patterns) if pattern in on_prefix)
    of_rests, spanning, of_spanning, of_prefixed = _serialized(patterns, prefixed)
    index = CatalogueIndex(
        tuple(i for i, _ in pairs),
        tuple(r for _, r in pairs),
        patterns,
        tuple(tuple(by_pattern[p]) for p in patterns),
        key,
        of_rests,
        spanning,
        of_spanning,
        prefixed,
        of_prefixed,
    )
    store(name, key, index)
    return index


def _may_start_on_prefix(regex: str) -> bool:
    """Whether the regex's pattern may start on a byte of PREFIX_BYTES (yes when that cannot be worked out)."""
    try:
        return bool(first_bytes(regex) & PREFIX_BYTES)
    except Exception:  # noqa: BLE001 - read like hyperscan_pattern read it; unknown: run it on whole lines
        return True


@lru_cache(maxsize=1)
def _code() -> str:
    """A digest of the code that turns regexes into the database (a change to it is a miss)."""
    digest = hashlib.sha256()
    for name in ("patterns.py", "prefilter.py", "catalogue.py"):
        digest.update((Path(__file__).parent / name).read_bytes())
    return digest.hexdigest()[:12]


def _engine() -> str:
    try:
        import hyperscan
    except ImportError:
        return "none"
    return str(getattr(hyperscan, "__version__", "hs"))


# _compiled's: the rests' database, the spanning patterns and theirs, the prefixed patterns' database
Databases: TypeAlias = (
    "tuple[hyperscan.Database | None, tuple[int, ...], hyperscan.Database | None, hyperscan.Database | None]"
)


def _serialized(
    patterns: tuple[str, ...], on_prefix: tuple[int, ...]
) -> tuple[bytes | None, tuple[int, ...], bytes | None, bytes | None]:
    """_compiled's databases serialized, with the numbers of the spanning patterns (None, (), None, None without
    Hyperscan: a task compiles them then, _databases)."""
    databases = _compiled(patterns, on_prefix)
    if databases is None:
        return None, (), None, None
    import hyperscan

    of_rests, spanning, of_spanning, of_prefixed = databases
    return (
        None if of_rests is None else hyperscan.dumpb(of_rests),
        spanning,
        None if of_spanning is None else hyperscan.dumpb(of_spanning),
        None if of_prefixed is None else hyperscan.dumpb(of_prefixed),
    )


def _compiled(patterns: tuple[str, ...], on_prefix: tuple[int, ...]) -> Databases | None:
    """The databases of the patterns that match within a line: those that cannot start on a byte of
    PREFIX_BYTES, run on a line's bytes after its leading ones of that set (a timestamp), and the others, run on
    whole lines; the numbers of the patterns that may span lines (patterns.spans_lines, or compiled in
    Hyperscan's prefilter mode, which may loosen a pattern to match a newline, or start it anywhere) and their
    database; the prefixed ones' database. Each pattern is reported by its number (None: no such pattern); None
    without Hyperscan."""
    try:
        import hyperscan  # noqa: F401 (only whether it is there)
    except ImportError:
        return None
    spanning = {i for i, pattern in enumerate(patterns) if spans_lines(pattern)}
    prefixed = set(on_prefix)
    databases = []
    for on_lines in (False, True):  # the rests' patterns, then the whole lines'
        ours = [i for i in range(len(patterns)) if i not in spanning and (i in prefixed) == on_lines]
        database, inexact = _database_of(patterns, ours)
        if inexact:
            spanning |= inexact
            database = _database_of(patterns, [i for i in ours if i not in inexact])[0]
        databases.append(database)
    return databases[0], tuple(sorted(spanning)), _database_of(patterns, sorted(spanning))[0], databases[1]


def _database_of(patterns: tuple[str, ...], numbers: list[int]) -> tuple[hyperscan.Database | None, set[int]]:
    """The database of the numbered patterns (None: none) and the numbers of those compiled in prefilter mode."""
    if not numbers:
        return None, set()
    database, inexact = compiled_with_modes(tuple(patterns[i] for i in numbers), numbers)
    return database, {numbers[i] for i in inexact}


@lru_cache(maxsize=2)
def _databases(index: CatalogueIndex) -> Databases | None:
    """The index's databases in this process (_compiled's): loaded from their bytes, else compiled here (another
    platform); None without Hyperscan."""
    stored = (index.compiled, index.spanning_compiled, index.prefixed_compiled)
    if any(compiled is not None for compiled in stored):
        import hyperscan

        try:
            of_rests, of_spanning, of_prefixed = (None if c is None else _loaded(c) for c in stored)
            return of_rests, index.spanning, of_spanning, of_prefixed
        except hyperscan.error:
            pass
    return _compiled(index.patterns, index.on_prefix)


def _loaded(compiled: bytes) -> hyperscan.Database:
    import hyperscan

    database = hyperscan.loadb(compiled, hyperscan.HS_MODE_BLOCK)
    database.scratch = hyperscan.Scratch(database)  # a loaded database has none
    return database


def candidates(
    index: CatalogueIndex, data: Bytes, begin: Positions, end: Positions, files: Positions | None = None
) -> tuple[Positions, Positions]:
    """(spans, entries) numpy arrays: each (span, entry) pair whose entry's pattern the pass found in the span's
    bytes [begin, end) of `data` (spans in order, not overlapping: an event's, or a line's), once. `files`: the
    spans where another of several files joined in `data` starts (scanner.scan_parts); the spans of each file
    are scanned on their own, so no match runs from one file into the next.

    A pattern that holds no newline runs once per distinct span (the lines of stack traces repeat with every
    retry: a lab part's candidate lines are 44 % distinct bytes, and the 28,000 patterns read them at 50 MB/s);
    the few that may match one run over the spans as they follow each other. The pairs are those of one pass of
    every pattern over the spans back to back: a match that holds no newline lies within one span, as every span
    but a file's last ends with one (the spans are lines)."""
    import numpy as np

    none = np.zeros(0, dtype=np.int64)
    if not len(begin):
        return none, none
    sizes = (end - begin).astype(np.int64)
    starts = np.cumsum(sizes) - sizes  # where each span starts in the joined bytes
    joined = _joined(data, begin, end)
    if not joined:  # empty spans hold no match
        return none, none
    databases = _databases(index)
    if databases is None:
        return _candidates_re2(index, joined, starts)
    of_rests, _, of_spanning, of_prefixed = databases
    pairs = [none]
    lines = _binary(joined, np.append(starts, len(joined)))
    if of_rests is not None:
        pairs.append(_distinct_span_pairs(of_rests, _rests(lines)))
    if of_prefixed is not None:
        pairs.append(_distinct_span_pairs(of_prefixed, lines))
    if of_spanning is not None:
        bounds = [0, len(joined)] if files is None else [0, *starts[files[files > 0]].tolist(), len(joined)]
        ids, ends = _scanned(of_spanning, memoryview(joined), bounds)
        span = np.searchsorted(starts, ends - 1, side="right") - 1
        pairs.append(ids * len(begin) + span)
    pattern, event = np.divmod(distinct(np.concatenate(pairs)), len(begin))
    if not len(pattern):
        return none, none
    offsets, flat = index.entry_arrays
    sizes = offsets[pattern + 1] - offsets[pattern]
    within = np.arange(int(sizes.sum()), dtype=np.int64) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    return np.repeat(event, sizes), flat[np.repeat(offsets[pattern], sizes) + within]


def _binary(buffer: bytes, offsets: Positions) -> pa.LargeBinaryArray:
    """The spans of `buffer` between the `offsets` (ascending) as an Arrow array over it (no copy)."""
    import numpy as np
    import pyarrow as pa

    bounds = pa.py_buffer(offsets.astype(np.int64))
    array: pa.LargeBinaryArray = pa.Array.from_buffers(
        pa.large_binary(), len(offsets) - 1, [None, bounds, pa.py_buffer(buffer)]
    )
    return array


def _rests(lines: pa.LargeBinaryArray) -> pa.LargeBinaryArray:
    """Each line after its leading bytes of PREFIX_BYTES: a pattern that cannot start on such a byte finds the
    same matches in it as in the line, however many it skips (the pattern reads nothing before its start:
    patterns.py drops anchors, word boundaries and look-arounds), and the rests of a lab part's lines are 3 % of
    their distinct bytes (each header line differs by its time only). Arrow trims them in one pass over the
    bytes (a lab part's 52,000 lines: 1.4 ms; a skip worked out in numpy over each line's first 32 bytes took
    23 ms)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    # (viewed as text, not checked as UTF-8: the trim reads single ASCII bytes, any others are kept as they are)
    trimmed = pc.ascii_ltrim(lines.view(pa.large_string()), characters=PREFIX_CHARS)
    rests: pa.LargeBinaryArray = trimmed.view(pa.large_binary())
    return rests


def _distinct_span_pairs(database: hyperscan.Database, spans: pa.LargeBinaryArray) -> Positions:
    """(pattern * spans + span) of every match found within a span, each distinct span's bytes scanned once."""
    import numpy as np
    import pyarrow as pa

    n = len(spans)
    encoded = spans.dictionary_encode()
    values, of_span = encoded.dictionary, encoded.indices.to_numpy()
    bounds = np.frombuffer(values.buffers()[1], dtype=np.int64)[values.offset : values.offset + len(values) + 1]
    content = values.buffers()[2] or pa.py_buffer(b"")
    # scanned in pieces that end after each value without a last newline (a file's last line), so that no
    # match runs from it into the next value
    view = np.frombuffer(content, dtype=np.uint8)
    open_ended = bounds[1:][(bounds[1:] > bounds[:-1]) & (view[np.maximum(bounds[1:] - 1, 0)] != 10)]
    ids, ends = _scanned(database, memoryview(content), [int(bounds[0]), *open_ended.tolist(), int(bounds[-1])])
    value = np.searchsorted(bounds, ends - 1, side="right") - 1
    pattern, value = np.divmod(distinct(ids * len(values) + value), len(values))
    # each (pattern, value) pair for every span of that value
    order = np.argsort(of_span, kind="stable")
    count = np.bincount(of_span, minlength=len(values))
    first = np.cumsum(count) - count
    repeat = count[value]
    within = np.arange(int(repeat.sum()), dtype=np.int64) - np.repeat(np.cumsum(repeat) - repeat, repeat)
    span = order[np.repeat(first[value], repeat) + within]
    return np.repeat(pattern, repeat) * n + span


def _scanned(database: hyperscan.Database, buffer: memoryview, bounds: list[int]) -> tuple[Positions, Positions]:
    """(pattern ids, end offsets in `buffer`) of every match in each piece [bounds[i], bounds[i + 1])."""
    import numpy as np

    ids: list[int] = []
    ends: list[int] = []
    shift = [0]

    def on_match(pattern_id: int, start: int, stop: int, flags: int, context: object) -> None:
        ids.append(pattern_id)
        ends.append(stop + shift[0])

    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        if hi > lo:
            shift[0] = lo
            database.scan(buffer[lo:hi], match_event_handler=on_match)  # type: ignore[type-var]  # stub: str|bytes; any buffer scans
    return np.array(ids, dtype=np.int64), np.array(ends, dtype=np.int64)


def _joined(data: Bytes, begin: Positions, end: Positions) -> bytes:
    """The spans' bytes back to back: one slice per run of adjacent spans (the lines of an event between its
    frames), not an index per byte (a gather through int64 offsets cost three times the pass itself)."""
    import numpy as np

    breaks = np.flatnonzero(begin[1:] != end[:-1]) + 1
    run_begin = begin[np.append(0, breaks)].tolist()
    run_end = end[np.append(breaks - 1, len(end) - 1)].tolist()
    view = np.ascontiguousarray(data).data.cast("B")
    return b"".join([view[a:b] for a, b in zip(run_begin, run_end, strict=True)])


def _candidates_re2(index: CatalogueIndex, joined: bytes, starts: Positions) -> tuple[Positions, Positions]:
    """The same without Hyperscan: RE2 over the events, a pattern at a time (slow: a platform without its wheel)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    offsets = np.append(starts, len(joined)).astype(np.int64)
    events = pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets), pa.py_buffer(joined))
    found_events, found_entries = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for pattern, entries in zip(index.patterns, index.entries_of, strict=True):
        hit = np.flatnonzero(pc.match_substring_regex(events, pattern).to_numpy(zero_copy_only=False))
        for entry in entries:
            found_events.append(hit)
            found_entries.append(np.full(len(hit), entry, dtype=np.int64))
    return np.concatenate(found_events), np.concatenate(found_entries)


@dataclass(frozen=True)
class Candidates:
    """What the catalogue's pass found in a part: per event, the entries whose patterns its bytes hold
    (ascending), and of those the entries a line of it matches, each with its first such line (entry_hits' rows)."""

    entries: dict[int, list[int]]
    hits: dict[int, list[dict[str, str | int]]]


def line_hits(
    index: CatalogueIndex,
    events: Positions,
    entries: Positions,
    lines: Positions,
    first: Positions,
    line_texts: Callable[[Positions], pa.Array],
) -> Candidates:
    """Candidates of the (event, entry, line) triples the pass found: an entry's pattern ends in that line's bytes.
    The regex is tried on those lines only, and the first of them (in order) that is no stack frame and that it
    matches is the hit (its index from the event's `first` line). Its pattern covers the regex on any text
    (patterns.py), so a line it matches holds a match of the pattern, and no other line needs the regex:
    entry_hits' answer on the same text, without splitting every candidate event into lines. A regex is tried
    once per distinct (entry, line text), however many events repeat the line (a stack trace's lines repeat
    with every retry), and `line_texts` gives the texts of the distinct lines (ascending) in one call, as an
    Arrow array: only its distinct texts become Python strings."""
    import numpy as np
    import pyarrow.compute as pc

    if not len(events):
        return Candidates({}, {})
    order = np.lexsort((lines, entries, events))
    events, entries, lines = events[order], entries[order], lines[order]
    numbered, line_of = np.unique(lines, return_inverse=True)
    encoded = line_texts(numbered).dictionary_encode()  # each distinct text numbered
    text_of = encoded.indices.to_numpy().astype(np.int64)[line_of.reshape(-1)]  # per triple, its line's text
    texts = encoded.dictionary.to_pylist()
    # a regex that reads a line from its match's start on only, and cannot start on a byte of a timestamp, is
    # tried once per distinct rest of a line after its leading PREFIX_CHARS (a lab part's header lines differ
    # by their time only: 12,866 distinct (entry, line) pairs, 1,157 (entry, rest) ones): texts, then rests
    rests = pc.utf8_ltrim(encoded.dictionary, characters=PREFIX_CHARS).dictionary_encode()
    rest_of = rests.indices.to_numpy().astype(np.int64)
    keyed = texts + rests.dictionary.to_pylist()
    distinct_entries, entry_of = np.unique(entries, return_inverse=True)
    regexes = index.regexes
    by_rest = np.array([_reads_on(regexes[e]) for e in distinct_entries.tolist()], dtype=bool)[entry_of.reshape(-1)]
    key = np.where(by_rest, len(texts) + rest_of[text_of], text_of)
    tried = ~np.array([FRAME.match(text) is not None for text in texts], dtype=bool)[text_of]  # no frame
    pairs, pair_of = np.unique(entries[tried] * len(keyed) + key[tried], return_inverse=True)
    matched = np.zeros(len(events), dtype=bool)
    matched[tried] = np.array(
        [
            python_regex(regexes[entry]).search(keyed[text]) is not None
            for entry, text in zip(*(side.tolist() for side in np.divmod(pairs, len(keyed))), strict=True)
        ],
        dtype=bool,
    )[pair_of.reshape(-1)]
    group = np.append(0, np.cumsum((events[1:] != events[:-1]) | (entries[1:] != entries[:-1])))  # (event, entry)
    starts = np.flatnonzero(np.append(True, group[1:] != group[:-1]))
    hit_at = np.flatnonzero(matched)
    hit_at = hit_at[np.unique(group[hit_at], return_index=True)[1]]  # each pair's first matching line
    of_event = events[starts]  # each (event, entry) pair's event, ascending: the event's entries are a run
    found = _by_event(of_event, entries[starts].tolist())
    ids, idx = index.ids, (lines[hit_at] - first[events[hit_at]]).tolist()
    rows = [{"entry": ids[entry], "idx": at} for entry, at in zip(entries[hit_at].tolist(), idx, strict=True)]
    return Candidates(found, _by_event(events[hit_at], rows))


@lru_cache(maxsize=4096)
def _reads_on(regex: str) -> bool:
    """Whether the regex finds a match in a line exactly when it finds one in the line's rest after its leading
    PREFIX_CHARS: its first node cannot match an empty string (nor be an assertion) and cannot start on one of
    them (first_bytes, which then reads that node), so every match starts after them, and nothing in it can look
    before the match's start (a `^`, `\\A`, a look-behind, or a `\\b` or `\\B` anywhere: where one stands is
    not worked out), so from there it reads the same characters in both."""
    if _may_start_on_prefix(regex):
        return False
    try:
        tree = parse(regex)
        return len(tree) > 0 and tree[0:1].getwidth()[0] > 0 and _forward(list(tree))
    except Exception:  # noqa: BLE001 - read like first_bytes read it: unknown, so tried on the whole line
        return False


FORWARD_ANCHORS = frozenset({sre.AT_END, sre.AT_END_LINE, sre.AT_END_STRING})  # `$`, `\Z`: they look ahead


def _forward(items: list[Node]) -> bool:
    """Whether no node reads a character before its own position (_reads_on); False for a node not known."""
    for op, av in items:
        if (op is sre.AT and av not in FORWARD_ANCHORS) or (op in (sre.ASSERT, sre.ASSERT_NOT) and av[0] < 0):
            return False  # (a look-behind's direction is -1)
        inside = _inside(op, av)
        if inside is None or not all(_forward(list(nodes)) for nodes in inside):
            return False
    return True


def _inside(op: object, av: NodeArg) -> list[list[Node]] | None:
    """The node's own nodes, in lists (a group's, each alternative's); None for a node not known."""
    if op in (sre.LITERAL, sre.NOT_LITERAL, sre.ANY, sre.IN, sre.CATEGORY, sre.GROUPREF, sre.AT):
        return []
    if op in (sre.ASSERT, sre.ASSERT_NOT):
        return [av[1]]
    if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, POSSESSIVE):
        return [av[2]]
    if op is sre.SUBPATTERN:
        return [av[3]]
    if op is ATOMIC:
        return [av]
    if op is sre.BRANCH:
        return list(av[1])
    return None


def _by_event(events: Positions, values: list[T]) -> dict[int, list[T]]:
    """The values per event: `events` ascending, one per value; each event's values a slice of them, in order
    (one dict entry per event, not an append per value: a lab part's 44,000 hits)."""
    import numpy as np

    if not len(events):
        return {}
    runs = np.flatnonzero(np.append(True, events[1:] != events[:-1]))
    bounds = np.append(runs, len(events)).tolist()
    return {e: values[a:b] for e, a, b in zip(events[runs].tolist(), bounds[:-1], bounds[1:], strict=True)}


def entry_hits(index: CatalogueIndex, text: str, entries: Iterable[int]) -> list[dict[str, str | int]]:
    """The entries among `entries` (ascending) whose regex matches a line of the event that is no stack frame:
    each with the first such line's index."""
    lines = [(i, line) for i, line in enumerate(text.split("\n")) if not FRAME.match(line)]
    found: list[dict[str, str | int]] = []
    for entry in entries:
        pattern = python_regex(index.regexes[entry])
        at = next((i for i, line in lines if pattern.search(line)), None)
        if at is not None:
            found.append({"entry": index.ids[entry], "idx": at})
    return found
