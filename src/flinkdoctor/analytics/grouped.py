"""Figures of many small groups at once: numpy over the rows of every group together.

A session cluster's log has 100,000 jobs of a few checkpoints each; numpy called once per job cost more than each
job's own work (a few microseconds a call, dozens of calls a job). Here a figure is taken for every group in a
few calls over all their rows; each function gives what its per-group counterpart in checkpoints.py gives.
Groups are runs of equal codes in a sorted integer array (`codes`), as the sorted checkpoint columns hold jobs.
"""

from __future__ import annotations

from typing import Any


def runs(codes) -> tuple[Any, Any, Any]:
    """(the codes present, where each one's run starts, where it ends): `codes` sorted, each code's rows
    together."""
    import numpy as np

    if not len(codes):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.diff(codes, prepend=codes[0] - 1))
    return np.asarray(codes[starts], np.int64), starts, np.append(starts[1:], len(codes))


def ranges(starts, ends):
    """The positions start..end - 1 of each pair (int64 arrays), one after another."""
    import numpy as np

    sizes = ends - starts
    return np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)


def counts(flags, starts):
    """Per run, how many of its rows are flagged (`flags` a bool array)."""
    import numpy as np

    if not len(starts):
        return np.zeros(0, np.int64)
    return np.add.reduceat(flags.astype(np.int64), starts)


def nearest_ranks(values, group, groups: int, shares: dict[str, float]) -> tuple[Any, dict[str, Any]]:
    """(per group its number of values, {name: per group the nearest-rank percentile at that share}) of `values`
    (no nan) by their `group` (0..groups - 1, in any order): checkpoints._nearest_ranks of each group's values, a
    value only where the group has one."""
    import numpy as np

    size = np.bincount(group, minlength=groups)
    ranked = values[np.lexsort((values, group))]
    first = np.cumsum(size) - size
    found = {}
    for name, share in shares.items():  # (as math.ceil(share * len): the same float product, then its ceiling)
        rank = np.maximum(np.ceil(share * size.astype(np.float64)).astype(np.int64) - 1, 0)
        found[name] = ranked[np.minimum(first + rank, max(len(ranked) - 1, 0))] if len(ranked) else ranked
    return size, found


def first_extremes(values, keys: tuple) -> Any:
    """The positions (ascending) of each group's smallest and largest value, the earliest of equal ones (as
    numpy's argmin and argmax of each group's run): groups by `keys` (np.lexsort's, most significant last)."""
    import numpy as np

    if not len(values):
        return np.zeros(0, np.int64)
    picked = []
    for ranked in (np.lexsort((values, *keys)), np.lexsort((-values, *keys))):  # (stable: equal ones in place)
        new = np.zeros(len(values), dtype=np.bool_)
        new[0] = True
        for key in keys:
            in_order = key[ranked]
            new[1:] |= in_order[1:] != in_order[:-1]
        picked.append(ranked[new])
    return np.unique(np.concatenate(picked))


def span_widths(first, last, spans):
    """checkpoints' series span width of each group (int64 arrays: its first and last time in µs, its number of
    spans): (last - first) / spans as timedelta / int rounds, half to even."""
    import numpy as np

    quotient, remainder = np.divmod(last - first, spans)
    up = (2 * remainder > spans) | ((2 * remainder == spans) & (quotient % 2 == 1))
    return quotient + up


def spans_of(micros, first, width, spans):
    """Each row's span (checkpoints._span_starts' rule): its time since its group's first over its group's width,
    the last span taking the rest; 0 where the width is 0. Arrays per row."""
    import numpy as np

    wide = width != 0
    span = np.zeros(len(micros), dtype=np.int64)
    span[wide] = np.minimum(((micros[wide] - first[wide]) / width[wide]).astype(np.int64), spans[wide] - 1)
    return span


def hours(micros):
    """Microseconds as hours, as checkpoints' trend reckons them (to float, / 10**6, / 3600)."""
    import numpy as np

    found = micros.astype(np.float64)
    found /= 10**6
    found /= 3600
    return found
