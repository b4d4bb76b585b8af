"""`flinkdoctor rules suggest`: draft a rule from an unexplained error, with its real line as the first case.

The regex is the template's stable text, escaped, with each masked part (<NUM>, <ID>, <PATH>, ...) captured
loosely by a possessive pattern (unexplained.PLACEHOLDER_REGEX), so it cannot backtrack. The draft validates with
the rule schema and its case passes `flinkdoctor rules test`; category, role, explanation, fix and references are
the author's to write, and the draft says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import click
import yaml

from .diagnosis.unexplained import PLACEHOLDER, PLACEHOLDER_REGEX, template_of
from .errors import UsageError
from .safety import outbound
from .safety.inert import inert
from .safety.masking import mask

RULE_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
META = re.compile(r"[\\.\[\]{}()*+?^$|#&~-]")  # each escaped: special in a regex or a character class
MAX_ID_WORDS = 6
STOP = {"the", "a", "an", "of", "to", "for", "in", "on", "is", "was", "and", "or", "with", "from", "by", "at"}


@dataclass(frozen=True)
class Draft:
    """What a rule is drafted from: the template, the real (masked) line, and where it was found."""

    template: str
    line: str
    level: str | None
    source: str  # file:line, or "pasted line"
    kind: str | None = None
    layout: str | None = None


def message_regex(template: str) -> tuple[str, list[str]]:
    """A Java regex matching the template's stable text, each masked part a named capture (v1, v2, ...)."""
    parts: list[str] = []
    names: list[str] = []
    at = 0
    for found in PLACEHOLDER.finditer(template):
        parts.append(_escape(template[at : found.start()]))
        names.append(f"v{len(names) + 1}")
        parts.append(f"(?<{names[-1]}>{PLACEHOLDER_REGEX[found.group(1)]})")
        at = found.end()
    parts.append(_escape(template[at:]))
    return "".join(parts), names


def _escape(text: str) -> str:
    """`text` as a literal in a Java (and Python) regex; spaces stay readable."""
    return META.sub(r"\\\g<0>", text)


def rule_id(template: str) -> str:
    words = [w for w in re.findall(r"[a-z]+", PLACEHOLDER.sub(" ", template).lower()) if w not in STOP]
    return "-".join(["draft", *words[:MAX_ID_WORDS]]) if words else "draft-unexplained-error"


def draft_rule(draft: Draft) -> dict:
    """The rule, as the YAML document `rules suggest` prints."""
    regex, names = message_regex(draft.template)
    signature: dict = {"message": regex}
    if draft.level in ("WARN", "ERROR", "FATAL"):
        signature["level"] = [draft.level]
    case: dict = {"match": draft.line, "source": draft.source}
    if draft.kind:
        case["kind"] = draft.kind
    if draft.layout:
        case["layout"] = draft.layout
    rule: dict = {
        "id": rule_id(draft.template),
        "title": ("Draft: " + draft.template)[:120],
        "category": "other",
        "role": "cause",
        "confidence": 0.5,
        "match": [signature],
    }
    if names:
        rule["captures"] = {name: {"unit": "text"} for name in names}
    rule |= {
        "explanation": (
            f"Drafted by flinkdoctor rules suggest from an unexplained {draft.level or 'log'} line ({draft.source}). "
            "Say what happened and why, then set the category, the role and what it explains."
        ),
        "references": [f"{draft.source} (replace with a JIRA issue or documentation link)"],
        "gap": "drafted from one line: add a real near-miss as a no_match case, then remove this gap",
        "cases": [case],
    }
    return rule


def to_yaml(rule: dict) -> str:
    """The rule as YAML; ASCII only, control characters escaped, so it is safe on a terminal too."""
    return yaml.safe_dump(rule, sort_keys=False, allow_unicode=False, width=1_000)


def from_line(line: str) -> Draft:
    """A draft from one pasted log line: its message is what follows the header (as far as it can be told)."""
    line = mask(line.rstrip("\r\n")) or ""
    if not line.strip() or "\n" in line:
        raise UsageError("--line: give one non-empty log line")
    level = re.search(r"\b(WARN|ERROR|FATAL)\b", line)
    message = re.split(r"\s-\s", line, maxsplit=1)[-1] if " - " in line else line
    return Draft(template_of(message), line, level.group(1) if level else None, "pasted line")


def from_report(report, number: int) -> Draft:
    """The N-th (from 1) unexplained error of a report."""
    errors = report.unexplained_errors
    if not errors:
        raise UsageError("the bundle shows no unexplained error rare in healthy runs: nothing to draft from")
    if not 1 <= number <= len(errors):
        raise UsageError(f"--template: choose 1 to {len(errors)} (the numbers the report shows)")
    error = errors[number - 1]
    source = next((s for s in report.input.sources if s.path == error.evidence.file), None)
    return Draft(
        template=error.template,
        line=error.evidence.text,
        level=error.level,
        source=f"{error.evidence.file}:{error.evidence.line}",
        kind=source.kind if source else None,
        layout=source.layout if source else None,
    )


@click.command("suggest")
@click.argument("paths", nargs=-1)
@click.option(
    "--template",
    "number",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Which unexplained error of the bundle's report, by its number there.",
)
@click.option("--line", help="Draft from this log line instead of a bundle.")
@click.option(
    "-o",
    "--output",
    type=click.Path(path_type=Path),
    help="Write the rule here: a folder (as FOLDER/<id>.yaml) or a .yaml file (whose name becomes the id).",
)
def suggest(paths, number, line, output):
    """Draft a rule YAML from an unexplained error of a bundle (or from one log line)."""
    if bool(paths) == bool(line):
        raise UsageError("give a bundle (PATHS, with --template N) or --line TEXT, not both")
    if line:
        draft = from_line(line)
    else:
        from .pipeline import diagnose

        draft = from_report(diagnose(list(paths)), number)
    rule = draft_rule(draft)
    if output is None:
        outbound.echo(outbound.dumps(rule, using=to_yaml), nl=False)
        return
    if output.is_dir():
        output = output / f"{rule['id']}.yaml"
    elif output.suffix != ".yaml" or not RULE_ID.fullmatch(output.stem):
        raise UsageError("-o: a folder, or a file named <kebab-case-id>.yaml (the file name is the rule's id)")
    else:
        rule["id"] = output.stem
    outbound.write_text(output, outbound.dumps(rule, using=to_yaml))
    outbound.echo(f"wrote {inert(str(output))}", err=True)
