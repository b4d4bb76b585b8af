"""Checks over the whole knowledge base: the rules are data, so the data is what gets tested."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flinkdoctor.cases import run_cases
from flinkdoctor.knowledge import vocabulary
from flinkdoctor.knowledge.regexes import nested_quantifier, python_regex
from flinkdoctor.knowledge.rulebook import RuleError, builtin_rules_dir, load_rules, relation_defaults, rule_schema
from flinkdoctor.sources.layouts import layout_ids

CATEGORIES = set(vocabulary.CATEGORIES)
GOOD_RULE = """\
id: {id}
title: A rule written for a test
category: other
role: symptom
{extra}match:
  - text: '{regex}'
explanation: Something long enough to pass the schema.
references: [x]
gap: none
cases: []
"""


def write_rule(folder: Path, rule_id: str, regex: str = "Something happened", extra: str = "") -> Path:
    path = folder / f"{rule_id}.yaml"
    path.write_text(GOOD_RULE.format(id=rule_id, regex=regex, extra=extra))
    return path


def test_categories_live_in_the_package_with_their_meaning():
    assert "host-stall" in CATEGORIES and "other" in CATEGORIES and len(CATEGORIES) == 28
    assert "soft lockup" in vocabulary.CATEGORIES["host-stall"].meaning + vocabulary.CATEGORIES["host-stall"].evidence


def test_ids_are_unique_and_equal_file_stems(rules):
    ids = [r.id for r in rules]
    assert len(ids) == len(set(ids))
    assert all(Path(r.path).stem == r.id for r in rules)


def test_categories_come_from_the_contract(rules):
    assert {r.category for r in rules} <= CATEGORIES


def test_schema_vocabularies_have_one_home():
    """The schema file names no closed list itself; the loaded schema carries the package's lists."""
    written = json.loads((builtin_rules_dir().parents[1] / "schemas" / "rule.schema.json").read_text())
    loaded = rule_schema()["$defs"]
    expected = {
        "category": list(vocabulary.CATEGORIES),
        "role": list(vocabulary.ROLES),
        "sourceKind": list(vocabulary.SOURCE_KINDS),
        "level": list(vocabulary.LEVELS),
        "scope": list(vocabulary.SCOPES),
        "unit": list(vocabulary.UNITS),
        "attribution": list(vocabulary.ATTRIBUTIONS),
    }
    for name, values in expected.items():
        assert "enum" not in written["$defs"][name], name
        assert loaded[name]["enum"] == values, name
    assert '"enum":' not in json.dumps(written)  # no second hand-kept list anywhere in the file


def test_relation_defaults_come_from_the_schema():
    assert relation_defaults() == {"scope": "any", "before": "2m", "after": "10m"}


def test_every_regex_compiles_in_java(spark, rules):
    pattern = spark.sparkContext._jvm.java.util.regex.Pattern
    for rule in rules:
        for sig in rule.signatures:
            for _, regex in sig.regexes():
                pattern.compile(regex)  # raises PatternSyntaxException on Java-only errors


def test_cases_of_both_kinds_or_a_written_gap(rules):
    for rule in rules:
        kinds = {case.expect_match for case in rule.cases}
        assert kinds == {True, False} or rule.gap, rule.id


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
    for rule in rules:
        for sig in rule.signatures:
            for key, regex in sig.regexes():
                assert not python_regex(regex).search(""), (rule.id, key)


def test_no_shipped_regex_can_backtrack_catastrophically(rules):
    from flinkdoctor.sources.layouts import load_layouts

    assert not [
        (r.id, regex) for r in rules for sig in r.signatures for _, regex in sig.regexes() if nested_quantifier(regex)
    ]
    assert not [layout.id for layout in load_layouts() if nested_quantifier(layout.header)]


def test_models_are_frozen(rules):
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        rules[0].id = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rules[0].signatures[0].text = "x"  # type: ignore[misc]


def test_relation_sets_are_expanded(rules):
    """checkpoint-expired lists `failover`: task-failed and job-restarting (10s before, 10m after) and
    restart-strategy-exhausted (30m after), as relations.yaml says."""
    by_id = {r.id: r for r in rules}
    relations = {rel.rule: (rel.scope, rel.before_ms, rel.after_ms) for rel in by_id["checkpoint-expired"].explains}
    assert relations["task-failed"] == relations["job-restarting"] == ("any", 10_000, 600_000)
    assert relations["restart-strategy-exhausted"] == ("any", 10_000, 1_800_000)
    # `{set: failover, before: 1h, after: 1h}`: the reference's window replaces every member's
    slow = {rel.rule: (rel.before_ms, rel.after_ms) for rel in by_id["checkpoint-storage-slow-write"].explains}
    assert slow["task-failed"] == slow["restart-strategy-exhausted"] == (3_600_000, 3_600_000)


def test_fix_per_version_range_is_one_fix_per_range(rules):
    by_id = {r.id: r for r in rules}
    rocksdb = [f for f in by_id["checkpoint-expired"].fix if f.text.startswith("For large keyed state")]
    assert [f.versions for f in rocksdb] == ["<1.17", ">=1.17,<1.20", ">=1.20"]
    assert [f.applies_to("1.18.1") for f in rocksdb] == [False, True, False]
    assert rocksdb[2].config == {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true"}


def test_bad_rule_fails_with_file_and_line(tmp_path):
    (tmp_path / "broken.yaml").write_text(
        "id: broken\ntitle: A broken rule\ncategory: not-a-category\nrole: cause\n"
        "match:\n  - text: 'unclosed (group'\nexplanation: x\nreferences: []\ncases: []\n"
    )
    with pytest.raises(RuleError) as err:
        load_rules([tmp_path], builtin=False)
    message = str(err.value)
    assert "broken.yaml:3:" in message and "not-a-category" in message


def test_bad_regex_fails_with_file_and_line(tmp_path):
    write_rule(tmp_path, "badregex", regex="unclosed (group")
    with pytest.raises(RuleError, match=r"badregex.yaml:6: .*bad regex 'unclosed \(group'"):
        load_rules([tmp_path], builtin=False)


@pytest.mark.parametrize("regex", [r"(a+)+b", r"x(?:\w*)*y", r"(?:(?:ab)+c)*"])
def test_backtracking_regex_is_refused_with_file_and_line(tmp_path, regex):
    write_rule(tmp_path, "backtracks", regex=regex)
    with pytest.raises(RuleError) as err:
        load_rules([tmp_path], builtin=False)
    assert f"backtracks.yaml:6: match/0/text: {regex!r} can backtrack catastrophically" in str(err.value)


@pytest.mark.parametrize("regex", [r"(?:a+)?b lost", r"(?:\w++\.)+Exception", r"(?:ab)+c lost", r"(?>a+)+b lost"])
def test_bounded_or_possessive_repeats_are_accepted(tmp_path, regex):  # " lost": the literal a signature needs
    write_rule(tmp_path, "fine", regex=regex)
    assert load_rules([tmp_path], builtin=False)[0].signatures[0].text == regex


def test_case_kind_is_checked_at_load_and_layout_before_the_cases_run(tmp_path):
    """A case's kind is a closed vocabulary (checked at load); its layout is one of sources/layouts/layouts.yaml,
    which the knowledge base does not import: the cases' runner checks it, with file:line, before Spark starts."""
    (tmp_path / "badcase.yaml").write_text(
        GOOD_RULE.format(id="badcase", regex="Something happened", extra="").replace(
            "gap: none\ncases: []\n",
            "cases:\n"
            "  - source: x\n    kind: flink-jobmanger\n    match: a\n"
            "  - source: x\n    layout: log4j9\n    no_match: b\n",
        )
    )
    with pytest.raises(RuleError) as err:
        load_rules([tmp_path], builtin=False)
    assert "badcase.yaml:11: cases/0/kind: 'flink-jobmanger' is not one of" in str(err.value)
    (tmp_path / "badcase.yaml").write_text(
        (tmp_path / "badcase.yaml").read_text().replace("kind: flink-jobmanger", "kind: flink-jobmanager")
    )
    loaded = load_rules([tmp_path], builtin=False)
    with pytest.raises(RuleError) as err:
        run_cases(None, loaded, tmp_path / "work")  # refused before any Spark work: no session needed
    assert "badcase.yaml:13: cases: layout 'log4j9' is not a layout of sources/layouts/layouts.yaml" in str(err.value)
    assert "flink-log4j2" in layout_ids()


def test_malformed_version_specifier_fails_with_file_and_line(tmp_path):
    write_rule(tmp_path, "badversion", extra="versions: '>=1.x'\n")
    with pytest.raises(RuleError, match=r"badversion.yaml:5: versions: invalid version specifier '>=1.x'"):
        load_rules([tmp_path], builtin=False)


def test_unknown_relation_set_and_duplicate_relation_fail_with_file_and_line(tmp_path):
    write_rule(
        tmp_path,
        "relates",
        extra="explains:\n  - failovr\n  - restart\n"
        "  - {rule: job-restarting}\n  - {rule: job-restarting, after: 1m}\n",
    )
    with pytest.raises(RuleError) as err:
        load_rules([tmp_path])
    message = str(err.value)
    assert "relates.yaml:6: unknown relation set 'failovr'" in message
    assert "relates.yaml:9: explains rule 'job-restarting' twice (also at" in message


def test_a_rule_relation_replaces_the_set_member_for_the_same_rule(tmp_path):
    write_rule(
        tmp_path,
        "relates",
        extra="explains:\n  - failover\n  - {rule: restart-strategy-exhausted, before: 10s, after: 1h}\n",
    )
    rule = {r.id: r for r in load_rules([tmp_path])}["relates"]
    windows = {rel.rule: rel.after_ms for rel in rule.explains}
    assert windows == {"task-failed": 600_000, "job-restarting": 600_000, "restart-strategy-exhausted": 3_600_000}


def test_relation_sets_of_a_rules_folder(tmp_path):
    (tmp_path / "relations.yaml").write_text(
        "mine:\n  about: a set of relations for a test\n  relations:\n    - {rule: mine, after: 1m}\n"
        "broken:\n  about: a set of relations for a test\n  relations:\n    - {rule: nothing-like-it}\n"
    )
    write_rule(tmp_path, "mine", extra="explains: [broken]\n")
    with pytest.raises(RuleError, match=r"relations.yaml:8: mine explains unknown rule 'nothing-like-it'"):
        load_rules([tmp_path], builtin=False)


def test_unknown_layout_key_is_refused_with_file_and_line(tmp_path):
    from flinkdoctor.sources.layouts import layouts_file, load_layouts

    path = tmp_path / "layouts.yaml"
    path.write_text(
        layouts_file()
        .read_text()
        .replace("  time_format: 'yyyy-MM-dd HH:mm:ss,SSS'\n", "  time_fromat: 'yyyy-MM-dd HH:mm:ss,SSS'\n", 1)
    )
    with pytest.raises(
        RuleError,
        match=r"layouts.yaml:\d+: 0: Additional properties are not allowed "
        r"\('time_fromat' was unexpected\)",
    ):
        load_layouts(path)


def test_backtracking_layout_header_is_refused_with_file_and_line(tmp_path):
    from flinkdoctor.sources.layouts import load_layouts

    path = tmp_path / "layouts.yaml"
    path.write_text("- id: bad\n  about: a layout for a test\n  header: '^(?<msg>(\\w+\\s?)+)$'\n  timed: false\n")
    with pytest.raises(RuleError, match=r"layouts.yaml:3: layout bad: .* can backtrack catastrophically"):
        load_layouts(path)


def test_a_key_given_twice_is_refused_with_its_lines(tmp_path):
    """YAML keeps the last of two equal keys without a word; every data file's loader refuses them instead."""
    write_rule(tmp_path, "twice", extra="title: Said twice\n")
    with pytest.raises(RuleError, match=r"twice.yaml:\d+: duplicate key 'title' \(first at line 2\)"):
        load_rules([tmp_path], builtin=False)


def test_shapes_file_is_checked_against_its_schema():
    """shapes.yaml has a schema like every other data file: an unknown key or a strip without `about` is named."""
    import jsonschema

    from flinkdoctor.knowledge.validation import read_yaml, schema, schema_problems

    text = (builtin_rules_dir().parents[1] / "sources" / "layouts" / "shapes.yaml").read_text()
    validator = jsonschema.Draft202012Validator(schema("shapes"))
    problems: list[str] = []
    data, node = read_yaml("shapes.yaml", text, problems)
    assert problems == [] and schema_problems(validator, data, node, "shapes.yaml") == []
    broken = text.replace("  - id: line-number\n    about: ", "  - id: line-number\n    colour: ", 1) + "\nextra: 1\n"
    data, node = read_yaml("shapes.yaml", broken, problems)
    found = schema_problems(validator, data, node, "shapes.yaml")
    assert any("(top): Additional properties are not allowed ('extra'" in p for p in found), found
    assert any(re.search(r"shapes.yaml:\d+: strips/0: 'about' is a required property", p) for p in found), found
