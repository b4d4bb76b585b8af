"""Every rule's real-log cases, run through the compiled Spark path that `diagnose` uses."""

from __future__ import annotations

import pytest

from flinkdoctor.knowledge.rulebook import load_rules

ALL = [(rule.id, index) for rule in load_rules() for index, _ in enumerate(rule.cases)]


@pytest.fixture(scope="session")
def case_results(spark, rules, tmp_path_factory):
    from flinkdoctor.cases import run_cases

    return {(r.rule, r.index): r for r in run_cases(spark, rules, tmp_path_factory.mktemp("cases"))}


@pytest.mark.parametrize("rule_id, index", ALL, ids=[f"{r}[{i}]" for r, i in ALL])
def test_case(case_results, rule_id, index):
    result = case_results[(rule_id, index)]
    assert result.passed, (
        f"{result.name} from {result.source}: expected "
        f"{'a match' if result.expect_match else 'no match'}\n{result.text}"
    )
