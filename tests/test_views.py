"""The views a person reads: the terminal at 80 columns (snapshots of real bundles), the HTML file attached to a
ticket, and the Markdown pasted into one; the command line that writes them, with Spark's own output kept away.

Snapshots live in tests/data/snapshots; after a deliberate change of the terminal view, rewrite them with
FLINKDOCTOR_UPDATE_SNAPSHOTS=1 and read the diff.
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import DATA

SNAPSHOTS = DATA / "snapshots"
WIDTH = 80
BUNDLES = {
    "seed-000": DATA / "seeds" / "000",
    "seed-002": DATA / "seeds" / "002",
    "seed-003": DATA / "seeds" / "003",
    "lab-1.20.3-checkpoint-timeout": DATA / "lab" / "1.20.3" / "checkpoint-timeout.tar.gz",
}
COLOUR = re.compile(r"\x1b\[[0-9;]*(?:3[0-9]|9[0-7]|38;[0-9;]+)m")


@pytest.fixture(scope="module")
def reports(spark, rules, tmp_path_factory):
    """The report model (not its JSON) of each bundle, as the views get it."""
    from flinkdoctor.pipeline import diagnose

    return {
        name: diagnose([path], spark=spark, rules=rules, work_dir=tmp_path_factory.mktemp("work"))
        for name, path in BUNDLES.items()
    }


def terminal(report, **options) -> str:
    from rich.console import Console

    from flinkdoctor.views import render_terminal

    out = io.StringIO()
    render_terminal(report, Console(file=out, width=WIDTH, **({"no_color": True} | options)))
    return out.getvalue()


# -- terminal --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_terminal_view_matches_its_snapshot_at_80_columns(reports, name):
    text = terminal(reports[name])
    snapshot = SNAPSHOTS / f"terminal-{name}.txt"
    if os.environ.get("FLINKDOCTOR_UPDATE_SNAPSHOTS") == "1":
        snapshot.parent.mkdir(exist_ok=True)
        snapshot.write_text(text, encoding="utf-8")
    assert text == snapshot.read_text(encoding="utf-8"), f"{snapshot} differs (see the module docstring)"


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_terminal_view_wraps_at_80_and_never_cuts_an_id_or_a_file_name(reports, name):
    report = reports[name]
    text = terminal(report)
    lines = text.splitlines()
    whole = {f.evidence[0].file for f in report.findings if f.evidence} | {f.rule for f in report.findings}
    shown = {ev.file for root in report.root_causes for ev in root.evidence} | {
        step.evidence.file for root in report.root_causes for step in root.chain
    }
    for line in lines:
        assert line == line.rstrip(), f"trailing blanks: {line!r}"
        if len(line) > WIDTH:  # only what must copy as one: a command, a config line, a file:line
            assert line.lstrip().startswith("$ ") or ": " in line or any(name in line for name in whole | shown), line
    for name_or_id in whole:
        assert name_or_id in text, name_or_id  # whole, on one line


def test_chain_lines_show_the_message_not_the_log_header(reports):
    report = reports["seed-003"]
    text = terminal(report)
    step = next(s for s in report.root_causes[0].chain if s.rule == "job-restarting")
    assert step.evidence.text.startswith("[INFO ] 2019-04-23 17:39:19,347(437903259) --> [flink-akka")
    chain = text.split("Chain of symptoms", 1)[1].split("\nFix", 1)[0]
    assert "Job Flink Streaming Job (57f29a1a027d4572823bcc59008ad42b) switched from state RUNNING to" in " ".join(
        chain.split()
    )
    assert "--> [flink-akka" not in chain and "[INFO ]" not in chain


def test_colour_only_on_a_terminal_and_never_with_no_color(reports, monkeypatch):
    report = reports["seed-003"]
    assert COLOUR.search(terminal(report, no_color=False, force_terminal=True))
    assert "\x1b" not in terminal(report, no_color=False)  # not a terminal (a pipe, a file)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not COLOUR.search(terminal(report, no_color=None, force_terminal=True))  # None: rich reads NO_COLOR


def test_progress_shows_the_stage_on_a_terminal_only():
    import time

    from rich.console import Console

    from flinkdoctor.views.progress import progress

    shown, hidden = io.StringIO(), io.StringIO()
    with progress(Console(file=shown, force_terminal=True, width=WIDTH), enabled=True):
        time.sleep(0.6)
    with progress(Console(file=hidden, width=WIDTH), enabled=False):
        time.sleep(0.1)
    assert "flinkdoctor: " in shown.getvalue() and " s)" in shown.getvalue()
    assert hidden.getvalue() == ""


# -- HTML ------------------------------------------------------------------------------------------------------


class _Page(HTMLParser):
    """What a page would load or run: external references, scripts, inline handlers; and its section ids."""

    def __init__(self):
        super().__init__()
        self.external, self.scripts, self.handlers, self.ids = [], 0, [], set()

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key in ("src", "href", "xlink:href", "action") and value and not value.startswith("#"):
                self.external.append(value)
            if key.startswith("on"):
                self.handlers.append((tag, key))
            if key == "id":
                self.ids.add(value)
        self.scripts += tag == "script"


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_html_is_one_self_contained_file(reports, name):
    from flinkdoctor.views import render_html

    report = reports[name]
    html = render_html(report)
    assert len(html.encode()) < 2 << 20
    page = _Page()
    page.feed(html)
    assert page.external == [] and page.handlers == [] and page.scripts == 1  # the copy button's, by its hash
    assert "Content-Security-Policy" in html and "default-src &#39;none&#39;" in html
    assert {"verdict", "accounting"} <= page.ids
    if report.root_causes:
        assert {"root-causes", "timeline", "cause-1"} <= page.ids
        assert f"{report.input.lines:,} lines" in html


def test_html_timeline_has_a_lane_per_host_or_component(reports):
    from flinkdoctor.views.timeline import build_timeline

    report = reports["seed-003"]
    timeline = build_timeline(report, lambda ev, rule: f"{ev.file}:{ev.line}")
    lanes = [name for _, name in timeline.lanes]
    assert "hadoop-080-037 (kernel)" in lanes and "jobmanager.log" in lanes and "taskmanager.log" in lanes
    root = next(m for m in timeline.markers if m.kind == "root")
    lockup_lane = dict((name, y) for y, name in timeline.lanes)["hadoop-080-037 (kernel)"]
    assert root.label == "kernel-soft-lockup" and root.y == lockup_lane
    assert len(timeline.edges) == len(report.root_causes[0].chain)  # each step linked to what explains it
    # the kernel prints after the stall: the lockup is later than the first symptoms on the other hosts
    assert root.x > min(m.x for m in timeline.markers)


# -- Markdown --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BUNDLES))
def test_markdown_renders_as_tables_and_blocks_without_markup_from_the_input(reports, name):
    from markdown_it import MarkdownIt

    from flinkdoctor.views import render_markdown

    report = reports[name]
    text = render_markdown(report)
    html = MarkdownIt("commonmark").enable("table").enable("strikethrough").render(text)
    page = _Page()
    page.feed(html)
    assert page.external == [] and page.scripts == 0 and page.handlers == []
    tables = re.findall(r"(?m)(?:^\|.*\n)+", text)
    assert tables or not report.findings
    for table in tables:  # every row has its header's cells: no pipe from the input splits one
        widths = {len(re.split(r"(?<!\\)\|", row)) for row in table.splitlines()}
        assert len(widths) == 1, table
    if report.root_causes:
        assert "<h2>Root cause 1: " in html and "<table>" in html
        for step in report.root_causes[0].chain:
            assert step.rule in text


# -- the command line ------------------------------------------------------------------------------------------


@pytest.mark.spark  # starts Spark in a subprocess
def test_cli_writes_html_and_markdown_and_keeps_sparks_output_away(tmp_path):
    """One run as a user would: Markdown on stdout, the HTML file beside it, and on stderr only flinkdoctor's line
    (Spark's banner and WARN lines go to a log that is removed after a good run)."""
    target = tmp_path / "report.html"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "FLINKDOCTOR_LOG_DIR": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "flinkdoctor", "diagnose", str(DATA / "seeds" / "003"), "--format", "markdown"]
        + ["--html", str(target)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [f"HTML report written to {target}"]
    assert result.stdout.startswith("# flinkdoctor report\n") and "## Root cause 1: Kernel soft lockup" in result.stdout
    assert "Kernel soft lockup froze the host" in target.read_text(encoding="utf-8")
    assert not list(Path(tmp_path).glob("flinkdoctor-spark-*.log"))


def test_a_long_checkpoint_series_is_drawn_thinned_with_its_extremes():
    """A week of one-minute checkpoints (10,080 points) is drawn as each span's lowest and highest point: the
    chart stays small, the one slow checkpoint and the fastest still show, and the legend says so."""
    from datetime import datetime, timedelta

    from flinkdoctor.views.charts import MOST_DRAWN, checkpoint_charts, thin

    start = datetime(2026, 3, 1)
    points = [(start + timedelta(minutes=i), 1000.0 + i % 7) for i in range(7 * 24 * 60)]
    points[5000] = (points[5000][0], 95_123.0)
    drawn = thin(points)
    assert len(drawn) <= MOST_DRAWN and drawn == sorted(drawn)
    assert max(v for _, v in drawn) == 95_123.0 and min(v for _, v in drawn) == 1000.0
    assert thin(points[:100]) == points[:100]  # short series: every point

    series = [
        {
            "id": i,
            "time": t.isoformat(),
            "status": "completed",
            "duration_ms": v,
            "size_bytes": None,
            "stage": "checkpoint",
        }
        for i, (t, v) in enumerate(points)
    ]
    (job,) = checkpoint_charts({"checkpoints": {"jobs": [{"job": "j", "series": series, "summary": []}]}})
    (chart,) = job["charts"]
    assert "95123" in chart.replace(",", "") and "10,080 points" in chart
    assert chart.count("<circle") <= MOST_DRAWN + 10


def test_the_timeline_draws_every_rule_found_on_a_line_once():
    """A marker names one rule: another rule that matched the root cause's own line gets its marker (it was
    dropped as "shown" by the line alone), and the root cause's rule, found on that line too, is not drawn twice."""
    from flinkdoctor.report.model import (
        Evidence,
        FindingReport,
        InputReport,
        Report,
        RootCauseReport,
        SourceReport,
    )
    from flinkdoctor.views.timeline import build_timeline

    at = Evidence("host-1/taskmanager.log", 12, "2026-04-23T21:26:38.027Z", "java.lang.OutOfMemoryError", "vm-1")
    elsewhere = Evidence("host-2/taskmanager.log", 12, "2026-04-23T21:26:39.027Z", "task failed", "vm-2")
    root = RootCauseReport("heap-oom", "memory", "t", 0.9, at.time, "vm-1", 1, "e", [at], [], [], [])
    findings = [
        FindingReport(rule, category, role, "t", len(seen), seen[0].time, seen[-1].time, seen)
        for rule, category, role, seen in (
            ("heap-oom", "memory", "cause", [at]),
            ("task-failed", "job-failure", "symptom", [at, elsewhere]),
            ("job-restart", "job-failure", "symptom", [elsewhere]),
        )
    ]
    sources = [SourceReport(e.file, "flink-taskmanager", "flink-log4j2", 100, 0) for e in (at, elsewhere)]
    report = Report(InputReport(2, 200, 200, 0, 2, sources), None, "none", [root], findings, [])
    timeline = build_timeline(report, lambda ev, rule: f"{rule}-{ev.file}-{ev.line}")
    assert sorted(m.anchor for m in timeline.markers) == [
        "heap-oom-host-1/taskmanager.log-12",
        "job-restart-host-2/taskmanager.log-12",
        "task-failed-host-1/taskmanager.log-12",
    ]
