"""The answer regression gate: every labelled case's answer, pinned in tests/data/answers.json.

The whole labelled corpus (the seeds, every fault-lab recording, the incidents from public threads and the hostile
corpus) runs through the session's one Spark session (the memoised `diagnose_bundle` fixture, so the tests that
assert the truth of these cases reuse the same runs). Per case the pinned answer is the verdict, the top root
cause's rule and category, and when it was first seen. Any change fails with a readable diff.

The pinned answers are today's answers, not the truth (test_seeds.py, test_lab_bundles.py and test_incidents.py
assert that): the gate catches movement nobody meant. To move an answer on purpose, regenerate the file and commit
it with the change that moved it, saying why:

    FLINKDOCTOR_PIN_ANSWERS=1 flock /tmp/flinkdoctor-spark.lock .venv/bin/python -m pytest tests/test_answers.py

The switch is refused in CI (CI=true): CI checks answers, it never pins them.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from conftest import DATA

ANSWERS = DATA / "answers.json"
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
PIN = os.environ.get("FLINKDOCTOR_PIN_ANSWERS") == "1"
FIELDS = ("verdict", "rule", "category", "first_seen")


def labelled_cases() -> dict[str, object]:
    """Case name -> the input it is diagnosed from; the hostile corpus is added by name (built per session)."""
    cases: dict[str, object] = {}
    for seed in sorted((DATA / "seeds").iterdir()):
        if seed.is_dir():
            cases[f"seeds/{seed.name}"] = seed
    for recording in sorted((DATA / "lab").glob("*/*.tar.gz")):
        cases[f"lab/{recording.parent.name}/{recording.name.removesuffix('.tar.gz')}"] = recording
    for incident in sorted((DATA / "incidents").glob("d*")):
        if (incident / "expected.json").is_file():
            cases[f"incidents/{incident.name}"] = incident / "bundle"
    return cases


def answer(report: dict) -> dict:
    """What is pinned of a report: the verdict and the top root cause (rule, category, first seen)."""
    top = report["root_causes"][0] if report["root_causes"] else {}
    return {
        "verdict": report["verdict"],
        "rule": top.get("rule"),
        "category": top.get("category"),
        "first_seen": top.get("first_seen"),
    }


def differences(pinned: dict, now: dict) -> list[str]:
    """One line per case that moved, appeared or disappeared: `case: field: pinned -> now`."""
    lines = []
    for case in sorted(set(pinned) | set(now)):
        if case not in now:
            lines.append(f"{case}: pinned, but no longer in the corpus")
        elif case not in pinned:
            lines.append(f"{case}: not pinned; its answer is {now[case]}")
        else:
            lines += [
                f"{case}: {name}: {pinned[case].get(name)!r} -> {now[case].get(name)!r}"
                for name in FIELDS
                if pinned[case].get(name) != now[case].get(name)
            ]
    return lines


def test_the_diff_names_each_moved_field():
    """The gate's own check: a moved category, a new case and a gone case each give their own line."""
    pinned = {"a": dict.fromkeys(FIELDS, "x"), "gone": dict.fromkeys(FIELDS, "x")}
    now = {"a": {**dict.fromkeys(FIELDS, "x"), "category": "y"}, "new": dict.fromkeys(FIELDS, "x")}
    assert differences(pinned, now) == [
        "a: category: 'x' -> 'y'",
        "gone: pinned, but no longer in the corpus",
        f"new: not pinned; its answer is {now['new']}",
    ]
    assert differences(pinned, dict(pinned)) == []


def test_pinning_is_refused_in_ci():
    if PIN and IN_CI:
        pytest.fail("FLINKDOCTOR_PIN_ANSWERS=1 is refused in CI: answers are pinned on purpose, in a commit")


def test_answers_are_as_pinned(diagnose_bundle, hostile, hostile_corpus, record_property):
    started = time.perf_counter()
    now = {case: answer(diagnose_bundle(path)) for case, path in labelled_cases().items()}
    now["hostile/hostile"] = answer(hostile["report"])
    now["hostile/bomb-among-logs"] = answer(diagnose_bundle(hostile_corpus["bomb-among-logs"]))
    record_property("answers_s", round(time.perf_counter() - started, 1))
    if PIN and not IN_CI:  # in CI the answers are checked all the same
        ANSWERS.write_text(json.dumps(now, indent=1, sort_keys=True) + "\n", "utf-8")
        return
    pinned = json.loads(ANSWERS.read_text("utf-8"))
    moved = differences(pinned, now)
    assert not moved, (
        f"{len(moved)} answer(s) moved from tests/data/answers.json; if on purpose, regenerate it "
        "(FLINKDOCTOR_PIN_ANSWERS=1 pytest tests/test_answers.py) and say why in the commit:\n" + "\n".join(moved)
    )


def test_each_report_times_its_laps_in_order_and_its_scan_tasks_cpu(diagnose_bundle):
    """The laps are cumulative seconds; beside them the scan tasks' CPU, summed over the tasks (the bench reads
    both: the events lap is the tasks' CPU over the cores, the rest is Spark's and the driver's)."""
    report = diagnose_bundle(labelled_cases()["seeds/000"])
    timings = report["timings"]
    laps = [timings[name] for name in ("events_s", "findings_s", "analytics_s", "total_s")]
    assert laps == sorted(laps) and laps[0] > 0
    assert 0 < timings["scan_tasks_cpu_s"] < 600
