"""The incident catalogue: catalogue.yaml holds each scenario's data (config, job, expected log lines);
the modules below hold the fault steps it names, one module per family of faults.
"""

from __future__ import annotations

from . import code, core, jvm, net, state  # noqa: F401 (importing them registers their steps)
from .base import Scenario
from .catalogue import load_catalogue

SCENARIOS: dict[str, Scenario] = load_catalogue()

__all__ = ["SCENARIOS", "Scenario"]
