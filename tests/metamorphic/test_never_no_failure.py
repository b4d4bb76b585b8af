"""Never "no failure" over a failure (issue 23, part 4): every input that holds failure evidence (failure_evidence.py:
a stack trace, an exception with its message (alone, or without frames below a dated or undated line whose level
was left out, quoted or not), an ERROR, FATAL or SEVERE line, a process killed or exiting non-zero,
a FAILED task, job or pod, an error of Flink's scripts, a Kubernetes Warning event, a failure event in a healthy
log) gets a failure verdict with that evidence among its findings; the healthy lab runs stay no failure. All of
them are diagnosed in one fleet pass (shape_runner.diagnose_all)."""

from __future__ import annotations

from collections import Counter

import pytest
from failure_evidence import Evidence, all_evidence
from shape_runner import bundle_key, diagnose_all

KINDS = {
    "trace",
    "exception",
    "exception-dated",
    "exception-untimed",
    "exception-quoted",
    "error-line",
    "exit",
    "failed-state",
    "shell-error",
    "warning-event",
    "inserted",
}


@pytest.fixture(scope="module")
def verdicts(spark, rules, tmp_path_factory):
    evidence = all_evidence()
    bundles = {bundle_key(item.files): item.files for item in evidence}
    outcomes = diagnose_all(bundles, spark, rules, tmp_path_factory.mktemp("evidence"))
    return [(item, outcomes[bundle_key(item.files)]) for item in evidence]


def _shown(item: Evidence, outcome) -> bool:
    first, last = item.lines
    return any(path == item.file and first <= line <= last for path, line, _ in outcome.cited)


def test_every_kind_of_evidence_is_collected():
    kinds = Counter(item.kind for item in all_evidence())
    assert set(kinds) >= KINDS, kinds
    assert kinds["healthy"] == 2


def test_no_failure_is_answered_healthy(verdicts):
    missed = [
        (item.kind, item.source, item.files[item.file].splitlines()[item.lines[0] - 1][:160], outcome.verdict)
        for item, outcome in verdicts
        if item.failure and (outcome.verdict == "no-failure" or not _shown(item, outcome))
    ]
    print("\n".join(map(str, missed)))  # shown with -s
    assert not missed, f"{len(missed)} of {sum(1 for item, _ in verdicts if item.failure)}:\n" + "\n".join(
        map(str, missed)
    )


def test_healthy_runs_stay_healthy(verdicts):
    for item, outcome in verdicts:
        if not item.failure:
            assert outcome.verdict == "no-failure", (item.source, outcome)
