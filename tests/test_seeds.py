"""The five seed incidents: bundles made only of lines copied from each write-up."""

from __future__ import annotations

import pytest

from conftest import DATA, line_at

SEEDS = DATA / "seeds"


def chain_rules(root):
    return [step["rule"] for step in root["chain"]]


def assert_evidence_is_real(report, bundle):
    """Every evidence and chain line points at the file:line that holds exactly that text."""
    roots = report["root_causes"]
    items = [ev for root in roots for ev in root["evidence"] + root["chain"]]
    items += [ev for finding in report["findings"] for ev in finding["evidence"]]
    assert items
    for ev in items:
        assert line_at(bundle / ev["file"], ev["line"]).rstrip() == ev["text"], ev


def test_seed_000_checkpoint_storage_slow(diagnose_bundle):
    report = diagnose_bundle(SEEDS / "000")
    top = report["root_causes"][0]
    assert top["category"] == "checkpoint-storage-slow"
    assert "duration: 37829" in top["evidence"][0]["text"]
    assert {"checkpoint-stream-close-failed", "checkpoint-materialize-failed", "task-failed"} <= set(chain_rules(top))
    assert [r["category"] for r in report["root_causes"]] == ["checkpoint-storage-slow"]
    assert_evidence_is_real(report, SEEDS / "000")


def test_seed_001_state_size_limit_with_kafka_symptom(diagnose_bundle):
    report = diagnose_bundle(SEEDS / "001")
    top = report["root_causes"][0]
    assert top["category"] == "state-size-limit"
    assert len(report["root_causes"]) == 1, "the Kafka expiry and the declines are symptoms, not causes"
    chain = chain_rules(top)
    assert "kafka-producer-records-expired" in chain
    assert "checkpoint-declined" in chain
    evidence = top["evidence"][0]
    assert evidence["file"] == "jobmanager.log" and "maxSize=5242880" in evidence["text"]
    # version unknown in this bundle: the fix shows the keys of every version
    keys = {key for fix in top["fix"] for key in fix.get("config", {})}
    assert {"state.backend", "state.backend.type"} <= keys
    assert_evidence_is_real(report, SEEDS / "001")


def test_seed_002_checkpoint_timeout(diagnose_bundle):
    report = diagnose_bundle(SEEDS / "002")
    top = report["root_causes"][0]
    assert top["category"] == "checkpoint-timeout"
    assert "LeaseExpiredException" in top["evidence"][0]["text"]
    assert "checkpoint-stream-close-failed" in chain_rules(top)
    assert_evidence_is_real(report, SEEDS / "002")


def test_seed_003_host_stall_chain(diagnose_bundle):
    report = diagnose_bundle(SEEDS / "003")
    top = report["root_causes"][0]
    assert top["category"] == "host-stall"
    assert top["rule"] == "kernel-soft-lockup"
    assert top["evidence"][0]["file"] == "messages" and top["host"] == "hadoop-080-037"
    chain = chain_rules(top)
    for member in (
        "zookeeper-client-session-timeout",
        "taskmanager-heartbeat-timeout",
        "jobmanager-lost-leadership",
        "hdfs-close-interrupted",
        "job-restarting",
    ):
        assert member in chain, member
    # the TaskManager on another host noticed the lost JobManager 74 s before the kernel line was written
    lost = next(step for step in top["chain"] if step["rule"] == "jobmanager-lost-leadership")
    assert lost["file"] == "taskmanager.log" and lost["time"] < top["first_seen"]
    assert len(report["root_causes"]) == 1
    # the aftermath of the chain: recover the lease of the file the thread dump shows still being written
    commands = [fix["command"] for fix in top["fix"] if fix.get("command")]
    assert any(
        c.startswith(
            "hdfs debug recoverLease -path /data/BaseData/flinksql/TCFlyIntB2BTrade_flight_segment_info/2019/04/23/"
        )
        for c in commands
    ), commands
    assert_evidence_is_real(report, SEEDS / "003")


def test_seed_003_fix_names_the_open_file(diagnose_bundle):
    report = diagnose_bundle(SEEDS / "003")
    finding = next(f for f in report["findings"] if f["rule"] == "hdfs-close-interrupted")
    assert finding["role"] == "cause"
    hdfs_root = [r for r in report["root_causes"] if r["category"] == "hdfs-lease"]
    assert not hdfs_root, "the interrupted close is explained by the host stall"
    top = report["root_causes"][0]
    chain_close = next(step for step in top["chain"] if step["rule"] == "hdfs-close-interrupted")
    assert "Interrupted while waiting for data to be acknowledged by pipeline" in chain_close["text"]


def test_seed_003_without_kernel_log_blames_zookeeper(diagnose_bundle, tmp_path):
    """Drop the kernel log: the diagnosis must fall back to the next cause in the chain."""
    import shutil

    bundle = tmp_path / "003-no-kernel"
    shutil.copytree(SEEDS / "003", bundle)
    (bundle / "messages").unlink()
    report = diagnose_bundle(bundle)
    assert report["root_causes"][0]["category"] == "zookeeper-connectivity"


def test_seed_004_zookeeper_connectivity(diagnose_bundle):
    report = diagnose_bundle(SEEDS / "004")
    top = report["root_causes"][0]
    assert top["category"] == "zookeeper-connectivity"
    assert top["rule"] == "zookeeper-client-session-timeout"
    chain = chain_rules(top)
    assert "zookeeper-connection-suspended" in chain and "jobmanager-lost-leadership" in chain
    texts = " ".join(fix["text"] + str(fix.get("config")) for fix in top["fix"])
    assert "tolerate-suspended-connections" in texts
    assert_evidence_is_real(report, SEEDS / "004")


@pytest.mark.parametrize(
    "version, present, absent",
    [
        ("1.10.0", "state.backend", "state.backend.type"),
        ("1.20.3", "execution.checkpointing.storage", "state.backend"),
    ],
)
def test_fix_follows_the_flink_version(diagnose_bundle, version, present, absent):
    report = diagnose_bundle(SEEDS / "001", flink_version=version)
    keys = {key for fix in report["root_causes"][0]["fix"] for key in fix.get("config", {})}
    assert present in keys and absent not in keys


def test_seed_004_fix_on_old_flink_does_not_offer_missing_key(diagnose_bundle):
    report = diagnose_bundle(SEEDS / "004", flink_version="1.10.0")
    configs = [fix.get("config", {}) for fix in report["root_causes"][0]["fix"]]
    assert not any("high-availability.zookeeper.client.tolerate-suspended-connections" in c for c in configs)
