"""Which signatures an event could match, from the literals each signature's regexes require.

Every signature's regex implies plain substrings that any match must contain (required_literals, read from the
regex's parse tree). Matching then evaluates a signature's regexes only on the events that hold all of them:
without this, testing a few hundred regexes on every candidate stack trace cost more than everything else.

Two passes, both Hyperscan (pyarrow's substring search where Hyperscan has no wheel). Over a part's raw bytes
(scanner.py), only the rarest literal of each signature (knowledge/literal_counts.json, counted in real logs):
common words such as `.jar` or ` to ` would cost a Python callback per occurrence (rare_hits). Then, on the kept
text of the events it hit, every literal, one scan per event that reports each literal once (exact_signatures).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from ..knowledge.rulebook import Rule, Signature, required_literals


@dataclass(frozen=True)
class Prefilter:
    literals: tuple[str, ...]  # distinct literals, numbered by position
    header_only: tuple[bool, ...]  # per literal: only counts in an event's first line
    signatures: tuple[tuple[int, ...], ...]  # per signature (rules in order, then their signatures): literal ids
    rare: tuple[int, ...] = ()  # per signature: the literal id of its rarest literal (-1: none), for raw bytes


def build_prefilter(rules: list[Rule], extra: Sequence[Signature] = ()) -> Prefilter:
    """Number the literals and signatures. A literal of a signature that reads only the header message must be
    in the first line; one that reads the whole text may be anywhere. A literal inside a longer one of the same
    signature adds nothing and is left out (fewer, rarer literals: fewer hits to sort out).

    `extra` signatures (the metrics' lines, analytics/metrics.py) are numbered after every rule's, so the rules'
    numbers do not depend on them."""
    ids: dict[tuple[str, bool], int] = {}
    signatures = []
    for sig in [sig for rule in rules for sig in rule.signatures] + list(extra):
        literals = required_literals(sig)
        header_only = sig.text is None and sig.exception is None
        kept = {lit for lit in literals if not any(lit != other and lit in other for other in literals)}
        signatures.append(tuple(sorted({ids.setdefault((lit, header_only), len(ids)) for lit in kept})))
    keys = sorted(ids, key=lambda key: ids[key])
    counts = literal_counts()
    rare = [min(lits, key=lambda i: (counts.get(keys[i][0], 0), -len(keys[i][0])), default=-1) for lits in signatures]
    return Prefilter(tuple(k[0] for k in keys), tuple(k[1] for k in keys), tuple(signatures), tuple(rare))


@cache
def literal_counts() -> dict[str, int]:
    """How often each literal occurred in real logs (bench/literal_counts.py); missing ones count as rare."""
    path = resources.files("flinkdoctor").joinpath("knowledge/literal_counts.json")
    return json.loads(path.read_text("utf-8"))


def signature_numbers(rules: list[Rule]) -> list[list[int]]:
    """Per rule, the numbers its signatures have in the Prefilter built from the same rules."""
    numbers, n = [], 0
    for rule in rules:
        numbers.append(list(range(n, n + len(rule.signatures))))
        n += len(rule.signatures)
    return numbers


def literal_hits(prefilter: Prefilter, text, rows):
    """(row, literal id) of every literal that counts in the events `rows` of the pyarrow string array `text`,
    each pair once, as numpy arrays. A header-only literal counts only in an event's first line.

    Hyperscan scans each event on its own and reports each literal once per event (its first occurrence, so a
    header-only one is in the first line if anywhere): common literals (`Exception` on every line of a trace) cost
    one callback per event instead of one per occurrence."""
    import numpy as np
    import pyarrow.compute as pc

    none = np.zeros(0, dtype=np.int64)
    if not prefilter.literals or not len(rows):
        return none, none
    text = text.fill_null("")
    database = _database(prefilter.literals, once_per_scan=True)
    if database is None:
        event, literal = _hits_pyarrow(prefilter, text)
        wanted = np.isin(event, rows)
        return event[wanted], literal[wanted]
    newline = pc.find_substring(text, "\n").to_numpy(zero_copy_only=False)
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int32)[text.offset : text.offset + len(text) + 1]
    view = memoryview(text.buffers()[2])
    ids: list[int] = []
    ends: list[int] = []
    bounds = [0]

    def on_match(literal_id, start, end, flags, context):
        ids.append(literal_id)
        ends.append(end)

    for row in rows.tolist():
        database.scan(view[offsets[row] : offsets[row + 1]], match_event_handler=on_match)
        bounds.append(len(ids))
    event = np.repeat(rows, np.diff(bounds))
    literal = np.array(ids, dtype=np.int64)
    end = np.array(ends, dtype=np.int64)
    first_line = np.where(newline[event] >= 0, newline[event], offsets[event + 1] - offsets[event])
    counts = ~np.array(prefilter.header_only, dtype=bool)[literal] | (end <= first_line)
    return event[counts], literal[counts]


def rare_hits(prefilter: Prefilter, data, begin, first_line_end) -> dict[int, Any]:
    """Per rare literal id, the (numpy, unique) events holding it. The events are byte spans of the numpy uint8
    `data` starting at `begin` (in order, back to back, the last to the end of `data`). A literal
    that only counts in an event's first line must end by `first_line_end`. A superset: `exact_signatures`
    decides on the text that is kept."""
    import numpy as np

    rare, database, lengths, header_only = _rare(prefilter)
    found: dict[int, Any] = {}
    if not len(begin) or not rare:
        return found
    base = int(begin[0])
    view = memoryview(data)[base:]
    if database is None:
        ends, ids = _find_all(bytes(view), [prefilter.literals[i].encode("utf-8") for i in rare])
    else:
        ids, ends = [], []

        def on_match(literal_id, start, stop, flags, context):
            ids.append(literal_id)
            ends.append(stop)

        database.scan(view, match_event_handler=on_match)
    if not ids:
        return found
    which = np.array(ids, dtype=np.int64)
    stop = np.array(ends, dtype=np.int64) + base
    event = np.searchsorted(begin, stop - lengths[which], side="right") - 1
    bound = np.append(begin[1:], len(data))
    inside = (stop <= bound[event]) & (~header_only[which] | (stop <= first_line_end[event]))
    pairs = np.unique(which[inside] * len(begin) + event[inside])  # (literal, event), sorted by literal
    if not len(pairs):
        return found
    literal, event = np.divmod(pairs, len(begin))
    cuts = np.flatnonzero(np.diff(literal)) + 1
    for events, k in zip(np.split(event, cuts), literal[np.append(0, cuts)], strict=True):
        found[rare[k]] = events
    return found


@lru_cache(maxsize=4)
def _rare(prefilter: Prefilter):
    """The rare literals' ids, their Hyperscan database (None without Hyperscan), byte lengths and
    header-only flags: once per worker, not once per part."""
    import numpy as np

    rare = tuple(sorted({i for i in prefilter.rare if i >= 0}))
    database = _database(tuple(prefilter.literals[i] for i in rare)) if rare else None
    lengths = np.array([len(prefilter.literals[i].encode("utf-8")) for i in rare], dtype=np.int64)
    return rare, database, lengths, np.array([prefilter.header_only[i] for i in rare], dtype=bool)


def exact_signatures(prefilter: Prefilter, found: dict, rows, text):
    """The signatures each kept event could match (all their literals in its kept text), as a list<int32> array.
    `rows`: per event, its row in `text` (-1: not kept); `found`: rare_hits."""
    import numpy as np
    import pyarrow as pa

    events = [rows[hit] for hit in found.values()]
    candidates = np.unique(np.concatenate(events)) if events else np.zeros(0, dtype=np.int64)
    candidates = candidates[candidates >= 0]
    event, literal = literal_hits(prefilter, text, candidates)
    width = len(prefilter.literals)
    present = np.unique(event * width + literal)  # sorted keys of the (row, literal) pairs found
    pairs_row, pairs_sig = [], []
    for number, lits in enumerate(prefilter.signatures):
        hit = found.get(prefilter.rare[number])
        if hit is None:
            continue
        at = rows[hit]
        at = at[at >= 0]
        for lit in lits:
            key = at * width + lit
            where = np.minimum(np.searchsorted(present, key), max(len(present) - 1, 0))
            at = at[present[where] == key] if len(present) else at[:0]
        pairs_row.append(at)
        pairs_sig.append(np.full(len(at), number, dtype=np.int32))
    row = np.concatenate(pairs_row) if pairs_row else np.zeros(0, dtype=np.int64)
    sig = np.concatenate(pairs_sig) if pairs_sig else np.zeros(0, dtype=np.int32)
    order = np.lexsort((sig, row))
    offsets = np.zeros(len(text) + 1, dtype=np.int32)
    np.cumsum(np.bincount(row, minlength=len(text)), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(sig[order], type=pa.int32()))


def _find_all(data: bytes, literals: list[bytes]) -> tuple[list[int], list[int]]:
    """(end offsets, literal numbers) of every occurrence, without Hyperscan (slower by the number of literals)."""
    ends, ids = [], []
    for number, literal in enumerate(literals):
        at = data.find(literal)
        while at >= 0:
            ends.append(at + len(literal))
            ids.append(number)
            at = data.find(literal, at + 1)
    return ends, ids


def _hits_pyarrow(prefilter: Prefilter, text):
    """The same without Hyperscan: one substring search per literal (slower by the number of literals)."""
    import numpy as np
    import pyarrow.compute as pc

    first_line = pc.list_element(pc.split_pattern(text, "\n", max_splits=1), 0)
    events, literals = [], []
    for i, (literal, header_only) in enumerate(zip(prefilter.literals, prefilter.header_only, strict=True)):
        hit = np.flatnonzero(
            pc.match_substring(first_line if header_only else text, literal).to_numpy(zero_copy_only=False)
        )
        events.append(hit)
        literals.append(np.full(len(hit), i, dtype=np.int64))
    return np.concatenate(events), np.concatenate(literals)


@lru_cache(maxsize=8)
def _database(literals: tuple[str, ...], once_per_scan: bool = False):
    """A compiled Hyperscan database of the literals (once per worker process), or None without Hyperscan.
    `once_per_scan`: each literal is reported at its first occurrence only."""
    try:
        import hyperscan
    except ImportError:
        return None
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=[lit.encode("utf-8") for lit in literals],
        ids=list(range(len(literals))),
        elements=len(literals),
        flags=[hyperscan.HS_FLAG_SINGLEMATCH if once_per_scan else 0] * len(literals),
        literal=True,
    )
    return database
