"""Command line: `flinkdoctor diagnose`, `collect`, `watch`, `rules` and `fleet` (fleet/commands.py).

Exit codes (errors.py): 0 analysis done; 1 a check that said no (--fail-on matched, a rules test case failed, no
server running); 2 usage error (checked before Spark starts); 3 unreadable input or work dir; 4 internal error (one
line here, the traceback in a log file); 141 stdout's reader gone (`| head`).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import tempfile
import threading
import traceback
from datetime import datetime
from pathlib import Path
from typing import NoReturn

import click

from .errors import EXIT_CHECK_FAILED, EXIT_INTERNAL, EXIT_USAGE, FlinkdoctorError, OutputClosed, UsageError
from .knowledge.rulebook import load_rules
from .live.commands import (
    collect_command,
    collect_or_exit,
    connection,
    default_bundle_path,
    rest_options,
    watch_command,
)
from .options import check_flink_version, check_timezone, check_year
from .safety import outbound
from .safety.inert import inert
from .sources.ingest import DEFAULT_MAX_UNPACKED
from .suggest import suggest


class Terminated(KeyboardInterrupt):
    """SIGTERM: stop as on Ctrl-C (Spark's jobs cancelled, what the run wrote removed), and say so."""


def _on_sigterm(signum, frame) -> None:
    handler = signal.getsignal(signal.SIGINT)  # PySpark's, once a session runs: it cancels the running jobs
    if callable(handler) and handler is not signal.default_int_handler:
        with contextlib.suppress(KeyboardInterrupt):
            handler(signum, frame)
    raise Terminated


def main(argv: list[str] | None = None) -> None:
    """Entry point: every error becomes its exit code and one line on stderr; never a traceback."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
    # py4j logs the call a signal interrupted, with its traceback, on the root logger (logging.exception, which
    # would give it a stderr handler); the one line below says what happened
    logging.getLogger().addHandler(logging.NullHandler())
    try:
        cli.main(args=argv, standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as err:  # click's own usage errors
        with outbound.written(err=True):  # a stderr that fails loses the line, not the exit code
            err.show()
        sys.exit(EXIT_USAGE)
    except click.exceptions.Abort as abort:  # click turns Ctrl-C (and our SIGTERM) into Abort, the signal its cause
        if isinstance(abort.__cause__, KeyboardInterrupt):
            _stopped(abort.__cause__)
        outbound.echo("flinkdoctor: aborted", err=True)
        sys.exit(EXIT_INTERNAL)
    except OutputClosed as closed:  # no one reads what more there is to say
        sys.exit(closed.exit_code)
    except FlinkdoctorError as err:
        outbound.echo(f"flinkdoctor: {inert(str(err), keep_newlines=True)}", err=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt as stop:
        _stopped(stop)
    except Exception as err:  # noqa: BLE001 - the one place that turns a crash into exit 4 with a log file
        if isinstance(err, OSError) and isinstance(err.__context__, KeyboardInterrupt):
            _stopped(err.__context__)  # click said ^C's blank line to a stderr that failed: still the signal's exit
        log = _write_crash_log()
        summary = inert(f"{type(err).__name__}: {err}".splitlines()[0][:300])
        spark_log = _kept_spark_log()
        outbound.echo(
            f"flinkdoctor: internal error ({summary}); the traceback is in {log}"
            + (f" and Spark's own output in {spark_log}" if spark_log else ""),
            err=True,
        )
        sys.exit(EXIT_INTERNAL)


def _stopped(signal_: KeyboardInterrupt) -> NoReturn:
    """Exit 143 after SIGTERM, 130 after SIGINT (the shell's 128 + signal number), with one line."""
    terminated = isinstance(signal_, Terminated)
    outbound.echo(f"flinkdoctor: {'terminated' if terminated else 'interrupted'}", err=True)
    sys.exit(143 if terminated else 130)


def _kept_spark_log() -> Path | None:
    """Spark's own output of this run, kept for the bug report (only if flinkdoctor started Spark quietly)."""
    if "flinkdoctor.runtime.spark" not in sys.modules:
        return None
    from .runtime.spark import keep_spark_log

    kept = keep_spark_log()
    if kept is not None:
        outbound.mask_file(kept)  # the JVM wrote it itself; its Python workers' errors quote input lines
    return kept


def _write_crash_log() -> Path:
    """The traceback of an internal error, in a file the user can attach to a bug report."""
    folder = Path(os.environ.get("FLINKDOCTOR_LOG_DIR") or tempfile.gettempdir())
    path = folder / f"flinkdoctor-error-{datetime.now():%Y%m%d-%H%M%S}-{os.getpid()}.log"
    return outbound.write_text(path, traceback.format_exc())


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from importlib.metadata import version

        outbound.echo(f"{ctx.find_root().info_name}, version {version('flinkdoctor')}")
        ctx.exit()


def _show_help(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        outbound.echo(ctx.get_help())
        ctx.exit()


def _help_written(command: click.Command) -> None:
    """`--help` on `command` and every command under it written as flinkdoctor writes (`outbound.echo`): click's
    own prints outside it, so a closed pipe exited 1 (`--fail-on`'s code) and a full disk 4 with a crash log.
    click's own option is kept (a usage error names it: "Try '... --help' for help."), its callback replaced."""
    own = command.get_help_option

    def help_option(ctx: click.Context) -> click.Option | None:
        option = own(ctx)
        if option is not None:
            option.callback = _show_help
        return option

    command.get_help_option = help_option  # type: ignore[method-assign]
    for sub in getattr(command, "commands", {}).values():
        _help_written(sub)


@click.group()
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Show the version and exit.",
)
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Find the root cause of an Apache Flink incident in its logs."""
    if ctx.invoked_subcommand in ("diagnose", "watch", "fleet"):
        _system_arrow_pool()


ARROW_POOL = "ARROW_DEFAULT_MEMORY_POOL"


def _system_arrow_pool() -> None:
    """The driver's Arrow buffers from the C library's allocator, unless the user chose one: Arrow's own
    (mimalloc) keeps the pages of the measures' batches the driver read and freed, which then count in its peak.
    Arrow reads the variable once, when its pool is first asked for: set for that, then unset, so that Spark's
    Python workers, started from the driver's environment, keep Arrow's own for the scan."""
    if ARROW_POOL in os.environ or "pyarrow" in sys.modules:
        return
    os.environ[ARROW_POOL] = "system"
    try:
        import pyarrow

        pyarrow.default_memory_pool()
    finally:
        del os.environ[ARROW_POOL]


cli.add_command(collect_command)
cli.add_command(watch_command)


@cli.command()
@click.argument("paths", nargs=-1)
@rest_options(required=False)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "html", "markdown"]),
    default="text",
    show_default=True,
    help="What goes to stdout: the terminal view, the JSON contract, one self-contained HTML file, or Markdown "
    "for a ticket.",
)
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, writable=True),
    help="Also write the HTML report to this file (to attach to a ticket).",
)
@click.option("--verbose", is_flag=True, help="Show Spark's own output (its banner, warnings and log lines).")
@click.option(
    "--work-dir",
    type=click.Path(file_okay=False),
    help="Where staged sources and the events Parquet go "
    "(default: a new temporary folder). Must be new, empty, or an earlier flinkdoctor work dir.",
)
@click.option(
    "--keep-work-dir",
    is_flag=True,
    help="Keep the work dir after the run and say where it is "
    "(default: everything flinkdoctor wrote there is removed).",
)
@click.option(
    "--timezone",
    default="UTC",
    show_default=True,
    callback=lambda c, p, v: check_timezone(v),
    help="Time zone of log times that carry none (an IANA name such as Asia/Shanghai).",
)
@click.option(
    "--year",
    type=int,
    callback=lambda c, p, v: check_year(v),
    help="Year for syslog lines, which print none (default: from the bundle).",
)
@click.option(
    "--rules",
    "rules_dirs",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="A folder of your own rules, added to the shipped ones (repeatable).",
)
@click.option(
    "--flink-version",
    callback=lambda c, p, v: check_flink_version(v),
    help="Flink version, when the bundle does not show it (selects config keys), e.g. 1.20.3.",
)
@click.option("--fail-on", multiple=True, help="Exit 1 when a root cause of this category (or 'any') is found.")
@click.option(
    "--max-unpacked",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_UNPACKED,
    show_default=True,
    help="Largest total size, in bytes, that archives may unpack to.",
)
@click.option("--master", help="Spark master (default local[*]; spark-submit's when run under it).")
@click.option(
    "--remote",
    help="A Spark Connect server to run on, sc://host:port (default: the one `flinkdoctor server start` runs, if any).",
)
def diagnose(
    paths,
    fmt,
    html_file,
    verbose,
    work_dir,
    keep_work_dir,
    timezone,
    year,
    rules_dirs,
    flink_version,
    fail_on,
    max_unpacked,
    master,
    remote,
    rest,
    max_log_mb,
    **connection_options,
):
    """Diagnose a bundle: folders, archives (.tar.gz .tgz .zip .gz) or single log files; or, with --rest, a bundle
    collected from a running cluster first (kept beside you, as `flinkdoctor collect` writes it)."""
    from .knowledge.vocabulary import CATEGORIES
    from .pipeline import diagnose as run
    from .views.progress import progress

    unknown = sorted(set(fail_on) - set(CATEGORIES) - {"any"})
    if unknown:
        raise UsageError(
            f"--fail-on: unknown categor{'y' if len(unknown) == 1 else 'ies'} {', '.join(unknown)} "
            "(use 'any' or a category from `flinkdoctor rules list`)"
        )
    if bool(paths) == bool(rest):
        raise UsageError("give either bundle paths or --rest URL")
    if html_file and not Path(html_file).resolve().parent.is_dir():
        raise UsageError(f"--html: no folder to write {html_file} in")  # before Spark starts, not after the run
    rules = load_rules(rules_dirs)
    if rest:
        conn = connection(rest, **connection_options)
        paths = (str(collect_or_exit(conn, default_bundle_path(conn), max_log_mb).path),)
    errors = outbound.console(stderr=True)
    with progress(errors, enabled=errors.is_terminal and not verbose):
        spark = None
        if master or remote:
            from .runtime.spark import spark_session

            spark = spark_session(master, remote=remote, verbose=verbose)
        report = run(
            list(paths),
            spark=spark,
            work_dir=work_dir,
            keep_work_dir=keep_work_dir,
            timezone=timezone,
            year=year,
            rules=rules,
            flink_version=flink_version,
            max_unpacked=max_unpacked,
            verbose=verbose,
        )
    if html_file:
        from .views import render_html

        try:
            outbound.show(report, render_html, to=html_file)
        except OSError as err:
            raise UsageError(f"--html: cannot write {html_file} ({err.strerror or type(err).__name__})") from None
        errors.print(
            f"HTML report written to {inert(html_file)}", style="dim", markup=False, highlight=False, soft_wrap=True
        )
    _show(report, fmt)
    categories = {root.category for root in report.root_causes}
    if fail_on and categories and ("any" in fail_on or categories & set(fail_on)):
        sys.exit(EXIT_CHECK_FAILED)


def _show(report, fmt: str) -> None:
    """The report on stdout in the chosen format; colour only on a terminal, and never with NO_COLOR (rich)."""
    from . import views

    if fmt == "text":
        outbound.show_terminal(report, views.render_terminal)
        return
    if fmt == "json":
        outbound.show_chunks(report, views.json_chunks)  # written one job at a time, never held whole
        return
    render = {"html": views.render_html, "markdown": views.render_markdown}[fmt]
    outbound.show(report, render, nl=fmt != "markdown")


@cli.group()
def server():
    """A long-running Spark (Connect) server that diagnose reuses: the warm path for repeated runs."""


@server.command("start")
@click.option("--port", type=click.IntRange(1, 65535), default=15002, show_default=True)
def server_start(port):
    """Start the server in the background (diagnose then attaches to it)."""
    from .runtime.server import start

    state = start(port)
    outbound.echo(f"flinkdoctor server running at {state['url']} (pid {state['pid']}, log {state['log']})")


@server.command("stop")
def server_stop():
    """Stop the server."""
    from .runtime.server import stop

    outbound.echo("flinkdoctor server stopped" if stop() else "no flinkdoctor server running")


@server.command("status")
def server_status():
    """Say whether the server runs, and where."""
    from .runtime.server import status

    state = status()
    outbound.echo(f"running at {state['url']} (pid {state['pid']})" if state else "not running")
    if not state:
        sys.exit(EXIT_CHECK_FAILED)


@cli.group()
def rules():
    """The knowledge base: list, show and test the rules, and draft new ones."""


rules.add_command(suggest)


@rules.command("list")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=True, file_okay=False))
def rules_list(fmt, rules_dirs):
    """Every rule: id, category, role and number of cases."""
    loaded = load_rules(rules_dirs)
    rows = [
        {"id": r.id, "category": r.category, "role": r.role, "cases": len(r.cases), "title": r.title, "gap": r.gap}
        for r in sorted(loaded, key=lambda r: (r.category, r.id))
    ]
    if fmt == "json":
        outbound.echo_json(rows, indent=2)
        return
    from rich.table import Table

    table = Table(title=f"{len(rows)} rules")
    for column in ("id", "category", "role", "cases", "title"):
        table.add_column(column)
    for row in rows:
        table.add_row(*(str(row[column]) for column in ("id", "category", "role", "cases", "title")))
    outbound.console().print(table)


@rules.command("show")
@click.argument("rule_id")
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=True, file_okay=False))
def rules_show(rule_id, rules_dirs):
    """The explanation, fix and references a report prints for RULE_ID."""
    from .knowledge.rulebook import duration_text

    by_id = {r.id: r for r in load_rules(rules_dirs)}
    if rule_id not in by_id:
        raise UsageError(f"no rule {rule_id!r} (see `flinkdoctor rules list`)")
    rule = by_id[rule_id]
    outbound.echo(
        f"{rule.id}: {rule.title}\ncategory: {rule.category}   role: {rule.role}   file: {rule.path}"
        + (f"   Flink {rule.versions}" if rule.versions else "")
        + "\n"
    )
    outbound.echo(rule.explanation + "\n")
    for fix in rule.fix:
        outbound.echo(f"fix{' (' + fix.versions + ')' if fix.versions else ''}: {fix.text}")
        for key, value in fix.config.items():
            outbound.echo(f"    {key}: {value}")
        if fix.command:
            outbound.echo(f"    $ {fix.command}")
    for relation in rule.explains:  # relation sets expanded: what the rule explains, window and scope
        outbound.echo(
            f"explains {relation.target[0]} {relation.target[1]}: {duration_text(relation.before_ms)} "
            f"before to {duration_text(relation.after_ms)} after, scope {relation.scope}"
        )
    outbound.echo("references: " + ", ".join(rule.references))
    if rule.gap:
        outbound.echo(f"known gap: {rule.gap}")


@rules.command("test")
@click.argument("path", required=False, type=click.Path(exists=True, file_okay=False))
def rules_test(path):
    """Run the cases of the shipped rules, or of the rules in PATH, and say which fail."""
    from .cases import run_cases
    from .runtime.spark import spark_session

    loaded = load_rules([path] if path else [])
    chosen = [r for r in loaded if not path or Path(r.path).resolve().is_relative_to(Path(path).resolve())]
    results = run_cases(spark_session(), chosen)
    failed = [r for r in results if not r.passed]
    for result in failed:
        outbound.echo(
            f"FAIL {result.name} ({result.source}): expected {'a' if result.expect_match else 'no'} match\n"
            f"     {result.text.strip()[:300]}"
        )
    gaps = [r.id for r in chosen if r.gap]
    outbound.echo(
        f"{len(results) - len(failed)} passed, {len(failed)} failed"
        + (f" ({len(gaps)} rules with a known gap: {', '.join(gaps)})" if gaps else "")
    )
    sys.exit(EXIT_CHECK_FAILED if failed else 0)


def _register_fleet() -> None:
    from .fleet.commands import fleet

    cli.add_command(fleet)


_register_fleet()
_help_written(cli)
