"""Command line: `flinkdoctor diagnose`, `flinkdoctor rules`, `flinkdoctor lab`."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from .ingest import DEFAULT_MAX_UNPACKED, IngestError
from .rulebook import RuleError, load_rules

EXIT_FOUND, EXIT_USAGE, EXIT_INPUT = 1, 2, 3


@click.group()
@click.version_option(package_name="flinkdoctor")
def main():
    """Find the root cause of an Apache Flink incident in its logs."""


@main.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--work-dir", type=click.Path(file_okay=False), help="Where staged sources and the events Parquet go "
              "(default: a new temporary folder).")
@click.option("--timezone", default="UTC", show_default=True, help="Time zone of log times that carry none.")
@click.option("--year", type=int, help="Year for syslog lines, which print none (default: from the bundle).")
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=True, file_okay=False),
              help="A folder of your own rules, added to the shipped ones (repeatable).")
@click.option("--flink-version", help="Flink version, when the bundle does not show it (selects config keys).")
@click.option("--fail-on", multiple=True, help="Exit 1 when a root cause of this category (or 'any') is found.")
@click.option("--max-unpacked", type=int, default=DEFAULT_MAX_UNPACKED, show_default=True,
              help="Largest total size, in bytes, that archives may unpack to.")
@click.option("--master", help="Spark master (default local[*]; spark-submit's when run under it).")
def diagnose(paths, fmt, work_dir, timezone, year, rules_dirs, flink_version, fail_on, max_unpacked, master):
    """Diagnose a bundle: folders, archives (.tar.gz .tgz .zip .gz) or single log files."""
    from .diagnose import diagnose as run
    from .report import render_json, render_terminal

    try:
        rules = load_rules(rules_dirs)
    except RuleError as err:
        click.echo(f"flinkdoctor: invalid rules:\n{err}", err=True)
        sys.exit(EXIT_USAGE)
    for path in paths:
        if not Path(path).exists():
            click.echo(f"flinkdoctor: {path}: no such file or folder", err=True)
            sys.exit(EXIT_INPUT)
    spark = None
    if master:
        from .spark import spark_session
        spark = spark_session(master)
    try:
        report = run(list(paths), spark=spark, work_dir=work_dir, timezone=timezone, year=year, rules=rules,
                     flink_version=flink_version, max_unpacked=max_unpacked)
    except IngestError as err:
        click.echo(f"flinkdoctor: {err}", err=True)
        sys.exit(EXIT_INPUT)
    if fmt == "json":
        click.echo(render_json(report))
    else:
        from rich.console import Console
        render_terminal(report, Console())
    categories = {root["category"] for root in report["root_causes"]}
    if fail_on and categories and ("any" in fail_on or categories & set(fail_on)):
        sys.exit(EXIT_FOUND)


@main.group()
def rules():
    """The knowledge base: list, show and test the rules."""


@rules.command("list")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=True, file_okay=False))
def rules_list(fmt, rules_dirs):
    """Every rule: id, category, role and number of cases."""
    loaded = _load_or_exit(rules_dirs)
    rows = [{"id": r.id, "category": r.category, "role": r.role, "cases": len(r.cases), "title": r.title,
             "gap": r.gap} for r in sorted(loaded, key=lambda r: (r.category, r.id))]
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table
    table = Table(title=f"{len(rows)} rules")
    for column in ("id", "category", "role", "cases", "title"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["id"], row["category"], row["role"], str(row["cases"]), row["title"])
    Console().print(table)


@rules.command("show")
@click.argument("rule_id")
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=True, file_okay=False))
def rules_show(rule_id, rules_dirs):
    """The explanation, fix and references a report prints for RULE_ID."""
    by_id = {r.id: r for r in _load_or_exit(rules_dirs)}
    if rule_id not in by_id:
        click.echo(f"flinkdoctor: no rule {rule_id!r}", err=True)
        sys.exit(EXIT_USAGE)
    rule = by_id[rule_id]
    click.echo(f"{rule.id}: {rule.title}\ncategory: {rule.category}   role: {rule.role}   file: {rule.path}\n")
    click.echo(rule.explanation + "\n")
    for fix in rule.fix:
        click.echo(f"fix{' (' + fix['versions'] + ')' if fix.get('versions') else ''}: {fix['text']}")
        for key, value in (fix.get("config") or {}).items():
            click.echo(f"    {key}: {value}")
        if fix.get("command"):
            click.echo(f"    $ {fix['command']}")
    click.echo("references: " + ", ".join(rule.references))
    if rule.gap:
        click.echo(f"known gap: {rule.gap}")


@rules.command("test")
@click.argument("path", required=False, type=click.Path(exists=True, file_okay=False))
def rules_test(path):
    """Run the cases of the shipped rules, or of the rules in PATH, and say which fail."""
    from .cases import run_cases
    from .spark import spark_session

    loaded = _load_or_exit([path] if path else [])
    chosen = [r for r in loaded if not path or Path(r.path).resolve().is_relative_to(Path(path).resolve())]
    results = run_cases(spark_session(), chosen)
    failed = [r for r in results if not r.passed]
    for result in failed:
        click.echo(f"FAIL {result.name} ({result.source}): expected {'a' if result.expect_match else 'no'} match\n"
                   f"     {result.text.strip()[:300]}")
    gaps = [r.id for r in chosen if r.gap]
    click.echo(f"{len(results) - len(failed)} passed, {len(failed)} failed" +
               (f" ({len(gaps)} rules with a known gap: {', '.join(gaps)})" if gaps else ""))
    sys.exit(1 if failed else 0)


def _load_or_exit(dirs):
    try:
        return load_rules(dirs)
    except RuleError as err:
        click.echo(f"flinkdoctor: invalid rules:\n{err}", err=True)
        sys.exit(EXIT_USAGE)


try:  # the fault lab lives in its own package; the CLI works without it
    from .lab.cli import lab as _lab
    main.add_command(_lab)
except ImportError:  # pragma: no cover
    pass
