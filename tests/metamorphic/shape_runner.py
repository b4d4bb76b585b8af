"""Run the shape-invariance suite: every case in every shape, diagnosed in one fleet run, and the property checked.

Each (case, transformation) gives two small bundles, the reference and the shaped one; identical bundles are
diagnosed once. All of them are written under one root and diagnosed by `run_fleet` in one Spark application (a
bundle costs the fleet tens of milliseconds, a `diagnose` of its own about a second). The one exception: the
fleet gives syslog lines without a year the year most of its bundles show, so bundles that hold such lines run in
a fleet of their own year.

The property, per (case, transformation): the shaped bundle gets the reference's verdict and top category, and,
where the shape keeps every line's date and time, the same first-seen time of the top root cause. A shape that
cuts lines away (a trace cut to its head or its tail) does not apply to a case whose reference answer rests only on
lines the cut removed: when the answer differs and every line the reference cites for its top root cause's rule
is gone from the shape, the shape no longer holds that evidence, and answering it anyway would be a guess. Such
trials are counted apart ("cut"), neither as holding nor as failing.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from shape_cases import Case
from shape_events import EXCEPTION, FRAME, read_events
from shape_transforms import Files, Transform

SYSLOG = re.compile(r"\b[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d\b")  # anywhere: a shape may wrap or prefix it
YEAR = re.compile(r"\b((?:19|20)\d\d)-\d\d-\d\d[ T]\d\d:\d\d")


@dataclass(frozen=True)
class Outcome:
    verdict: str
    category: str | None
    rule: str | None
    first_seen: str | None
    cited: frozenset[tuple[str, int, str]] = frozenset()  # (file, line, rule) of every finding's evidence


@dataclass(frozen=True)
class Trial:
    case: str
    transform: str
    keeps_times: bool
    reference: str  # bundle key
    shaped: str
    removed: frozenset[tuple[str, int]] = frozenset()  # (file, line) of the reference a cutting shape took away


def bundle_key(files: Files) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + files[name].encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()[:16]


def trials(cases: list[Case], transforms: tuple[Transform, ...]) -> tuple[list[Trial], dict[str, Files]]:
    """Every applicable (case, transformation), and the bundles they need (key -> files)."""
    bundles: dict[str, Files] = {}
    out = []
    for case in cases:
        for transform in transforms:
            pair = transform.reshape(dict(case.files))
            if pair is None:
                continue
            reference, shaped = ({**case.fixed, **files} for files in pair)
            keys = []
            for files in (reference, shaped):
                key = bundle_key(files)
                bundles[key] = files
                keys.append(key)
            removed = _removed(reference, shaped) if transform.cuts else frozenset()
            out.append(Trial(case.id, transform.name, transform.keeps_times, keys[0], keys[1], removed))
    return out, bundles


def _removed(reference: Files, shaped: Files) -> frozenset[tuple[str, int]]:
    """(file, 1-based line) of every reference line the shaped file does not carry (deleted or replaced)."""
    gone = set()
    for name, text in reference.items():
        before, after = text.split("\n"), shaped.get(name, "").split("\n")
        matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
        for op, i1, i2, _, _ in matcher.get_opcodes():
            if op in ("delete", "replace"):
                gone.update((name, n + 1) for n in range(i1, i2))
    return frozenset(gone)


def applies(trial: Trial, outcomes: dict[str, Outcome]) -> bool:
    """False when a cutting shape took away every line the reference cites for its top root cause's rule."""
    reference = outcomes[trial.reference]
    if not trial.removed or reference.rule is None:
        return True
    lines = {(path, line) for path, line, rule in reference.cited if rule == reference.rule}
    return not lines or not all(_in(path, line, trial.removed) for path, line in lines)


def _in(path: str, line: int, removed: frozenset[tuple[str, int]]) -> bool:
    """The cited (path, line) is among the removed lines (the lake's path ends with the bundle's file name)."""
    return any(line == n and (path == name or path.endswith("/" + name)) for name, n in removed)


def _year(files: Files) -> int | None:
    """The year of a bundle whose syslog lines need one (the first dated line of its other files), else None."""
    if not any(SYSLOG.search(text) for text in files.values()):
        return None
    for text in files.values():
        m = YEAR.search(text)
        if m:
            return int(m.group(1))
    return None


def diagnose_all(
    bundles: dict[str, Files], spark, rules, work: Path, chunk: int = 400, progress=None
) -> dict[str, Outcome]:
    """Every bundle's verdict and top root cause, by as few fleet runs as the syslog years allow."""
    from flinkdoctor.fleet import lake
    from flinkdoctor.fleet.run import run_fleet

    groups: dict[int | None, list[str]] = defaultdict(list)
    for key, files in bundles.items():
        groups[_year(files)].append(key)
    runs = [
        (year, keys[i : i + chunk])
        for year, keys in sorted(groups.items(), key=lambda item: item[0] or 0)
        for i in range(0, len(keys), chunk)
    ]
    outcomes: dict[str, Outcome] = {}
    for n, (year, keys) in enumerate(runs):
        root = work / f"root-{n}"
        for key in keys:
            for name, text in bundles[key].items():
                path = root / key / name
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(text.encode("utf-8", "surrogateescape"))
        lake_dir = work / f"lake-{n}"
        result = run_fleet([root], lake_dir, rules, spark=spark, work_dir=work / f"work-{n}", year=year)
        if progress is not None:
            progress(f"{len(keys)} bundles: {result.timings}")
        cited: dict[str, set] = defaultdict(set)
        for row in lake.read(lake_dir, "findings", ["bundle_id", "path", "line", "rule"]):
            cited[row["bundle_id"]].add((row["path"], row["line"], row["rule"]))
        tops = {
            row["bundle_id"]: row
            for row in lake.read(lake_dir, "diagnoses", ["bundle_id", "rank", "rule", "category", "first_seen"])
            if row["rank"] == 1
        }
        for row in lake.read(lake_dir, "bundles", ["bundle_id", "name", "status", "reason", "verdict"]):
            if row["status"] != "ok":
                raise AssertionError(f"bundle {row['name']} not diagnosed: {row['status']} {row['reason']}")
            top = tops.get(row["bundle_id"], {})
            outcomes[row["name"]] = Outcome(
                row["verdict"],
                top.get("category"),
                top.get("rule"),
                top.get("first_seen"),
                frozenset(cited[row["bundle_id"]]),
            )
    missing = set(bundles) - set(outcomes)
    assert not missing, f"{len(missing)} bundles without a diagnosis"
    return outcomes


def holds(trial: Trial, outcomes: dict[str, Outcome]) -> bool:
    reference, shaped = outcomes[trial.reference], outcomes[trial.shaped]
    if (shaped.verdict, shaped.category) != (reference.verdict, reference.category):
        return False
    return not (trial.keeps_times and reference.first_seen is not None and shaped.first_seen != reference.first_seen)


def failure_trace(files: Files) -> bool:
    """The plain files hold a stack trace: an exception line (class and message, as the JVM prints it) with a
    frame below it."""
    for text in files.values():
        for event in read_events(text):
            trace = [line for line in event.trace if line.strip()]
            if trace and EXCEPTION.match(trace[0]) and any(FRAME.match(line) for line in trace[1:]):
                return True
    return False


def no_failure_over_traces(
    cases: list[Case], all_trials: list[Trial], bundles: dict[str, Files], outcomes: dict[str, Outcome]
) -> tuple[int, list[tuple[str, str, str]]]:
    """(trials of a failure case whose reference holds a stack trace, and (transformation, case, plain|shaped) of
    each such bundle answered "no failure"): the never-no-failure property over the suite's cases."""
    failing = {case.id for case in cases if case.answer is not None}
    checked, missed = 0, []
    for trial in all_trials:
        if trial.case not in failing or not failure_trace(bundles[trial.reference]):
            continue
        checked += 1
        for form, key in (("plain", trial.reference), ("shaped", trial.shaped)):
            if outcomes[key].verdict == "no-failure":
                missed.append((trial.transform, trial.case, form))
    return checked, missed


def figures(all_trials: list[Trial], outcomes: dict[str, Outcome], transforms: tuple[Transform, ...]) -> dict:
    """Per transformation: applicable cases, how many hold, the share; and the failures, for the report."""
    applied, held, cut = Counter(), Counter(), Counter()
    failures = []
    for trial in all_trials:
        kept = holds(trial, outcomes)
        if not kept and not applies(trial, outcomes):
            cut[trial.transform] += 1
            continue
        applied[trial.transform] += 1
        if kept:
            held[trial.transform] += 1
        else:
            reference, shaped = outcomes[trial.reference], outcomes[trial.shaped]
            failures.append((trial, reference, shaped))
    rows = [(t.name, applied[t.name], held[t.name]) for t in transforms]
    total, good = sum(applied.values()), sum(held.values())
    return {"rows": rows, "total": total, "held": good, "failures": failures, "cut": dict(cut)}


def render(result: dict, cases: int) -> str:
    lines = [f"{'transformation':<20} {'cases':>6} {'hold':>6} {'share':>7}"]
    for name, applied, held in result["rows"]:
        share = f"{100 * held / applied:.1f} %" if applied else "-"
        lines.append(f"{name:<20} {applied:>6} {held:>6} {share:>7}")
    total, held = result["total"], result["held"]
    lines.append(f"{'all':<20} {total:>6} {held:>6} {100 * held / max(total, 1):.1f} %   ({cases} cases)")
    cut = result.get("cut", {})
    if cut:
        lines.append(
            "not applicable, the answer's evidence cut away: " + ", ".join(f"{n} {k}" for k, n in sorted(cut.items()))
        )
    return "\n".join(lines)


def describe_failures(result: dict) -> list[str]:
    out = []
    for trial, reference, shaped in result["failures"]:
        out.append(
            f"{trial.transform:<18} {trial.case:<40} ref {reference.verdict}/{reference.category}/{reference.rule}"
            f"@{reference.first_seen} -> {shaped.verdict}/{shaped.category}/{shaped.rule}@{shaped.first_seen}"
        )
    return out
