"""The rules matched a signature at a time over a batch's rows (matcher.Matcher.match_rows) give what matching
each event alone gives (Matcher.match: its candidate signatures in order, a rule's later ones skipped once one
matched), and the matches' list array built from its columns (scanner._matched_lists) is the one a dict per hit
gave. Real logs of a lab recording (tests/data/lab/1.20.3/network-buffers.tar.gz, its TaskManager: stack traces
and start-up lines) with every rule, and rules made here for what it lacks (a capture's bound, a rule's later
signature that matches too)."""

from __future__ import annotations

import tarfile

import numpy as np
import pytest

from conftest import DATA

BUNDLE = DATA / "lab" / "1.20.3" / "network-buffers.tar.gz"
TASKMANAGER = "flink-root-taskexecutor-0-vm.log"


def _one_by_one(self, rows, events, numbers):
    """match_rows as Matcher.match gives it, each event alone with its signatures (the loop match_rows replaced)."""
    out = {}
    cuts = np.flatnonzero(np.diff(events)) + 1
    for at, wanted in zip(np.split(events, cuts), np.split(numbers, cuts), strict=True):
        if len(at) and (hits := self.match(rows.fields(int(at[0])), wanted.tolist())):
            out[int(at[0])] = hits
    return out


def _old_lists(n, rule_rows, matched):
    """The matches' list array as a dict per hit made it (before _matched_lists)."""
    from flinkdoctor.scan import scanner

    lists = {
        int(rule_rows[k]): [{"rule": r, "captures": list(c.items()), "idx": i} for r, c, i in hits]
        for k, hits in matched.items()
    }
    return scanner._sparse_lists(n, lists, scanner._matches_type())


def _batches(tmp_path, matcher) -> list:
    from flinkdoctor.scan import scanner
    from flinkdoctor.scan.events import SPLIT_BYTES, plan
    from flinkdoctor.sources.ingest import ingest

    with tarfile.open(BUNDLE) as archive:
        member = next(m for m in archive.getmembers() if m.name.endswith(TASKMANAGER))
        data = archive.extractfile(member).read()
    path = tmp_path / "taskmanager.log"
    if not path.exists():
        path.write_bytes(data)
    manifest = ingest([path], tmp_path / f"in-{len(list(tmp_path.iterdir()))}")
    out = []
    for part in [p for task in plan(manifest.text_sources, SPLIT_BYTES) for p in task]:
        out += [b for b in scanner.scan_part(part, matcher.prefilter, matcher) if not isinstance(b, scanner.PartStats)]
    return out


@pytest.fixture(scope="module")
def matcher(rules):
    from flinkdoctor.analytics import load_metrics
    from flinkdoctor.scan.matcher import build_matcher

    return build_matcher(rules, tuple(m.line for m in load_metrics()), catalogue=None)


def test_a_lab_logs_rows_match_as_each_event_alone_matched(tmp_path, matcher, monkeypatch):
    from flinkdoctor.scan import matcher as matching
    from flinkdoctor.scan import scanner

    pairs = []
    original = matching.Matcher.match_rows

    def both(self, rows, events, numbers):
        bulk, alone = original(self, rows, events, numbers), _one_by_one(self, rows, events, numbers)
        pairs.append((bulk, alone, rows))
        return bulk

    monkeypatch.setattr(matching.Matcher, "match_rows", both)
    batches = _batches(tmp_path, matcher)
    monkeypatch.undo()
    assert pairs and all(bulk == alone for bulk, alone, _ in pairs)
    hits = [hit for bulk, _, _ in pairs for hits in bulk.values() for hit in hits]
    assert len(hits) > 50 and any(idx > 0 for _, _, idx in hits) and any(c for _, c, _ in hits)
    # and the batches the scan wrote are those of the per-event loop
    monkeypatch.setattr(matching.Matcher, "match_rows", _one_by_one)
    monkeypatch.setattr(scanner, "_matched_lists", _old_lists)
    assert [b.to_pylist() for b in batches] == [b.to_pylist() for b in _batches(tmp_path, matcher)]


def test_the_matches_list_array_is_the_one_a_dict_per_hit_gave():
    from flinkdoctor.scan import scanner

    rule_rows = np.array([1, 4, 5, 9])
    matched = {
        0: [("a", {"x": "1", "y": ""}, 3), ("b", {}, 0)],
        2: [("c", {"z": "ü"}, 7)],
        3: [("a", {}, 2)],
    }
    built = scanner._matched_lists(11, rule_rows, matched)
    assert built.equals(_old_lists(11, rule_rows, matched)) and built.type == scanner._matches_type()
    assert built.to_pylist()[1] == [
        {"rule": "a", "captures": [("x", "1"), ("y", "")], "idx": 3},
        {"rule": "b", "captures": [], "idx": 0},
    ]
    assert scanner._matched_lists(3, np.zeros(0, dtype=np.int64), {}).equals(_old_lists(3, np.zeros(0), {}))


def test_made_rules_match_in_rows_as_alone():
    """Rules with what the lab log lacks: a bound on a capture (`where`), two text regexes, a text regex with
    the message, and signatures of one rule that match the same event, over events in any order of signatures."""
    from flinkdoctor.knowledge.rulebook import Bound, Capture, Rule, Signature
    from flinkdoctor.scan import matcher as matching

    sigs = (
        Signature(text=r"took (?<ms>\d+) ms"),
        Signature(text=r"took (?<ms>\d+)"),
        Signature(text=r"^late", message=r"late (?<who>\w+)"),
        Signature(text=r"(?m)^b$", level=("WARN",)),
    )
    rules = [
        Rule(
            "slow",
            "t",
            "other",
            "cause",
            sigs[:2],
            "",
            (),
            "t.yaml",
            captures={"ms": Capture("ms")},
            where={"ms": Bound(gte=100)},
        ),
        Rule("late", "t", "other", "cause", sigs[2:], "", (), "t.yaml", captures={"who": Capture("who")}),
    ]
    built = matching.build_matcher(rules, catalogue=None)
    texts = ["a\ntook 150 ms", "took 99 ms", "x\ntook 700", "late bob\nb", "a\nb", "late ann", "took 100 ms\nb"]
    rows = matching.Rows(
        texts, [t.split("\n")[0] for t in texts], ["WARN"] * 6 + ["INFO"], [None] * 7, [None] * 7, "taskmanager"
    )
    events = np.repeat(np.arange(len(texts)), len(built.signatures))
    numbers = np.tile(np.arange(len(built.signatures)), len(texts))
    admitted = built.admitted(numbers, ["WARN", "INFO"], (events == 6).astype(np.int64), "taskmanager")
    events, numbers = events[admitted], numbers[admitted]
    bulk = built.match_rows(rows, events, numbers)
    assert bulk == _one_by_one(built, rows, events, numbers)
    assert bulk == {
        0: [("slow", {"ms": "150"}, 1)],
        2: [("slow", {"ms": "700"}, 1)],
        3: [("late", {"who": "bob"}, 0)],
        4: [("late", {}, 1)],
        5: [("late", {"who": "ann"}, 0)],
        6: [("slow", {"ms": "100"}, 0)],
    }
