"""Logs without incidents: real Flink runs from the fault lab, and Loghub samples of neighbouring systems."""

from __future__ import annotations

import pytest

from conftest import DATA

# system: (layout, kind, quiet). Quiet samples hold only routine operation; the Hadoop sample mixes in runs with
# injected machine-down / network / disk-full failures (its README), so a diagnosis there is not invented.
LOGHUB = {
    "Zookeeper": ("zookeeper-server", "zookeeper", True),
    "HDFS": ("hdfs-2008", "hdfs-datanode", True),
    "Hadoop": ("hadoop-daemon", "unknown", False),
    "Spark": ("spark-log4j", "unknown", True),
    "Linux": ("syslog", None, True),
}
HEALTHY = sorted((DATA / "lab").glob("*/healthy.tar.gz"))


@pytest.mark.parametrize("system", sorted(LOGHUB))
def test_loghub_sample_parsed_with_its_layout_and_no_invented_root_cause(diagnose_bundle, system):
    layout, kind, quiet = LOGHUB[system]
    report = diagnose_bundle(DATA / "loghub" / f"{system}_2k.log", year=2005)
    source = report["input"]["sources"][0]
    assert source["layout"] == layout
    if kind:
        assert source["kind"] == kind
    assert not source["kind"].startswith("flink-")
    assert report["input"]["lines"] == 2000
    assert report["input"]["lines_unparsed"] == 0
    if quiet:
        assert report["root_causes"] == []


def test_healthy_flink_runs_were_recorded():
    assert len(HEALTHY) >= 2, "expected healthy lab bundles for Flink 1.20 and 2.x"


@pytest.mark.parametrize("bundle", HEALTHY, ids=[p.parent.name for p in HEALTHY])
def test_healthy_flink_run_has_warnings_but_no_root_cause(diagnose_bundle, bundle):
    import tarfile

    with tarfile.open(bundle) as archive:
        text = b"".join(
            archive.extractfile(m).read() for m in archive.getmembers() if m.isfile() and m.name.endswith(".log")
        )
    assert b" WARN " in text, "a real run has WARN lines; the point is that they are not causes"
    report = diagnose_bundle(bundle)
    assert report["root_causes"] == []
    assert report["flink_version"]["version"] == bundle.parent.name
    assert report["input"]["lines"] == report["input"]["lines_in_events"] + report["input"]["lines_unparsed"]
