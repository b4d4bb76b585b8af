"""Clean-up after any cause (issue #27, defect 3): a file left open-for-write loses data whatever the root cause
was, so the answer carries its recovery whenever the evidence shows an interrupted close.

The bundle is made of real lines only:
- the fault lab's heap-oom recording on Flink 1.20.3 (tests/data/lab/1.20.3/heap-oom.tar.gz): a TaskManager heap
  OOM, the root cause;
- the seed 003 write-up's thread dump (tests/data/seeds/003/jstack-taskmanager.txt), its DataStreamer thread
  naming the in-progress file; the path is the issue's example (/data/out/2024/03/05/part-1-7.in-progress), the
  only value changed;
- the seed 003 TaskManager's interrupted HDFS close (tests/data/seeds/003/taskmanager.log, lines 47-62: the ERROR
  line "Error during disposal of stream operator." and its InterruptedIOException trace), as it was logged.
"""

from __future__ import annotations

import tarfile

from conftest import DATA

SEED3 = DATA / "seeds" / "003"
OPEN_FILE = "/data/out/2024/03/05/part-1-7.in-progress"
SEED_FILE = "/data/BaseData/flinksql/TCFlyIntB2BTrade_flight_segment_info/2019/04/23/tmp-part-0-6.in-progress"


def test_an_open_file_is_recovered_whatever_the_root_cause(diagnose_bundle, tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    with tarfile.open(DATA / "lab" / "1.20.3" / "heap-oom.tar.gz") as archive:
        archive.extractall(bundle, filter="data")
    dump = (SEED3 / "jstack-taskmanager.txt").read_text("utf-8")
    assert SEED_FILE in dump
    (bundle / "jstack-taskmanager.txt").write_text(dump.replace(SEED_FILE, OPEN_FILE), "utf-8")
    close = (SEED3 / "taskmanager.log").read_text("utf-8").splitlines(keepends=True)[46:62]
    assert "Error during disposal of stream operator" in close[0] and "InterruptedIOException" in close[1]
    (bundle / "taskmanager-sink.log").write_text("".join(close), "utf-8")

    report = diagnose_bundle(bundle)
    top = report["root_causes"][0]
    assert top["category"] == "jvm-heap-oom"  # the cause is the OOM, not the file
    recover = [fix for fix in top["fix"] if fix.get("command", "").startswith("hdfs debug recoverLease")]
    assert recover == [
        {
            "text": recover[0]["text"],
            "command": f"hdfs debug recoverLease -path {OPEN_FILE} -retries 3",
            "for": "hdfs-close-interrupted",
        }
    ]
    named = {ev["text"] for f in report["findings"] if f["rule"] == "hdfs-file-being-written" for ev in f["evidence"]}
    assert any(OPEN_FILE in text for text in named)
