"""How unlikely a shared incident is by chance: the background it is measured against.

A candidate incident is a window on one resource (a host, a storage authority, a ZooKeeper quorum, a Kafka
cluster) in which `observed` jobs show one cause. The lake says how many jobs ran on that resource during the
window (`exposed`), how many jobs of the whole fleet show the cause anywhere (`with_cause`) and how many jobs the
fleet has (`fleet`). If the cause struck jobs at random, regardless of where and when they ran, the jobs with it
would be `with_cause` jobs drawn at random from the fleet, and `exposed * with_cause / fleet` of them would fall
on the resource in the window: the expected count.

The window starts at the first job's sighting, so that job is given; the chance of the rest is that of at least
`observed - 1` of the other `exposed - 1` jobs showing the cause, when the other `with_cause - 1` jobs with it are
spread at random over the other `fleet - 1` jobs: the upper tail of a hypergeometric distribution.

Many windows are tested (one per sighting, per resource and per cause), so a window counts only when its chance
is below a threshold shared by all of them: `FALSE_ALARM / M` (Bonferroni), where M counts only the windows that
could reach it at all (Tarone): a window on a resource with no other job in it, or of a cause seen in one job,
can never be surprising, and does not dilute the others. The chance that the background alone puts any incident
in the report is then at most FALSE_ALARM, whatever the size of the fleet.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

FALSE_ALARM = 0.01  # the chance, at most, that background failures alone make an incident of the report


def _log_comb(n: int, k: int) -> float:
    return math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)


def upper_tail(at_least: int, draws: int, successes: int, population: int) -> float:
    """P(X >= at_least) for X ~ Hypergeometric: `draws` items drawn without replacement from `population` items
    of which `successes` are marked. Exact sum of the terms (in logs, so a tail of 1e-300 does not vanish)."""
    if not 0 <= draws <= population or not 0 <= successes <= population:
        raise ValueError(f"hypergeometric out of range: {draws} draws, {successes} of {population}")
    low, high = max(at_least, 0, draws + successes - population), min(draws, successes)
    if low > high:
        return 0.0
    if low <= max(0, draws + successes - population):
        return 1.0  # the whole distribution
    total = _log_comb(population, draws)
    logs: list[float] = []
    top = -math.inf
    for x in range(low, high + 1):  # the terms rise to the mode, then fall: stop once they no longer count
        logs.append(_log_comb(successes, x) + _log_comb(population - successes, draws - x) - total)
        top = max(top, logs[-1])
        if len(logs) > 1 and logs[-1] < logs[-2] and logs[-1] < top - 50:
            break
    return min(1.0, math.exp(top) * sum(math.exp(value - top) for value in logs))


def chance(observed: int, exposed: int, with_cause: int, fleet: int) -> float:
    """How likely `observed` jobs with the cause among the `exposed` jobs of a window are by chance, given the
    first of them (the window starts at its sighting)."""
    if observed < 1:
        return 1.0
    return upper_tail(observed - 1, exposed - 1, with_cause - 1, fleet - 1)


def least_chance(exposed: int, with_cause: int, fleet: int) -> float:
    """The smallest chance a window of this size could ever have (every other exposed job with the cause): a
    window whose least chance is above the threshold cannot be an incident and is not counted among the tests."""
    most = min(exposed, with_cause)
    return chance(most, exposed, with_cause, fleet) if most >= 2 else 1.0


def expected(exposed: int, with_cause: int, fleet: int) -> float:
    """The jobs with the cause to expect among `exposed`, at the cause's rate over the fleet."""
    return exposed * with_cause / fleet if fleet else 0.0


def threshold(least: Iterable[float], false_alarm: float = FALSE_ALARM) -> float:
    """Tarone's Bonferroni threshold: the largest false_alarm / M such that at most M of the tests could reach
    it (`least`: every test's least chance)."""
    values = sorted(least)
    tests = 1
    reachable = len(values)
    while True:
        limit = false_alarm / tests
        while reachable and values[reachable - 1] > limit:
            reachable -= 1
        if reachable <= tests:
            return limit
        tests += 1
