"""The catalogue of the code's own messages in the verdict (diagnosis/fallback.py): a catalogued message answers
for the exception on its line (step 2 of the ladder), a catalogued line outside the chain answers after every
exception, and a failure line only the catalogue knows is a failure, never "no failure".

The lines are real (a lab recording of Flink 1.20.3) or the code's own text (the catalogue entry's provenance);
the entries a line holds are found here by each entry's regex, as the scan finds them.
"""

from __future__ import annotations

import re
from functools import cache

import pytest
from test_incidents import _finding, _lab_event

pytestmark = pytest.mark.unit


@cache
def _messages():
    from flinkdoctor.knowledge.catalogue import load_catalogue

    return [e for e in load_catalogue().entries if e.kind == "message"]


def _said(text: str, first_line: int) -> dict:
    """Every catalogued message on each line of `text` (numbered from `first_line`), as the scan records them."""
    from flinkdoctor.diagnosis.fallback import Said

    found: dict[int, tuple[Said, ...]] = {}
    for i, line in enumerate(text.split("\n")):
        hits = tuple(
            Said(entry, first_line + i, line)
            for entry in _messages()
            if entry.literals[0] in line and re.search(entry.regex, line)
        )
        if hits:
            found[first_line + i] = hits
    return found


def _entry(text: str):
    return next(e for e in _messages() if e.text == text)


def test_a_catalogued_message_answers_for_the_exception_on_its_line():
    """A real Flink 1.20.3 task failure that ends in a StateMigrationException: the catalogue knows the message
    the heap backend throws it with, which answers on step 2, before the class (step 3)."""
    from flinkdoctor.diagnosis.fallback import derive, exception_chain, knowledge
    from flinkdoctor.knowledge.catalogue import load_catalogue

    text = _lab_event("1.20.3/serializer-incompatible.tar.gz", "taskexecutor-0-vm.log", "to FAILED with failure")
    failed = _finding(text)
    chain = exception_chain(failed)
    said = _said(text, failed.event_line)
    assert chain[-1].line in said  # the innermost exception's line holds a catalogued message
    derivation = derive(chain, knowledge(), load_catalogue(), said)
    entry = load_catalogue().by_id[derivation.catalogue]
    assert (derivation.category, derivation.tier) == ("state-restore-incompatible", 2)
    assert entry.kind == "message" and entry.text.startswith("For heap backends, the new state serializer")
    assert derive(chain, knowledge(), load_catalogue()).tier == 3  # without the scan's hits: the class


def test_a_catalogued_line_outside_the_chain_answers_when_no_exception_does():
    """Flink's start script prints this and exits (bin/bash-java-utils.sh, the entry's provenance); the event has no
    exception, so the line itself answers, on the package step: its category rests on the component."""
    from flinkdoctor.diagnosis.fallback import derive, knowledge
    from flinkdoctor.knowledge.catalogue import load_catalogue

    entry = _entry("[ERROR] Could not get JVM parameters and dynamic configurations properly.")
    said = _said(entry.text, 3)
    derivation = derive([], knowledge(), load_catalogue(), said)
    assert (derivation.category, derivation.tier, derivation.catalogue) == ("config-invalid", 4, entry.id)
    assert derivation.said == (3, entry.text)


def test_a_failure_line_only_the_catalogue_knows_is_a_failure(rules):
    """HotSpot's fatal error text (libjvm.so, the entry's provenance) in a paste with no rule's match: the verdict
    is a derived cause of the catalogued category, not "no failure"; the same paste without the catalogue's hits
    has no failure to derive from."""
    from flinkdoctor.diagnosis.fallback import CATALOGUED_RULE, Catalogued, fallback

    entry = _entry("# There is insufficient memory for the Java Runtime Environment to continue.")
    line = _finding(entry.text)
    line.rule, line.line = CATALOGUED_RULE, line.event_line
    catalogued = Catalogued({line.sid: _said(entry.text, line.event_line)}, (line,))
    by_id = {rule.id: rule for rule in rules}
    outcome = fallback([], {}, [], by_id, {"unknown"}, catalogued)
    assert outcome.verdict == "derived-cause"
    cause = outcome.derived[0]
    assert (cause.derivation.category, cause.derivation.tier, cause.derivation.catalogue) == (
        "jvm-direct-oom",
        2,
        entry.id,
    )
    assert fallback([], {}, [], by_id, {"unknown"}).verdict == "no-failure"
