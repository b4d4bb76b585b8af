"""The terminal view: root causes first, each with its evidence, chain and fix; then every finding.

Every string that came from the input (log text, file names, captured values in fixes) goes through `inert()` and
into `rich.text.Text`, never into a markup string: a file named `[link=...]x[/link].log` stays a name.
"""

from __future__ import annotations

from ..inert import inert
from ..report import Report, RootCauseReport, UnexplainedErrorReport, UnexplainedSymptomReport

EVIDENCE_SHOWN = 3
VERDICT_STYLE = {"no-failure": "green", "derived-cause": "yellow"}


def render_terminal(report: Report, console) -> None:
    from rich.panel import Panel
    from rich.table import Table
    from rich.text import Text

    given = report.input
    version = report.flink_version or "unknown (fixes for all versions shown)"
    console.print(
        Text(
            f"flinkdoctor: {given.files} files, {given.lines:,} lines ({given.lines_unparsed:,} "
            f"unparsed), {given.events:,} events; Flink version {inert(version)}",
            style="dim",
        )
    )
    for source in given.unreadable:
        why = source.truncated or f"{source.unparsed:,} of {source.lines:,} lines could not be parsed"
        console.print(
            Text(
                f"Not fully readable: {inert(source.path)} ({inert(why)}); a diagnosis cannot rest on it",
                style="yellow",
            )
        )
    for source in given.sources:
        if source.untimed and source.lines:
            console.print(
                Text(
                    f"No timestamps: {inert(source.path)}: its {source.lines:,} lines could not be placed in time "
                    "(matched, but not ordered against other sources)",
                    style="yellow",
                )
            )
    style = VERDICT_STYLE.get(report.verdict, "red")
    console.print(Panel(Text(_verdict(report)), title="Diagnosis", border_style=style))
    for rank, root in enumerate(report.root_causes, 1):
        title = f"Root cause #{rank}" + (" (derived from the exception chain)" if root.derived else "")
        console.print(Panel(_root_cause(root), title=title, border_style="red" if rank == 1 else "yellow"))
    for item in report.unexplained_symptoms:
        console.print(Panel(_unexplained(item), title="Unexplained symptom", border_style="yellow"))
    if report.unexplained_errors:
        title = "Unexplained errors (no rule explains them; rare in healthy runs, near the failure first)"
        console.print(Panel(_unexplained_errors(report.unexplained_errors), title=title, border_style="yellow"))
    if report.findings:
        table = Table(title="All findings", show_lines=False)
        for column in ("rule", "category", "role", "count", "first seen", "where"):
            table.add_column(column, overflow="fold")
        for row in report.findings:
            where = f"{row.evidence[0].file}:{row.evidence[0].line}" if row.evidence else "-"
            table.add_row(
                *(
                    Text(inert(cell))
                    for cell in (row.rule, row.category, row.role, str(row.count), row.first_seen or "-", where)
                )
            )
        console.print(table)
    for skipped in report.skipped:
        console.print(Text(f"Skipped: {inert(skipped.get('path'))}: {inert(skipped.get('reason'))}", style="yellow"))
    if report.work_dir:
        console.print(Text(f"Work dir kept: {inert(report.work_dir)}", style="dim"))


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


def _unexplained(item: UnexplainedSymptomReport):
    from rich.text import Text

    body = Text()
    body.append(f"{inert(item.title)}\n", style="bold")
    body.append(f"rule {item.rule}  category {item.category}  first seen {item.first_seen or 'unknown time'}  ")
    body.append(f"({item.count} times)\n\n")
    body.append("What usually causes it: " + inert(item.usually_caused_by) + "\n")
    if item.explained_by:
        body.append("Evidence that would explain it (absent here): " + inert(", ".join(item.explained_by)) + "\n")
    if item.missing:
        body.append("Logs those signatures read, missing from the input: " + inert(", ".join(item.missing)) + "\n")
    for ev in item.evidence[:EVIDENCE_SHOWN]:
        body.append(f"  {inert(ev.file)}:{ev.line}  {ev.time or ''}\n", style="cyan")
        body.append(f"    {inert(ev.text)[:300]}\n")
    return body


def _unexplained_errors(items: list[UnexplainedErrorReport]):
    from rich.text import Text

    body = Text()
    for rank, item in enumerate(items, 1):
        if rank > 1:
            body.append("\n")
        body.append(f"#{rank} {item.level}  ", style="bold")
        body.append(inert(item.template)[:300] + "\n", style="bold")
        body.append(
            f"   {item.count} times, first seen {item.first_seen or 'unknown time'}, rarity {item.rarity:.2f}, "
            f"closeness {item.closeness:.2f}" + (f", {inert(item.logger)}" if item.logger else "") + "\n"
        )
        ev = item.evidence
        body.append(f"   {inert(ev.file)}:{ev.line}\n", style="cyan")
        body.append(f"     {inert(ev.text)[:300]}\n")
    body.append("\nDraft a rule from one: flinkdoctor rules suggest BUNDLE --template N", style="dim")
    return body


def _root_cause(root: RootCauseReport):
    from rich.text import Text

    body = Text()
    body.append(f"{inert(root.title)}\n", style="bold")
    if root.derived:
        body.append("derived from the exception chain, no known signature matched\n", style="yellow")
    body.append(
        f"category {root.category}  rule {root.rule}  confidence {root.confidence:.2f}  "
        f"first seen {root.first_seen or 'unknown time'}  ({root.count} times)\n\n"
    )
    body.append(inert(" ".join(root.explanation.split())) + "\n\n")  # the rule's line breaks are not the terminal's
    body.append("Evidence\n", style="bold")
    for ev in root.evidence[:EVIDENCE_SHOWN]:
        body.append(f"  {inert(ev.file)}:{ev.line}  {ev.time or ''}\n", style="cyan")
        body.append(f"    {inert(ev.text)[:300]}\n")
    if root.chain:
        body.append("\nChain of symptoms\n", style="bold")
        for step in root.chain:
            indent = "  " * (step.depth - 1)
            body.append(f"  {indent}-> {step.rule} ({step.category})  ", style="yellow")
            body.append(
                f"{step.evidence.time or 'no time'}  {inert(step.evidence.file)}:{step.evidence.line}\n", style="cyan"
            )
            body.append(f"  {indent}     {inert(step.evidence.text)[:200]}\n")
    if root.fix:
        body.append("\nFix\n", style="bold")
        for fix in root.fix:
            body.append(f"  * {inert(fix.text)}\n")
            for key, value in fix.config.items():
                body.append(f"      {inert(key)}: {inert(value)}\n", style="green")
            if fix.command:
                body.append(f"      $ {inert(fix.command)}\n", style="green")
    body.append("\nReferences: " + inert(", ".join(root.references)), style="dim")
    return body
