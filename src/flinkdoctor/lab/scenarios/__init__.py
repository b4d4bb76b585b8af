"""The incident catalogue: for each scenario the config, the job's arguments, the fault, and the
log lines the run must produce (regexes checked on the bundle, reported in lab.json).

One module per family of faults; each has a SCENARIOS list.
"""
from __future__ import annotations

from . import core, state, code, net, jvm
from .base import Scenario

SCENARIOS: dict[str, Scenario] = {s.name: s for m in (core, state, code, net, jvm) for s in m.SCENARIOS}

__all__ = ["SCENARIOS", "Scenario"]
