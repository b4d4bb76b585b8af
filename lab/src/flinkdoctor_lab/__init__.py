"""Fault lab for flinkdoctor: real Flink clusters, real faults, real bundles (see docs/lab.md).

A package of its own so that the product wheel holds only the product: the lab imports helpers from
`flinkdoctor`, never the reverse. Imports nothing heavy, so `flinkdoctor-lab --help` starts fast.
"""

from __future__ import annotations


class LabError(Exception):
    """A failure the lab reports as one line (a bad catalogue, a run that could not finish); never a traceback."""
