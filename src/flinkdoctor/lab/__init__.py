"""Fault lab: real Flink clusters, real faults, real bundles (see docs/lab.md).

Imports nothing heavy; `flinkdoctor.lab.cli` is what the main CLI registers.
"""
