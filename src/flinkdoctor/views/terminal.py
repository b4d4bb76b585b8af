"""The terminal view: root causes first, each with its evidence, chain and fix; then every finding.

Every string that came from the input (log text, file names, captured values in fixes) goes through `inert()` and
into `rich.text.Text`, never into a markup string: a file named `[link=...]x[/link].log` stays a name.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..report.model import Evidence, Report, RootCauseReport, UnexplainedErrorReport, UnexplainedSymptomReport
from ..safety.inert import inert
from .charts import checkpoint_summaries, config_audit
from .text import message_of, shorten

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

EVIDENCE_SHOWN = 3
EVIDENCE_CHARS = 400  # an evidence line, cut at a word boundary past this
CHAIN_CHARS = 150  # a chain step's message, about two lines at 80 columns
VERDICT_STYLE = {"no-failure": "green", "derived-cause": "yellow"}


def render_terminal(report: Report, console: Console) -> None:
    """The report for a reader at a terminal of any width (80 columns included): text wraps with hanging indents,
    rule ids, file names and commands are never cut, and chain lines show the message rather than the log header."""
    from rich.panel import Panel
    from rich.text import Text

    given = report.input
    version = report.flink_version or "unknown (fixes for all versions shown)"
    _indented(
        console,
        Text(
            f"flinkdoctor: {given.files} files, {given.lines:,} lines ({given.lines_unparsed:,} "
            f"unparsed), {given.events:,} events; Flink version {inert(version)}",
            style="dim",
        ),
        0,
        2,
    )
    for source in given.unreadable:
        why = source.truncated or f"{source.unparsed:,} of {source.lines:,} lines could not be parsed"
        _indented(
            console,
            Text(
                f"Not fully readable: {inert(source.path)} ({inert(why)}); a diagnosis cannot rest on it",
                style="yellow",
            ),
            0,
            2,
        )
    untimed = [source for source in given.sources if source.untimed and source.lines]
    if untimed:
        names = ", ".join(inert(source.path) for source in untimed[:3])
        more = f" and {len(untimed) - 3} more" if len(untimed) > 3 else ""
        lines = sum(source.lines for source in untimed)
        _indented(
            console,
            Text(
                f"No timestamps in {len(untimed)} source{'s' if len(untimed) != 1 else ''} ({lines:,} lines: "
                f"matched, but not ordered in time against the others): {names}{more}",
                style="yellow",
            ),
            0,
            2,
        )
    style = VERDICT_STYLE.get(report.verdict, "red")
    console.print(Panel(Text(_verdict(report)), title="Diagnosis", border_style=style))
    for rank, root in enumerate(report.root_causes, 1):
        title = f"Root cause #{rank}" + (" (derived from the exception chain)" if root.derived else "")
        _heading(console, title, "red" if rank == 1 else "yellow")
        _root_cause(console, root)
    for item in report.unexplained_symptoms:
        _heading(console, "Unexplained symptom", "yellow")
        _unexplained(console, item)
    if report.unexplained_errors:
        _heading(
            console,
            "Unexplained errors (no rule explains them; rare in healthy runs, near the failure first)",
            "yellow",
        )
        _unexplained_errors(console, report.unexplained_errors)
    if report.findings:
        _heading(console, f"All findings ({len(report.findings)})", "blue")
        for row in report.findings:
            head = Text(inert(row.rule), style="bold")
            head.append(f"  {row.category} {row.role}, {row.count:,} time{'s' if row.count != 1 else ''}")
            _indented(console, head, 2)
            if row.evidence:
                _location(console, row.first_seen, row.evidence[0].file, row.evidence[0].line, 6)
    _analytics(console, report)
    for skipped in report.skipped:
        console.print(Text(f"Skipped: {inert(skipped.get('path'))}: {inert(skipped.get('reason'))}", style="yellow"))
    if report.work_dir:
        console.print(Text(f"Work dir kept: {inert(report.work_dir)}", style="dim"))


def _heading(console: Console, title: str, style: str) -> None:
    from rich.rule import Rule

    console.print(Rule(title, style=style, align="left"))


def _indented(console: Console, text: Text, indent: int, hang: int = 0) -> None:
    """`text` wrapped at the console's width, `indent` columns in, continuation lines `hang` further in; no
    trailing blanks (the output is often piped into a file or a ticket)."""
    from rich.text import Text

    width = max(20, console.width - indent - hang)
    for number, line in enumerate(text.wrap(console, width, overflow="fold")):
        line.rstrip()
        console.print(Text(" " * (indent + (hang if number else 0))) + line, soft_wrap=True)


def _location(console: Console, time: str | None, file: str, line: int, indent: int) -> None:
    """Where a line is: its time, then file:line whole (a long path gets a line of its own, wrapped by the terminal
    and not by us, so that it copies as one)."""
    from rich.text import Text

    where = f"{inert(file)}:{line}"
    if indent + len(time or "no time") + 2 + len(where) <= console.width:
        console.print(Text(" " * indent + f"{time or 'no time'}  {where}", style="cyan"), soft_wrap=True)
    else:
        console.print(Text(" " * indent + (time or "no time"), style="cyan"), soft_wrap=True)
        console.print(Text(" " * indent + where, style="cyan"), soft_wrap=True)


def _evidence(console: Console, evidence: Sequence[Evidence]) -> None:
    from rich.text import Text

    for ev in evidence[:EVIDENCE_SHOWN]:
        _location(console, ev.time, ev.file, ev.line, 2)
        _indented(console, Text(shorten(inert(ev.text), EVIDENCE_CHARS)), 4)


def _verdict(report: Report) -> str:
    """Which of the three the input is, in plain words: a known cause, a cause derived from a failure, or no failure."""
    if report.verdict == "known-cause":
        return "A known cause: a signature in the knowledge base names the root cause below."
    if report.verdict == "derived-cause":
        return (
            "The input shows a failure that no known signature explains. The root cause below is derived from the "
            "failure's exception chain: read it as a lead, not a verdict."
        )
    given = report.input
    share = f"{given.lines_in_events / given.lines:.0%}" if given.lines else "0%"
    return (
        f"No failure in the input: no failed task or job, no uncaught exception and no known signature. "
        f"{share} of the input was readable ({given.lines_in_events:,} of {given.lines:,} lines in events)."
        + (
            f" {len(report.unexplained_symptoms)} symptom(s) below have no cause in the input."
            if report.unexplained_symptoms
            else ""
        )
    )


def _unexplained(console: Console, item: UnexplainedSymptomReport) -> None:
    from rich.text import Text

    console.print(Text(inert(item.title), style="bold"))
    _indented(
        console,
        Text(
            f"rule {item.rule}  category {item.category}  first seen {item.first_seen or 'unknown time'}  "
            f"({item.count} times)"
        ),
        0,
    )
    _indented(console, Text("What usually causes it: " + inert(item.usually_caused_by)), 0)
    if item.explained_by:
        _indented(console, Text("Evidence that would explain it (absent here): " + ", ".join(item.explained_by)), 0)
    if item.missing:
        _indented(console, Text("Logs those signatures read, missing from the input: " + ", ".join(item.missing)), 0)
    _evidence(console, item.evidence)


def _root_cause(console: Console, root: RootCauseReport) -> None:
    from rich.text import Text

    console.print(Text(inert(root.title), style="bold"))
    if root.derived:
        console.print(Text("derived from the exception chain, no known signature matched", style="yellow"))
    meta = (
        f"category {root.category}  rule {root.rule}  confidence {root.confidence:.2f}  first seen "
        f"{root.first_seen or 'unknown time'}"
        + (f" on {inert(root.host)}" if root.host else "")
        + f"  ({root.count} time{'s' if root.count != 1 else ''})"
    )
    _indented(console, Text(meta), 0)
    console.print()
    _indented(console, Text(inert(" ".join(root.explanation.split()))), 0)  # the rule's breaks are not the terminal's
    console.print(Text("Evidence", style="bold"))
    _evidence(console, root.evidence)
    if root.chain:
        console.print(Text("Chain of symptoms", style="bold"))
        for number, step in enumerate(root.chain, 1):
            indent = 2 * step.depth
            head = Text(f"{number}. ", style="yellow")
            head.append(f"{step.rule} ({step.category})", style="yellow")
            _indented(console, head, indent)
            ev = step.evidence
            _location(console, ev.time, ev.file, ev.line, indent + 3)
            _indented(console, Text(shorten(inert(message_of(ev.text)), CHAIN_CHARS)), indent + 3)
    if root.fix:
        console.print(Text("Fix", style="bold"))
        for fix in root.fix:
            _indented(console, Text("* " + inert(fix.text)), 2, 2)
            for key, value in fix.config.items():  # whole lines, wrapped by the terminal: copied as one
                console.print(Text(f"    {inert(key)}: {inert(value)}", style="green"), soft_wrap=True)
            if fix.command:
                console.print(Text(f"    $ {inert(fix.command)}", style="green"), soft_wrap=True)
    if root.references:
        _indented(console, Text("References: " + inert(", ".join(root.references)), style="dim"), 0, 2)


def _unexplained_errors(console: Console, items: list[UnexplainedErrorReport]) -> None:
    from rich.text import Text

    for rank, item in enumerate(items, 1):
        _indented(console, Text(f"#{rank} {item.level}  " + inert(item.template), style="bold"), 0, 2)
        _indented(
            console,
            Text(
                f"{item.count} times, first seen {item.first_seen or 'unknown time'}, rarity {item.rarity:.2f}, "
                f"closeness {item.closeness:.2f}" + (f", {inert(item.logger)}" if item.logger else "")
            ),
            2,
        )
        _location(console, item.first_seen, item.evidence.file, item.evidence.line, 2)
        _indented(console, Text(shorten(inert(item.evidence.text), EVIDENCE_CHARS)), 4)
    console.print(Text("Draft a rule from one: flinkdoctor rules suggest BUNDLE --template N", style="dim"))


def _analytics(console: Console, report: Report) -> None:
    """Checkpoints per job (the analytics' sentences) and the risky settings of the configuration audit; the
    settings that raise nothing are left to the JSON and HTML views."""
    from rich.text import Text

    data = report.to_dict()
    summaries = checkpoint_summaries(data)
    if summaries:
        _heading(console, "Checkpoints", "blue")
        for job, lines in summaries:
            _indented(console, Text(f"job {inert(job)}", style="bold"), 2)
            for line in lines:
                _indented(console, Text("- " + inert(line)), 4, 2)
    risky = [row for row in config_audit(data) if row.get("severity") in ("warning", "critical")]
    if risky:
        _heading(console, f"Configuration audit ({len(risky)} risky)", "yellow")
        for row in risky:
            head = Text(f"{inert(str(row.get('key', '')))}: {inert(str(row.get('value', '')))}", style="bold")
            head.append(f"  {row.get('severity')}, from {inert(str(row.get('source', '')))}", style="")
            _indented(console, head, 2, 2)
            note = inert(str(row.get("note") or ""))
            if row.get("suggested_key"):
                note += f" (key for this version: {inert(str(row['suggested_key']))})"
            _indented(console, Text(note), 4, 2)
