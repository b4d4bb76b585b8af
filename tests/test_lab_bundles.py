"""Recorded fault-lab bundles (real Flink 1.20 and 2.x runs): each scenario's category must be the top root cause."""

from __future__ import annotations

import pytest

from conftest import DATA

EXPECTED = {
    "state-over-memory-limit": {"state-size-limit"},
    "checkpoint-timeout": {"checkpoint-timeout"},
    "restart-exhausted": {"user-code-error"},
    "taskmanager-freeze": {"host-stall", "taskmanager-lost"},
    "jobmanager-freeze": {"host-stall"},
    "zookeeper-freeze": {"zookeeper-connectivity"},
    "heap-oom": {"jvm-heap-oom"},
    "heap-oom-exit": {"jvm-heap-oom"},
    "incompatible-restore": {"state-restore-incompatible"},
    "slots-short": {"resources-unavailable"},
    # JVM and resource faults
    "direct-oom": {"jvm-direct-oom"},
    "metaspace-oom": {"jvm-metaspace-oom"},
    "native-thread-oom": {"jvm-direct-oom"},
    "too-many-open-files": {"disk-exhausted"},
    "no-space-left": {"disk-exhausted"},
    "network-buffers": {"network-buffers-insufficient"},
    "illegal-configuration": {"config-invalid"},
    "gc-pause": {"host-stall"},
    # user code and dependencies
    "kryo-failure": {"serialization-error"},
    "not-serializable": {"serialization-error"},
    "missing-dependency": {"dependency-conflict"},
    "classloader-leak": {"dependency-conflict"},
    "cancel-stuck": {"taskmanager-lost"},
    "timestamps-out-of-order": {"user-code-error"},
    # several TaskManagers, checkpoint options
    "remote-taskmanager-lost": {"taskmanager-lost"},
    "network-host-unreachable": {"network-failure"},
    "unaligned-checkpoint-unsupported": {"config-invalid"},
    # state and restore
    "max-parallelism-mismatch": {"state-restore-incompatible"},
    "serializer-incompatible": {"state-restore-incompatible"},
    "savepoint-files-missing": {"state-restore-incompatible"},
    "rocksdb-local-dir-unusable": {"disk-exhausted"},
    "rocksdb-memory-starved": {"config-invalid"},
    "ha-checkpoint-handle-deleted": {"state-restore-incompatible"},
}
# Recorded on 1.20.3 only: on 2.1.1 the metaspace OOM wedged the TaskManager without logging it, and the GC
# pauses stayed under the heartbeat timeout (see docs/lab.md).
ONLY_1_20 = {"metaspace-oom", "gc-pause"}


def test_every_scenario_recorded_on_both_versions():
    """Every scenario of the lab's catalogue has an expected category here and a recorded bundle per version."""
    lab = pytest.importorskip("flinkdoctor_lab.scenarios", reason="the fault lab (lab/) is not installed")
    from flinkdoctor_lab.install import FLINK_VERSIONS

    assert set(lab.SCENARIOS) == set(EXPECTED) | {"healthy"}
    for version in FLINK_VERSIONS:
        recorded = {p.name.removesuffix(".tar.gz") for p in (DATA / "lab" / version).glob("*.tar.gz")}
        wanted = set(lab.SCENARIOS)
        if version != "1.20.3":
            wanted -= ONLY_1_20
        assert wanted <= recorded, (version, wanted - recorded)


BUNDLES = sorted(p for p in (DATA / "lab").glob("*/*.tar.gz") if p.name.removesuffix(".tar.gz") in EXPECTED)


@pytest.mark.parametrize(
    "bundle",
    BUNDLES,
    ids=[f"{p.parent.name}/{p.name.removesuffix('.tar.gz')}" for p in BUNDLES],
)
def test_scenario_diagnosed(diagnose_bundle, bundle):
    scenario = bundle.name.removesuffix(".tar.gz")
    report = diagnose_bundle(bundle)
    assert report["root_causes"], f"{scenario}: no root cause; findings: {[f['rule'] for f in report['findings']]}"
    top = report["root_causes"][0]
    assert top["category"] in EXPECTED[scenario], (
        scenario,
        [(r["rule"], r["category"]) for r in report["root_causes"]],
    )
    assert report["flink_version"]["version"] == bundle.parent.name
    assert report["input"]["lines"] == report["input"]["lines_in_events"] + report["input"]["lines_unparsed"]


@pytest.mark.parametrize("version", ["1.20.3", "2.1.1"])
def test_checkpoint_history_from_rest_alone(diagnose_bundle, tmp_path, version):
    """Only the REST snapshots of the checkpoint-timeout run: the checkpoint history names the cause too."""
    import tarfile

    with tarfile.open(DATA / "lab" / version / "checkpoint-timeout.tar.gz") as archive:
        archive.extractall(tmp_path, filter="data")
    rest = next(tmp_path.glob("*/rest"))
    report = diagnose_bundle(rest)
    top = report["root_causes"][0]
    assert top["category"] == "checkpoint-timeout"
    assert all(ev["file"].endswith(".json") for ev in top["evidence"])
    assert "expired before completing" in top["evidence"][0]["text"]


def test_rest_snapshots_are_evidence(diagnose_bundle):
    """The REST exception history is read like a log: the restart-exhausted failure shows in rest/*.json too."""
    bundle = DATA / "lab" / "1.20.3" / "restart-exhausted.tar.gz"
    report = diagnose_bundle(bundle)
    files = {ev["file"] for f in report["findings"] for ev in f["evidence"]}
    assert any(f.endswith("job-exceptions.json") for f in files), files
