"""Which signatures an event could match, from the literals each signature's regexes require.

Every signature's regex implies plain substrings that any match must contain (required_literals, read from the
regex's parse tree). One scan per Arrow batch finds all of them at once (Hyperscan, several GB/s; pyarrow's
substring search where Hyperscan has no wheel), and each event gets the numbers of the signatures whose literals
it holds. Matching then evaluates a signature's regexes only on those events: without this, testing a few hundred
literals on every candidate stack trace in the JVM cost more than everything else together.

Over raw log bytes (scanner.py) a first pass looks for only the rarest literal of each signature
(knowledge/literal_counts.json, counted in real logs): common words such as `.jar` or ` to ` would cost a Python
callback per occurrence. Only the events it hits get their text cut out and the full test (`scan`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any

from .regexes import parse, sre
from .rulebook import Rule, Signature

MIN_LITERAL = 4  # shorter runs (": ", "at ") are in almost every event and would only cost time


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


def required_literals(sig: Signature) -> list[str]:
    """Every literal a match of the signature must contain: its own `literal`, and each run of at least
    MIN_LITERAL plain characters at the top level of its text, message and exception regexes.

    Read from the parse tree Python's `re` builds: a run is a sequence of literal characters that is not inside
    a group, an alternative, a class or a quantifier, so every match holds it. A case-insensitive regex gives
    none (its literal could appear in any case). When unsure, fewer literals: the prefilter only skips events.
    """
    found = [sig.literal] if sig.literal else []
    for pattern in (sig.text, sig.message, sig.exception):
        if pattern is None:
            continue
        tree = parse(pattern)
        if tree.state.flags & sre.SRE_FLAG_IGNORECASE:
            continue
        run: list[str] = []
        for op, av in [*tree, (None, None)]:  # a sentinel ends the last run
            if op is sre.LITERAL:
                run.append(chr(av))
                continue
            if len(run) >= MIN_LITERAL and "".join(run) not in found:
                found.append("".join(run))
            run = []
    return found


def signature_numbers(rules: list[Rule]) -> list[list[int]]:
    """Per rule, the numbers its signatures have in the Prefilter built from the same rules."""
    numbers, n = [], 0
    for rule in rules:
        numbers.append(list(range(n, n + len(rule.signatures))))
        n += len(rule.signatures)
    return numbers


def scan(prefilter: Prefilter, text):
    """For a pyarrow string array of events: a list<int32> array of the signatures each event could match."""
    import numpy as np
    import pyarrow as pa

    event, literal = _hits(prefilter, text)
    need, needed, always = _signature_table(prefilter)
    ok = np.zeros((len(text), len(prefilter.signatures)), dtype=bool)  # events x signatures
    ok[:, always] = True
    rows = np.unique(event)
    if len(rows):
        present = np.zeros((len(rows), len(prefilter.literals)), dtype=np.float32)
        present[np.searchsorted(rows, event), literal] = 1
        ok[rows] = (present @ need) == needed  # all of the signature's literals present (a BLAS product)
    offsets = np.zeros(len(text) + 1, dtype=np.int32)
    np.cumsum(ok.sum(axis=1), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(np.nonzero(ok)[1], type=pa.int32()))


def _hits(prefilter: Prefilter, text):
    """(event index, literal id) of every literal occurrence that counts, as numpy arrays (may repeat)."""
    import numpy as np
    import pyarrow.compute as pc

    if not prefilter.literals or len(text) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    text = text.fill_null("")
    database = _database(prefilter.literals)
    if database is None:
        return _hits_pyarrow(prefilter, text)
    newline = pc.find_substring(text, "\n").to_numpy(zero_copy_only=False)
    offsets = np.frombuffer(text.buffers()[1], dtype=np.int32)[text.offset : text.offset + len(text) + 1]
    ends, ids = [], []

    def on_match(literal_id, start, end, flags, context):
        ids.append(literal_id)
        ends.append(end)

    database.scan(memoryview(text.buffers()[2])[offsets[0] : offsets[-1]].tobytes(), match_event_handler=on_match)
    if not ids:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    literal = np.array(ids, dtype=np.int64)
    lengths = np.array([len(lit.encode("utf-8")) for lit in prefilter.literals], dtype=np.int64)
    end = np.array(ends, dtype=np.int64) + offsets[0]
    start = end - lengths[literal]
    event = np.searchsorted(offsets, start, side="right") - 1
    inside = end <= offsets[event + 1]  # a literal spanning two events' bytes counts for neither
    header_end = np.where(newline[event] >= 0, offsets[event] + newline[event], offsets[event + 1])
    counts = inside & (~np.array(prefilter.header_only)[literal] | (end <= header_end))
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
    import pyarrow.compute as pc

    pairs_row, pairs_sig = [], []
    heads: list[Any] = []
    whole: dict[int, Any] = {}  # literal id -> bool per row, for literals tested on most rows

    def present(literal: int, at):
        if prefilter.header_only[literal] and not heads:
            heads.append(pc.list_element(pc.split_pattern(text, "\n", max_splits=1), 0))
        where = heads[0] if prefilter.header_only[literal] else text
        if literal in whole or 4 * len(at) > len(text):
            if literal not in whole:
                whole[literal] = pc.match_substring(where, prefilter.literals[literal]).to_numpy(zero_copy_only=False)
            return whole[literal][at]
        found = pc.match_substring(where.take(pa.array(at)), prefilter.literals[literal])
        return found.to_numpy(zero_copy_only=False)

    for number, lits in enumerate(prefilter.signatures):
        events = found.get(prefilter.rare[number])
        if events is None:
            continue
        at = rows[events]
        at = at[at >= 0]
        for literal in lits:
            if not len(at):
                break
            at = at[present(literal, at)]
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


@lru_cache(maxsize=4)
def _signature_table(prefilter: Prefilter):
    """(literals x signatures 0/1 matrix, literals per signature, signatures without literals)."""
    import numpy as np

    need = np.zeros((len(prefilter.literals), len(prefilter.signatures)), dtype=np.float32)
    for s, lits in enumerate(prefilter.signatures):
        need[list(lits), s] = 1
    always = np.array([s for s, lits in enumerate(prefilter.signatures) if not lits], dtype=np.int64)
    return need, need.sum(axis=0), always


@lru_cache(maxsize=4)
def _database(literals: tuple[str, ...]):
    """A compiled Hyperscan database of the literals (once per worker process), or None without Hyperscan."""
    try:
        import hyperscan
    except ImportError:
        return None
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    database.compile(
        expressions=[lit.encode("utf-8") for lit in literals],
        ids=list(range(len(literals))),
        elements=len(literals),
        flags=[0] * len(literals),
        literal=True,
    )
    return database
