"""Bytes that are not UTF-8 in a log (issue #27): no crash, every line counted, the failure in the clean lines still
found, and text that could not be decoded shown with replacement characters, never dropped.

Many Flink installations log in GBK/GB18030 or Shift-JIS (the JVM's file.encoding), a log can be cut inside a
character, and a file can hold any bytes at all. The scan reads raw bytes; whatever is not UTF-8 becomes U+FFFD
at the one place the scan turns bytes into text (scanner._valid_utf8).
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from conftest import DATA

SEED4 = DATA / "seeds" / "004"
# the issue's example: a WARN line of Flink's Task logger (header as seed 004's lines print it) with a Chinese
# message, written by a JVM whose file.encoding is GBK
GBK_LINE = "2020-10-16 17:05:05,939 WARN  org.apache.flink.runtime.taskmanager.Task - 任务失败 状态异常"


def true_lines(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def kept_texts(report: dict, path: str) -> list[str]:
    """The texts of the kept events table's events of one source (by its path in the bundle)."""
    sid = next(i for i, s in enumerate(report["input"]["sources"]) if s["path"] == path)
    table = pq.read_table(Path(report["work_dir"]) / "events.parquet", columns=["sid", "text"]).to_pydict()
    return [text for s, text in zip(table["sid"], table["text"], strict=True) if s == sid]


def test_a_gbk_message_beside_a_taskmanager_log_is_read_and_shown(diagnose_bundle, tmp_path):
    """Issue #27, defect 1: this bundle made `diagnose` exit 4 (UnicodeDecodeError in the scan)."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    gbk = (GBK_LINE + "\n").encode("gbk") * 3
    (bundle / "taskmanager-gbk.log").write_bytes(gbk)
    (bundle / "taskmanager.log").write_bytes((SEED4 / "taskmanager.log").read_bytes())
    report = diagnose_bundle(bundle, keep_work_dir=True)
    assert report["root_causes"][0]["category"] == "zookeeper-connectivity"  # seed 004's answer, still found
    by_path = {s["path"]: s["lines"] for s in report["input"]["sources"]}
    assert by_path == {
        "taskmanager-gbk.log": 3,
        "taskmanager.log": true_lines((SEED4 / "taskmanager.log").read_bytes()),
    }
    shown = (GBK_LINE + "\n").encode("gbk").decode("utf-8", "replace").removesuffix("\n")
    assert "\ufffd" in shown and shown.startswith("2020-10-16 17:05:05,939 WARN  org.apache.flink.runtime.taskmanager")
    assert kept_texts(report, "taskmanager-gbk.log") == [shown] * 3  # every WARN line kept, its text replaced
