"""Which events some signature or catalogue entry can match: one Hyperscan pass over a part's raw bytes.

Hyperscan compiles the regexes themselves (patterns.py rewrites each into a pattern whose matches cover the
regex's on any text; Hyperscan's prefilter mode takes a construct it cannot run exactly), so an event is a
candidate of a signature only when each of the signature's regexes can match in it, not because it holds a
common word such as `Exception`. The same pass finds the level words of the headers (the WARN+ test) and the
catalogue's entries, and the events whose text the masks' trigger can match (masking.TRIGGER_RE2: RE2 then
decides on those only, not on every kept text). Python's `re` (matcher.py) then decides on the candidates only.

Per match Hyperscan reports its end offset; the event is the one that offset falls in. A match that starts in
one event and ends in the next makes the next a candidate it may not be: the matcher sorts that out. No match
inside an event is missed, so no event that a regex matches is skipped.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, TypeAlias

from ..runtime.userstate import cached, store
from ..safety.masking import TRIGGER_RE2
from .patterns import Unsupported, hyperscan_pattern

if TYPE_CHECKING:
    import hyperscan
    import numpy as np
    import numpy.typing as npt
    import pyarrow as pa

    from ..knowledge.rulebook import Rule, Signature

Bytes: TypeAlias = "npt.NDArray[np.uint8]"  # a part's bytes
Positions: TypeAlias = "npt.NDArray[np.int64]"  # byte offsets or event numbers, ascending

# the words a header's level can be at WARN or above (headers.WARN_WORDS), in both cases: found in the same pass
LEVEL_WORDS = ("CRITICAL", "ERROR", "FATAL", "SEVERE", "WARN", "WARNING")
PREFILTERED = ("text", "message", "exception")  # the fields whose regexes the pass looks for


@dataclass(frozen=True)
class Prefilter:
    patterns: tuple[str, ...]  # Hyperscan patterns, numbered by position; first the level words
    signatures: tuple[tuple[int, ...], ...]  # per signature (rules in order, then the extra ones): its patterns
    words: tuple[str, ...] = field(default=(), compare=False)  # the level words, patterns 0..len(words)-1
    compiled: bytes | None = field(default=None, repr=False, compare=False)  # the database, serialized
    # per signature, the patterns of its `message` regexes: the matcher tries such a regex on single lines only
    messages: tuple[tuple[int, ...], ...] = field(default=(), compare=False)
    trigger: int | None = field(default=None, compare=False)  # the masks' trigger's pattern (None: not in the pass)


def build_prefilter(rules: list[Rule], extra: Sequence[Signature] = ()) -> Prefilter:
    """Number the patterns: the level words, then each regex of the signatures (the `extra` ones, the metrics'
    lines, after every rule's, so the rules' numbers do not depend on them). A signature's `literal` is a pattern
    too. The same regex is one pattern, however many use it. The database is compiled here, on the driver, and
    its bytes go to the tasks. The masks' trigger is a pattern too, after the signatures'. The numbers are the
    same in every process (a signature's new patterns numbered in sorted order, not a set's, which follows the
    string hash's seed): the compiled database is kept by a digest of the patterns in their order (serialized)."""
    words = tuple(word for upper in LEVEL_WORDS for word in (upper, upper.lower()))
    # the signatures' patterns are numbered after the level words and never share a word's number, even when one
    # is the same text (`\bERROR\b`): a word's hits count only on an event's first line, a signature's anywhere
    ids: dict[str, int] = {}
    signatures, messages = [], []
    for sig in [sig for rule in rules for sig in rule.signatures] + list(extra):
        regexes = [(regex, key == "text") for key, regex in sig.regexes() if key in PREFILTERED]
        regexes += [(re.escape(sig.literal), False)] if sig.literal else []
        found = {pattern for pattern in (hyperscan_pattern(*r) for r in regexes) if pattern is not None}
        if not found:
            raise ValueError(f"a signature whose regexes can all match an empty text: {sig}")
        signatures.append(tuple(sorted(ids.setdefault(p, len(words) + len(ids)) for p in sorted(found))))
        message = {hyperscan_pattern(regex) for key, regex in sig.regexes() if key == "message"}
        messages.append(tuple(sorted(ids[p] for p in message if p is not None)))
    trigger_pattern = _trigger_pattern()
    trigger = None if trigger_pattern is None else ids.setdefault(trigger_pattern, len(words) + len(ids))
    patterns = tuple(re.escape(word) for word in words) + tuple(sorted(ids, key=ids.__getitem__))
    return Prefilter(
        patterns, tuple(signatures), words, serialized(patterns), messages=tuple(messages), trigger=trigger
    )


def _trigger_pattern() -> str | None:
    """The masks' trigger as a pattern of the pass: its matches cover RE2's on an event's whole text (hyperscan_pattern
    covers Python's `re`, whose case folding and classes hold RE2's here: the same explicit classes, and folds of
    ASCII letters that include RE2's K and long s), so an event the pass does not name has no text to mask. None:
    the trigger can match an empty text, or holds a construct the rewrite does not know (every text is tested)."""
    try:
        return hyperscan_pattern(TRIGGER_RE2, whole_text=True)
    except Unsupported:
        return None


def signature_numbers(rules: list[Rule]) -> list[list[int]]:
    """Per rule, the numbers its signatures have in the Prefilter built from the same rules."""
    numbers, n = [], 0
    for rule in rules:
        numbers.append(list(range(n, n + len(rule.signatures))))
        n += len(rule.signatures)
    return numbers


@dataclass
class Hits:
    """What one pass over a part's events found: per pattern, the (unique, ascending) events it matched in,
    and the events whose first line holds a level word."""

    events: int
    by_pattern: dict[int, Positions]
    level_words: Positions
    # every match of a signature's pattern: its pattern and the offset just past its last byte (prefilter order)
    which: Positions | None = None
    stop: Positions | None = None

    def signature_events(self, pattern_ids: tuple[int, ...]) -> Positions:
        """The events holding every one of the patterns."""
        import numpy as np

        found: Positions | None = None
        for pattern in pattern_ids:
            events = self.by_pattern.get(pattern)
            if events is None:
                return np.zeros(0, dtype=np.int64)
            found = events if found is None else np.intersect1d(found, events, assume_unique=True)
        return found if found is not None else np.zeros(0, dtype=np.int64)


def scan(
    prefilter: Prefilter,
    data: Bytes,
    begin: Positions,
    first_line_end: Positions,
    files: Positions | None = None,
) -> Hits:
    """One Hyperscan pass over the events: byte spans of the numpy uint8 `data` starting at `begin` (in order,
    back to back, the last to the end of `data`); `first_line_end`: where each event's first line ends.
    `files`: where each of several files joined in `data` starts (scanner.scan_parts); each is scanned on its
    own, so no match runs from one file into the next."""
    import numpy as np

    n = len(begin)
    none = np.zeros(0, dtype=np.int64)
    if not n:
        return Hits(0, {}, none)
    compiled = database(prefilter)
    if compiled is None:
        return _scan_re2(prefilter, data, begin, first_line_end)
    ids: list[int] = []
    ends: list[int] = []

    def on_match(  # (once per match: the fewest operations, each list's append bound once)
        pattern_id: int,
        start: int,
        stop: int,
        flags: int,
        context: object,
        of_pattern: Callable[[int], None] = ids.append,
        of_end: Callable[[int], None] = ends.append,
    ) -> None:
        of_pattern(pattern_id)
        of_end(stop)

    bounds = [int(begin[0]), len(data)] if files is None else [*files.tolist(), len(data)]
    shifts, counts = [], []  # each scanned file's offset in `data`, and its matches (their ends are in the file)
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        if hi > lo:
            found = len(ends)
            compiled.scan(data.data[lo:hi], match_event_handler=on_match)  # type: ignore[type-var]  # stub: str|bytes; any buffer scans
            shifts.append(lo)
            counts.append(len(ends) - found)
    if not ids:
        return Hits(n, {}, none)
    which = np.array(ids, dtype=np.int64)
    stop = np.array(ends, dtype=np.int64) + np.repeat(np.array(shifts, dtype=np.int64), counts)
    event = np.searchsorted(begin, stop - 1, side="right") - 1  # the event holding the match's last byte
    words = which < len(prefilter.words)
    level_words = distinct(event[words & (stop <= first_line_end[event])])
    hits = _hits(n, which[~words], event[~words], level_words)
    hits.which, hits.stop = which[~words], stop[~words]
    return hits


def distinct(values: Positions) -> Positions:
    """np.unique(values) by a sort: numpy 2's np.unique hashes first, and took six times as long on the hundreds
    of thousands of matches of a part (a tenth of a production part's scan)."""
    import numpy as np

    ordered = np.sort(values)
    return ordered[np.append(True, ordered[1:] != ordered[:-1])] if len(ordered) else ordered


def _hits(n: int, which: Positions, event: Positions, level_words: Positions) -> Hits:
    """Hits of the (pattern, event) pairs found, each pair counted once."""
    import numpy as np

    pattern, event = _pairs(n, which, event)  # sorted by pattern, then event
    cuts = np.flatnonzero(np.diff(pattern)) + 1
    if not len(pattern):
        return Hits(n, {}, level_words)
    firsts = np.append(0, cuts)
    by_pattern = {int(pattern[at]): events for at, events in zip(firsts, np.split(event, cuts), strict=True)}
    return Hits(n, by_pattern, level_words)


def _pairs(n: int, which: Positions, event: Positions) -> tuple[Positions, Positions]:
    """The distinct (pattern, event) pairs of the matches, sorted by pattern, then event. Hyperscan reports a
    scan's matches by their end, so their events ascend: then a stable sort by the pattern's number alone (a
    radix sort of small numbers) orders the pairs, where sorting (pattern * n + event) cost a part's 200,000
    matches three times as much; matches in another order (the RE2 pass's) take that sort."""
    import numpy as np

    if len(event) > 1 and not (event[1:] >= event[:-1]).all():
        return np.divmod(distinct(which * n + event), n)
    if not len(event):
        return which, event
    order = np.argsort(which.astype(np.int16 if which.max() < 1 << 15 else np.int64), kind="stable")
    pattern, event = which[order], event[order]
    first = np.append(True, (pattern[1:] != pattern[:-1]) | (event[1:] != event[:-1]))
    return pattern[first], event[first]


def _scan_re2(prefilter: Prefilter, data: Bytes, begin: Positions, first_line_end: Positions) -> Hits:
    """The same pass without Hyperscan (a platform without its wheel): RE2, which reads the same pattern syntax,
    over the events as an Arrow array, one pattern at a time (slower by the number of patterns)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    def spans(
        ends: Positions,
    ) -> pa.LargeStringArray:  # back-to-back spans from `begin`, as strings over `data` (no copy)
        offsets = np.append(begin, ends[-1]).astype(np.int64)
        return pa.LargeStringArray.from_buffers(len(begin), pa.py_buffer(offsets), pa.py_buffer(data))

    events = spans(np.append(begin[1:], len(data)))
    first_lines = pa.array(
        [bytes(data[a:b]).decode("utf-8", "replace") for a, b in zip(begin, first_line_end, strict=True)]
    )
    words: set[int] = set()
    for word in prefilter.words:
        words.update(np.flatnonzero(pc.match_substring(first_lines, word).to_numpy(zero_copy_only=False)).tolist())
    which: list[Positions] = []
    event: list[Positions] = []
    for number, pattern in enumerate(prefilter.patterns[len(prefilter.words) :], start=len(prefilter.words)):
        hit = np.flatnonzero(pc.match_substring_regex(events, pattern).to_numpy(zero_copy_only=False))
        which.append(np.full(len(hit), number, dtype=np.int64))
        event.append(hit)
    empty = np.zeros(0, dtype=np.int64)
    return _hits(
        len(begin),
        np.concatenate([empty, *which]),
        np.concatenate([empty, *event]),
        np.array(sorted(words), dtype=np.int64),
    )


def database(prefilter: Prefilter) -> hyperscan.Database | None:
    """The prefilter's database in this process (None without Hyperscan)."""
    return _loaded(prefilter.patterns, prefilter.compiled)


@lru_cache(maxsize=4)
def _loaded(patterns: tuple[str, ...], compiled: bytes | None) -> hyperscan.Database | None:
    """Loaded from the bytes the driver compiled (once per worker process), else compiled here (a worker on
    another platform, or a prefilter built without them)."""
    if compiled is not None:
        import hyperscan

        try:
            database = hyperscan.loadb(compiled, hyperscan.HS_MODE_BLOCK)
            database.scratch = hyperscan.Scratch(database)  # a loaded database has none
            return database
        except hyperscan.error:
            pass
    return compile_patterns(patterns)


def serialized(patterns: tuple[str, ...], name: str = "hyperscan-rules") -> bytes | None:
    """The patterns' database compiled and serialized, kept in the user's state folder by a digest of the
    patterns (compiling the rules' takes a third of a second, a catalogue's many seconds); None without
    Hyperscan."""
    try:
        import hyperscan
    except ImportError:
        return None
    key = hashlib.sha256("\0".join(patterns).encode("utf-8")).hexdigest()[:32]
    found = cached(name, key)
    if isinstance(found, bytes):
        return found
    compiled = hyperscan.dumpb(compiled_with_modes(patterns)[0])
    store(name, key, compiled)
    return compiled


def compile_patterns(patterns: tuple[str, ...]) -> hyperscan.Database | None:
    """The patterns compiled for Hyperscan's block mode (None without Hyperscan). A pattern Hyperscan cannot
    compile exactly is compiled in its prefilter mode (a superset of its matches, which is all the pass needs)."""
    try:
        import hyperscan  # noqa: F401 (only whether it is there)
    except ImportError:
        return None
    return compiled_with_modes(patterns)[0]


def compiled_with_modes(
    patterns: tuple[str, ...], ids: Sequence[int] | None = None
) -> tuple[hyperscan.Database, frozenset[int]]:
    """compile_patterns' database (Hyperscan must be there), each pattern reported by its `ids` (default: its
    position), and the positions of the patterns it compiled in prefilter mode."""
    import hyperscan

    exact = hyperscan.HS_FLAG_UTF8
    flags = [exact] * len(patterns)
    numbers = list(range(len(patterns)) if ids is None else ids)
    try:
        return _compiled(patterns, flags, numbers), frozenset()
    except hyperscan.error:
        for i, pattern in enumerate(patterns):  # find the ones that need the prefilter mode
            try:
                _compiled((pattern,), [exact], [0])
            except hyperscan.error:
                flags[i] = exact | hyperscan.HS_FLAG_PREFILTER
        return _compiled(patterns, flags, numbers), frozenset(i for i, f in enumerate(flags) if f != exact)


def _compiled(patterns: tuple[str, ...], flags: list[int], ids: list[int]) -> hyperscan.Database:
    import hyperscan

    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(
        expressions=[p.encode("ascii") for p in patterns],
        ids=ids,
        elements=len(patterns),
        flags=flags,
    )
    return db


def spans(data: Bytes | pa.Buffer, begin: Positions, end: Positions) -> pa.StringArray:
    """The byte spans [begin, end) of `data` as a pyarrow string array (one copy)."""
    import numpy as np
    import pyarrow as pa

    bounds = np.empty(2 * len(begin) + 1, dtype=np.int64)
    bounds[0:-1:2], bounds[1::2], bounds[-1] = begin, end, end[-1] if len(end) else 0
    both = pa.LargeStringArray.from_buffers(len(bounds) - 1, pa.py_buffer(bounds), pa.py_buffer(data))
    return both.take(pa.array(np.arange(0, len(bounds) - 1, 2))).cast(pa.string())
