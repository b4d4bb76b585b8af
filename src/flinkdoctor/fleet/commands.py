"""`flinkdoctor fleet ROOT... --out LAKE` and `flinkdoctor fleet query LAKE ...`."""

from __future__ import annotations

from datetime import timedelta

import click

from ..errors import UsageError
from ..options import check_timezone, check_year
from ..safety import outbound
from ..safety.inert import inert
from ..sources.ingest import DEFAULT_MAX_UNPACKED


class _DefaultRun(click.Group):
    """`fleet ROOT...` means `fleet run ROOT...`; `fleet query LAKE` is the query."""

    def parse_args(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["run", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultRun)
def fleet():
    """Many jobs' bundles in one Spark application: a Parquet lake, every job's answer, shared incidents."""


@fleet.command("run")
@click.argument("roots", nargs=-1, required=True)
@click.option("--out", "lake_dir", required=True, type=click.Path(file_okay=False), help="The lake folder.")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
@click.option("--work-dir", type=click.Path(file_okay=False), help="Where bundles are staged (default: temporary).")
@click.option("--timezone", default="UTC", show_default=True, callback=lambda c, p, v: check_timezone(v))
@click.option("--year", type=int, callback=lambda c, p, v: check_year(v), help="Year for syslog lines.")
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=True, file_okay=False))
@click.option("--window", type=click.IntRange(min=1), default=15, show_default=True, help="Minutes: an incident's.")
@click.option("--min-jobs", type=click.IntRange(min=2), default=2, show_default=True, help="Jobs: an incident's least.")
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Root causes listed.")
@click.option("--max-unpacked", type=click.IntRange(min=1), default=DEFAULT_MAX_UNPACKED, show_default=True)
@click.option("--master", help="Spark master (default local[*]; spark-submit's when run under it).")
def fleet_run(roots, lake_dir, fmt, work_dir, timezone, year, rules_dirs, window, min_jobs, top, max_unpacked, master):
    """Diagnose every bundle (a folder or archive per job) under ROOT... not yet in the lake; report the fleet."""
    from ..knowledge.rulebook import load_rules
    from .report import build
    from .run import run_fleet

    rules = load_rules(rules_dirs)
    spark = None
    if master:
        from ..runtime.spark import spark_session

        spark = spark_session(master, app_name="flinkdoctor-fleet")
    result = run_fleet(
        list(roots),
        lake_dir,
        rules,
        spark=spark,
        work_dir=work_dir,
        timezone=timezone,
        year=year,
        max_unpacked=max_unpacked,
    )
    summary = {"run": result.run, "new": result.new, "skipped": result.skipped, "failed": result.failed}
    report = build(lake_dir, timedelta(minutes=window), min_jobs, top, {**summary, "timings": result.timings}, rules)
    _show(report, fmt)


@fleet.command("report")
@click.argument("lake_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json", "html"]), default="text", show_default=True)
@click.option("--window", type=click.IntRange(min=1), default=15, show_default=True)
@click.option("--min-jobs", type=click.IntRange(min=2), default=2, show_default=True)
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True)
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=True, file_okay=False))
def fleet_report(lake_dir, fmt, window, min_jobs, top, rules_dirs):
    """The fleet report of a lake, without running anything."""
    from ..knowledge.rulebook import load_rules
    from .report import build

    _show(build(lake_dir, timedelta(minutes=window), min_jobs, top, rules=load_rules(rules_dirs)), fmt)


@fleet.command("query")
@click.argument("lake_dir", type=click.Path(exists=True, file_okay=False))
@click.option("--had", "what", help="A rule id or a category, e.g. checkpoint-storage-slow.")
@click.option("--since", help="7d, 12h, 2w or an ISO date (UTC).")
@click.option("--until", help="7d, 12h, 2w or an ISO date (UTC).")
@click.option("--sql", "statement", help="Spark SQL over the views bundles, events, findings, diagnoses.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def fleet_query(lake_dir, what, since, until, statement, fmt):
    """Which jobs had a cause or symptom (--had) in a time range; or any SQL over the lake (--sql)."""
    from .query import jobs_with, parse_time, sql

    if bool(what) == bool(statement):
        raise UsageError("fleet query: give --had RULE_OR_CATEGORY or --sql STATEMENT (one of them)")
    if statement:
        from ..runtime.spark import spark_session

        rows = [row.asDict(recursive=True) for row in sql(spark_session(), lake_dir, statement).collect()]
    else:
        rows = jobs_with(lake_dir, what, parse_time(since), parse_time(until))
    if fmt == "json":
        outbound.echo_json(rows, indent=2, default=str)
        return
    for row in rows:
        outbound.echo(inert("  ".join(f"{k}={v}" for k, v in row.items() if k != "bundle_id")))
    outbound.echo(f"{len(rows)} rows")


def _show(report, fmt: str) -> None:
    from .views import VIEWS, render_terminal

    if fmt in VIEWS:
        outbound.show(report, VIEWS[fmt])
        return
    outbound.show_terminal(report, render_terminal)
