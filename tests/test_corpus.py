"""Checks over the whole knowledge base: the rules are data, so the data is what gets tested."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import SHARED
from flinkdoctor.rulebook import MATCH_FIELDS, RuleError, load_rules

CATEGORIES = re.findall(r"^\| `([a-z-]+)` \|", (SHARED / "kb" / "categories.md").read_text(), re.M)


def test_categories_file_was_read():
    assert "host-stall" in CATEGORIES and "other" in CATEGORIES


def test_ids_are_unique_and_equal_file_stems(rules):
    ids = [r.id for r in rules]
    assert len(ids) == len(set(ids))
    assert all(Path(r.path).stem == r.id for r in rules)


def test_categories_come_from_the_contract(rules):
    assert {r.category for r in rules} <= set(CATEGORIES)


def test_every_regex_compiles_in_java(spark, rules):
    pattern = spark.sparkContext._jvm.java.util.regex.Pattern
    for rule in rules:
        for sig in rule.signatures:
            for key in MATCH_FIELDS:
                if key in sig:
                    pattern.compile(sig[key])  # raises PatternSyntaxException on Java-only errors


def test_cases_of_both_kinds_or_a_written_gap(rules):
    for rule in rules:
        kinds = {"match" if "match" in c else "no_match" for c in rule.cases}
        assert kinds == {"match", "no_match"} or rule.gap, rule.id


def test_references_and_relations(rules):
    ids = {r.id for r in rules}
    for rule in rules:
        assert rule.references, rule.id
        for relation in rule.explains:
            assert relation.rule in ids or relation.category in CATEGORIES, (rule.id, relation)


def test_cause_rules_have_a_fix(rules):
    for rule in rules:
        if rule.role == "cause":
            assert rule.fix, rule.id


def test_no_rule_matches_an_empty_message(rules):
    from flinkdoctor.layouts import python_regex
    for rule in rules:
        for sig in rule.signatures:
            for key in MATCH_FIELDS:
                if key in sig:
                    assert not python_regex(sig[key]).search(""), (rule.id, key)


def test_bad_rule_fails_with_file_and_line(tmp_path):
    (tmp_path / "broken.yaml").write_text(
        "id: broken\ntitle: A broken rule\ncategory: not-a-category\nrole: cause\n"
        "match:\n  - text: 'unclosed (group'\nexplanation: x\nreferences: []\ncases: []\n")
    with pytest.raises(RuleError) as err:
        load_rules([tmp_path], builtin=False)
    message = str(err.value)
    assert "broken.yaml:3:" in message and "not-a-category" in message


def test_bad_regex_fails_with_file_and_line(tmp_path):
    (tmp_path / "badregex.yaml").write_text(
        "id: badregex\ntitle: A rule with a bad regex\ncategory: other\nrole: symptom\n"
        "match:\n  - text: 'unclosed (group'\nexplanation: Something long enough to pass.\n"
        "references: [x]\ngap: none\ncases: []\n")
    with pytest.raises(RuleError, match=r"badregex.yaml:6: .*bad regex 'unclosed \(group'"):
        load_rules([tmp_path], builtin=False)
