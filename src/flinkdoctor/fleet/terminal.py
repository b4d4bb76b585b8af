"""The fleet report at a terminal of any width, 80 columns included: ids, job names and hosts are never cut.

Text is laid out here, not by rich's tables: a table squeezes a column that does not fit and folds its cells
mid-word (an 80-column table split `zookeeper-client-session-timeout` over two lines). Here a table row goes
on one line when the widest row fits, else over two lines (the columns after `split` on an indented second
line), and a field is only ever moved to the next line whole; one wider than the terminal gets a line of its
own, wrapped by the terminal and copied as one. Every string from the input is masked and made inert first.
"""

from __future__ import annotations

from ..safety.inert import inert
from ..safety.masking import mask
from .report import Answer, FleetReport, SharedIncident

GAP = "  "
JOBS_SHOWN = 5  # jobs listed per cause in the top-causes table


def safe(value) -> str:
    return inert(mask(str(value))) if value is not None else "-"


def when(time: str | None) -> str:
    """An ISO time as the terminal shows times: to the second, UTC (2026-11-22T11:10:49.390Z -> 2026-11-22 11:10:49)."""
    if not time:
        return "-"
    return safe(time.replace("T", " ", 1).removesuffix("Z").split(".", 1)[0])


def _print(console, line: str, style: str | None = None) -> None:
    from rich.text import Text

    console.print(Text(line.rstrip(), style=style or ""), soft_wrap=True)


def pack(console, pieces: list[str], indent: int = 0, hang: int = 2, sep: str = " ", style: str | None = None):
    """`pieces` on as few lines as the width allows, `sep` between them, none ever split; continuation lines
    `hang` further in."""
    width = console.width
    line = " " * indent
    empty = True
    for piece in pieces:
        room = len(line) + (0 if empty else len(sep)) + len(piece)
        if not empty and room > width:
            _print(console, line, style)
            line, empty = " " * (indent + hang), True
        line += ("" if empty else sep) + piece
        empty = False
    if not empty:
        _print(console, line, style)


def say(console, text: str, indent: int = 0, hang: int = 2, style: str | None = None) -> None:
    """Prose wrapped at spaces (a word, an id, is never split)."""
    pack(console, text.split(" "), indent, hang, " ", style)


def table(
    console,
    headers: list[str],
    rows: list[list[str]],
    split: int,
    indent: int = 0,
    notes: list[list[str]] | None = None,
) -> None:
    """Rows in aligned columns: on one line when the widest row fits, else the columns from `split` on a second,
    indented line; a row that still does not fit is packed field by field. `notes`: per row, pieces packed on the
    lines below it."""
    cells = [headers, *rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: list[str], columns: range) -> str:
        return GAP.join(row[i].ljust(widths[i]) for i in columns).rstrip()

    one = indent + sum(widths) + len(GAP) * (len(widths) - 1)
    layouts = [[range(len(headers))]] if one <= console.width else [[range(split), range(split, len(headers))]]
    for number, row in enumerate(cells):
        for depth, columns in enumerate(layouts[0]):
            text = " " * (indent + 2 * depth) + line(row, columns)
            if len(text) <= console.width:
                _print(console, text, "bold" if number == 0 else None)
            else:
                pack(console, [row[i] for i in columns if row[i]], indent + 2 * depth, 2, GAP)
        if notes and number and notes[number - 1]:
            pack(console, notes[number - 1], indent + 4, 2)


def _incident(console, incident: SharedIncident) -> None:
    cause = f"{incident.cause} ({incident.category})" if incident.level == "rule" else f"category {incident.cause}"
    say(console, f"Incident {incident.number}: {cause} on {incident.kind} {safe(incident.key)}", style="bold red")
    say(
        console,
        f"{incident.observed} jobs between {incident.start} and {incident.end}; expected {incident.expected:g} "
        f"({incident.exposed} jobs ran on this {incident.kind} in the window, {incident.with_cause} of the fleet's "
        f"{incident.fleet} show the cause); chance {incident.chance:.2g}",
        2,
    )
    pack(console, ["jobs:", *_listed([safe(job) for job in incident.jobs])], 2, 2)
    if incident.joined:
        pack(console, ["only what it explains:", *_listed([safe(job) for job in incident.joined])], 2, 2)
    if len(incident.rules) > 1 or incident.rules != [incident.cause]:
        pack(console, ["rules seen:", *_listed(incident.rules)], 2, 2)
    if incident.also:
        pack(console, ["also seen as:", *_listed([safe(a) for a in incident.also])], 2, 2)


def _listed(items: list[str]) -> list[str]:
    return [item + ("," if number < len(items) - 1 else "") for number, item in enumerate(items)]


def _answers(console, answers: list[Answer]) -> None:
    failing = [a for a in answers if a.status == "ok" and a.verdict != "no-failure"]
    failing.sort(key=lambda a: (a.first_seen is None, a.first_seen or "", a.job))
    if failing:
        say(console, f"Jobs with a failure ({len(failing)}), first seen first:", style="bold")
        rows = [
            [
                when(a.first_seen),
                a.verdict or "-",
                safe(a.host),
                safe(a.job),
                safe(a.rule),
                safe(a.category),
                ", ".join(f"#{n}" for n in a.incidents) or "",
            ]
            for a in failing
        ]
        headers = ["first seen", "verdict", "host", "job", "top cause", "category", "incident"]
        table(console, headers, rows, split=4, indent=2)
    healthy = [safe(a.job) for a in answers if a.status == "ok" and a.verdict == "no-failure"]
    if healthy:
        pack(console, [f"No failure ({len(healthy)}):", *_listed(healthy)], style="green")
    for a in answers:
        if a.status == "failed":
            say(console, f"Unreadable: {safe(a.job)}: {safe(a.reason)}", style="yellow")


def render_terminal(report: FleetReport, console) -> None:
    """The answers, the top causes, the incidents, then the summary: what matters most is printed last."""
    _answers(console, report.answers)
    if report.causes:
        say(console, "Top root causes by jobs affected:", style="bold")
        rows = [[safe(c.rule), safe(c.category), str(len(c.jobs))] for c in report.causes]
        notes = []
        for cause in report.causes:
            shown = [f"{safe(h.job)} ({when(h.first_seen)}, {safe(h.host)})" for h in cause.jobs[:JOBS_SHOWN]]
            more = [f"and {len(cause.jobs) - JOBS_SHOWN} more"] if len(cause.jobs) > JOBS_SHOWN else []
            notes.append(_listed(shown + more))
        table(console, ["cause", "category", "jobs"], rows, split=2, indent=2, notes=notes)
    for incident in report.incidents:
        _incident(console, incident)
    if not report.incidents:
        say(
            console,
            f"No shared incident: no cause hit jobs on one resource within {report.window_minutes:g} minutes more "
            f"often than the fleet's background explains.",
            style="green",
        )
    run = report.run
    if run:
        say(
            console,
            f"this run: {run.get('new', 0)} new bundles, {run.get('skipped', 0)} already in the lake, "
            f"{run.get('failed', 0)} failed to read",
            style="dim",
        )
    verdicts = ", ".join(f"{safe(k)} {v}" for k, v in report.verdicts.items())
    say(
        console,
        f"fleet: {report.bundles} bundles, {report.ok} diagnosed ({verdicts}), {len(report.failed)} unreadable, "
        f"{len(report.incidents)} shared incident{'s' if len(report.incidents) != 1 else ''}",
    )
